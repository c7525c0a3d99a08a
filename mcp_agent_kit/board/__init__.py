"""board: many coding agents on many tasks of one git repository, each task in its own git worktree.

So far the workspaces (board.workspaces: a task's git worktree made, diffed, accepted, merged,
discarded, found again after a restart; board.git runs git). Rules: importing the package loads
nothing; each module imports what it needs when it is used.
"""
