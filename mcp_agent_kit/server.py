"""server: the public Server — a registry with a dispatcher, a lifespan and ways to run it.

This facade sits above the core and the transports: `Server` registers tools, resources and
prompts (core.registry) and serves them with `run()` on stdio or Streamable HTTP. Its lifespan
(a context manager function taking the server) is entered once before serving starts and left
when serving stops; what it yields is `server.lifespan_value` (`ctx.lifespan` in handlers).
A Server composes its extensions (default_extensions) into its dispatcher when it is built, so
`handle()`, stdio and HTTP serve the same protocol. `skills(path)` publishes Agent Skills over
the Skills extension (SEP-2640) once the kit's validator accepts them. Rules: no protocol logic here; transports are
imported only when a server is run; the extensions are cheap to build and load their machinery (task tables,
worker pool, skill trees) when a server first uses it.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from mcp_agent_kit.core.dispatcher import Connection, Dispatcher, Outbox
from mcp_agent_kit.core.extension import Extension
from mcp_agent_kit.core.legacy_tasks import LegacyTasksExtension
from mcp_agent_kit.core.listen import ListenExtension
from mcp_agent_kit.core.registry import Registry
from mcp_agent_kit.core.skills_ext import SkillsExtension
from mcp_agent_kit.core.tasks import TasksExtension, TaskSource

if TYPE_CHECKING:
    from mcp_agent_kit.core.task_mirror import Keeper
    from mcp_agent_kit.core.task_table import TaskLimits
    from mcp_agent_kit.store.base import Store
    from mcp_agent_kit.testing import TestClient

Lifespan = Callable[[Any], Any]
DEFAULT_LEASE_S = 30.0


def default_extensions(
    task_limits: TaskLimits | None = None, *, directory_read: bool = True,
    task_sources: Iterable[TaskSource] = (), skills: SkillsExtension | None = None,
) -> list[Extension]:
    """The extensions every Server offers, in every transport and in-process: subscriptions/listen,
    the 2026-07-28 tasks extension (which pushes task changes to listen streams; `task_sources` serve
    their own tasks beside its table), 2025-11-25's tasks and the Skills extension (`skills`, or a
    new one; declared once a skill is served; `directory_read` offers resources/directory/read).
    Both eras' tasks share one bounded worker pool of `task_limits.workers` threads
    (core.task_table.DEFAULT_LIMITS when None), built when the first task runs."""
    listen = ListenExtension()
    tasks = TasksExtension(listen, limits=task_limits, sources=task_sources)
    return [listen, tasks, LegacyTasksExtension(limits=task_limits, pool=tasks.lazy_pool),
            skills if skills is not None else SkillsExtension(directory_read=directory_read)]


def skill_directories(path: Path) -> list[Path]:
    """`path` itself when it holds a SKILL.md, else its subdirectories that do (sorted)."""
    from mcp_agent_kit.core.skill_tree import SkillRejected

    if (path / "SKILL.md").is_file():
        return [path]
    if not path.is_dir():
        raise SkillRejected(str(path), ["not a directory"])
    found = sorted(child for child in path.iterdir() if child.is_dir() and (child / "SKILL.md").is_file())
    if not found:
        raise SkillRejected(str(path), ["no SKILL.md in it or in its subdirectories"])
    return found


def _open(fn: Lifespan, server: Server) -> tuple[Any, Callable[..., Any]]:
    """Enter fn(server): (the yielded value, how to exit). fn is a (async) context manager
    function, or a bare (async) generator function yielding once."""
    import contextlib
    import inspect

    if inspect.isasyncgenfunction(fn):
        fn = contextlib.asynccontextmanager(fn)
    elif inspect.isgeneratorfunction(fn):
        fn = contextlib.contextmanager(fn)
    manager = fn(server)
    if hasattr(manager, "__enter__"):
        return manager.__enter__(), manager.__exit__
    if hasattr(manager, "__aenter__"):  # on the loop async handlers run on, so they can share it
        from mcp_agent_kit.core.invoke import run_coroutine

        return run_coroutine(manager.__aenter__()), lambda *exc: run_coroutine(manager.__aexit__(*exc))
    raise TypeError(f"lifespan {fn!r} must return a context manager (use a generator function yielding once)")


class Running:
    """`with server.running() as value:` — the lifespan entered for the block (nesting enters it once)."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self._open = False

    def __enter__(self) -> Any:
        server = self.server
        with server._life_lock:
            if server._depth == 0 and server._lifespan_fn is not None:
                server.lifespan_value, server._life_exit = _open(server._lifespan_fn, server)
            server._depth += 1
            self._open = True
        return server.lifespan_value

    def __exit__(self, *exc: Any) -> None:
        self.close(*exc)

    def close(self, *exc: Any) -> None:
        """Leave once (also called by the stdio transport before it exits the process on SIGTERM)."""
        server = self.server
        with server._life_lock:
            if not self._open:
                return
            self._open = False
            server._depth -= 1
            leave = server._life_exit if server._depth == 0 else None
            if leave is not None:
                server._life_exit = None
        if leave is not None:
            try:
                leave(*(exc or (None, None, None)))
            finally:
                server.lifespan_value = None


