"""board: many coding agents on many tasks of one git repository, each task in its own git worktree.

So far: the task states and their one transition table (board.states), the task object and its checks
(board.task_fields), the tasks as one repository over the store (board.tasks), the scheduler's
decision (board.queue), and the workspaces (board.workspaces: a task's git worktree made, diffed,
accepted, merged, discarded, found again after a restart; board.git runs git), the config
(board.config), and the runtime behind the one facade surfaces call (board.board.Board): the scheduler
loop (board.scheduler) and each task's run, one ACP turn in its workspace (board.runner), whose session gets the
board's own tools for that task (board.task_scope, served by board.task_server). Every refusal is a
board.errors.BoardError. Rules: importing the package loads nothing; each module imports what it
needs when it is used.
"""
