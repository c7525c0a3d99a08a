"""core.task_machinery: the task table and worker pool both task extensions build on first use.

`TaskMachinery` is the shared part of core.tasks (2026-07-28) and core.legacy_tasks (2025-11-25):
a lazily built table (each extension says how, in `_table`) and a worker pool that is built once
and may be shared between the two (a `Lazy` handed to both). Rules: imports neither extension;
the table and pool modules are imported only when first built (a server without tasks loads none).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_agent_kit.core.extension import Lazy

if TYPE_CHECKING:
    from mcp_agent_kit.core.task_table import TaskTable
    from mcp_agent_kit.core.worker_pool import WorkerPool


class TaskMachinery:
    """A task table and a worker pool, each built on first use."""

    _table: Lazy[TaskTable]
    lazy_pool: Lazy[WorkerPool]

    def _pool_from(self, pool: WorkerPool | Lazy[WorkerPool] | None) -> Lazy[WorkerPool]:
        """The given shared Lazy, the given pool, or one of our own built on first use."""
        if isinstance(pool, Lazy):
            return pool
        return Lazy((lambda: pool) if pool is not None else self._new_pool)

    def _new_pool(self) -> WorkerPool:
        from mcp_agent_kit.core.worker_pool import WorkerPool

        return WorkerPool(self.table.limits.workers)

    @property
    def table(self) -> TaskTable:
        """The tasks (core.task_table.TaskTable), built on first use."""
        return self._table.get()

    @property
    def pool(self) -> WorkerPool:
        """The worker pool the tasks run on, built on first use (shared by both eras' tasks in a Server)."""
        return self.lazy_pool.get()