class Server(Registry):
    """An MCP server: register with `@server.tool`, `@server.resource`, `@server.prompt`, then `run()`."""

    def __init__(self, name: str, version: str = "0.1.0", *, lifespan: Lifespan | None = None,
                 task_limits: TaskLimits | None = None, skills: Iterable[str | os.PathLike[str]] = (),
                 directory_read: bool = True, store: Store | None = None, lease_s: float = DEFAULT_LEASE_S,
                 task_sources: Iterable[TaskSource] = (), **options: Any) -> None:
        """task_limits: how many tasks are kept and run, per principal and overall (docs/limits.md);
        skills: skill directories (or directories of them) to publish, as with `skills()`;
        directory_read: offer resources/directory/read on the skills;
        task_sources: core.tasks.TaskSource objects that serve tasks of their own (the gateway's agents);
        store: share tasks and legacy sessions with the other replicas using it (`use_store`);
        secret (bytes, every replica the same): the HMAC key of requestState."""
        super().__init__(name, version, **options)
        self._secret_given = options.get("secret") is not None
        self._lifespan_fn = lifespan
        self.lifespan_value: Any = None
        self._life_exit: Callable[..., Any] | None = None
        self._life_lock = threading.Lock()
        self._depth = 0
        self.skills_extension = SkillsExtension(directory_read=directory_read)  # what skills() publishes on
        self.dispatcher = Dispatcher(self, default_extensions(task_limits, task_sources=task_sources,
                                                              skills=self.skills_extension))
        self.store: Store | None = None
        self.keeper: Keeper | None = None
        if store is not None:
            self.use_store(store, lease_s=lease_s)
        for path in skills:
            self.skills(path)

    # ---- replicas ------------------------------------------------------------------------------
    def use_store(self, store: Store, *, secret: bytes | None = None, lease_s: float = DEFAULT_LEASE_S,
                  replica: str | None = None) -> None:
        """Keep MCP tasks (both eras) and legacy sessions in `store`, so any replica using the same
        store answers for them; `lease_s`: the lease this replica holds on the tasks it runs (a
        task whose lease lapses is failed by whichever replica notices). A shared store needs the
        same `secret` on every replica (given here or to the constructor), else ValueError."""
        if secret is not None:
            self.secret = secret
        elif store.shared and not self._secret_given:
            raise ValueError("a shared store needs the same secret on every replica: pass secret=")
        if self.keeper is not None:
            raise ValueError("this server already uses a store")
        import secrets
        import socket

        from mcp_agent_kit.core.task_mirror import Keeper

        self.keeper = Keeper(store, replica or f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}", lease_s)
        self.store = self.dispatcher.store = store
        for extension in self.dispatcher.extensions:
            share = getattr(extension, "share", None)
            if share is not None:
                share(self.keeper)

    # ---- skills (SEP-2640) -------------------------------------------------------------------------
    def skills(self, path: str | os.PathLike[str], *, prefix: str | None = None) -> list[str]:
        """Publish a skill directory, or every skill directory in `path`, over the Skills
        extension; returns the SKILL.md URIs (`skill://[prefix/]name/SKILL.md`). A skill that
        `skill validate` rejects, or one over 512 files or 16 MiB, raises SkillRejected naming
        every finding; nothing of it is served."""
        from mcp_agent_kit.core.skill_tree import SkillRejected
        from mcp_agent_kit.packaging.findings import errors
        from mcp_agent_kit.packaging.skill_validate import validate_skill

        extension = self.skills_extension
        if prefix is not None and (not prefix or prefix.startswith("/") or prefix.endswith("/")):
            raise ValueError(f"prefix {prefix!r}: give path segments such as 'acme/billing', no leading or trailing /")
        directories = skill_directories(Path(path))
        for directory in directories:
            report = validate_skill(directory)
            if not report.valid:
                raise SkillRejected(str(directory), [str(finding) for finding in errors(report.findings)])
        uris = []
        for directory in directories:
            name = Path(os.path.abspath(directory)).name
            uris.append(extension.add(directory, f"{prefix}/{name}" if prefix else name).uri)
        return uris

    # ---- lifespan ---------------------------------------------------------------------------
    def lifespan(self, fn: Lifespan) -> Lifespan:
        """Set the lifespan: `@server.lifespan` on a generator function taking the server, which
        sets up, yields what handlers reach as `ctx.lifespan`, and cleans up after the yield."""
        self._lifespan_fn = fn
        return fn

    def running(self) -> Running:
        """The lifespan as a context manager, for in-process use: `with server.running():`."""
        return Running(self)

    # ---- in-process -------------------------------------------------------------------------
    def handle(
        self, message: dict[str, Any], conn: Connection | None = None, out: Outbox | None = None
    ) -> dict[str, Any] | None:
        """Answer one parsed JSON-RPC message in-process (handy in tests)."""
        return self.dispatcher.handle(message, conn if conn is not None else Connection(), out)

    def test_client(self, era: str = "2026-07-28", **options: Any) -> TestClient:
        """An in-memory client speaking `era` (see mcp_agent_kit.testing.TestClient)."""
        from mcp_agent_kit.testing import TestClient

        return TestClient(self, era, **options)

    # ---- serving ------------------------------------------------------------------------------
    def serve_stdio(self, **options: Any) -> int:
        from mcp_agent_kit.transports.stdio import serve_stdio

        running = self.running()
        with running:  # on SIGTERM with stdin still open the transport calls os._exit: close first
            return serve_stdio(self.dispatcher, before_exit=running.close, **options)

    def serve_http(self, host: str = "127.0.0.1", port: int = 8000, **options: Any) -> int:
        """Serve Streamable HTTP until stopped. A non-loopback `host` needs token=, tokens= or
        oauth= (or insecure=True): ValueError otherwise, before the lifespan starts."""
        from mcp_agent_kit.addresses import refuse_exposed
        from mcp_agent_kit.transports import http

        refuse_exposed(host, options)
        with self.running():
            code: int = http.serve_http(self.dispatcher, host, port, **options)
        return code

    def run(
        self,
        argv: list[str] | None = None,
        *,
        transport: Literal["stdio", "http"] | None = None,
        host: str = "127.0.0.1",
        port: int = 8000,
        **options: Any,
    ) -> int:
        """Serve until stopped.

        `run()` / `run(argv)`: stdio, or Streamable HTTP with `--http HOST:PORT` (see `--help`);
        exits the process. `run(transport="stdio")` or `run(transport="http", host=..., port=...)`
        returns the exit code when serving stops (EOF, SIGTERM, Ctrl-C)."""
        if transport is None:
            args = sys.argv[1:] if argv is None else argv
            if not args:
                sys.exit(self.serve_stdio())  # the common case, without loading argparse
            from mcp_agent_kit.transports.cli import run_server

            sys.exit(run_server(self, args))
        if argv is not None:
            raise ValueError("give command-line argv or transport=, not both")
        runners: dict[str, Callable[[], int]] = {
            "stdio": lambda: self.serve_stdio(**options),
            "http": lambda: self.serve_http(host, port, **options),
        }
        runner = runners.get(transport)
        if runner is None:
            raise ValueError(f"unknown transport {transport!r}: use 'stdio' or 'http'")
        return runner()
