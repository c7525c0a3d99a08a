"""routes: several engine apps on one listening socket, picked by the request's path.

`Routes(default)` is itself an engine app (`App`): `add(app, paths=..., trees=...)` sends a request
whose path (the target without its query) is one of `paths`, or is one of the `trees` or lies under
it ("/a2a" takes "/a2a" and "/a2a/..."), to `app`; every other request goes to `default`. A lookup
is at most two dict reads (the exact path, then its first segment), whatever the number of routes,
so a server with one app (no Routes at all) and a server with several cost the same per request but
for those reads. `Server.mount` puts a Routes in front of a server's own app.
Rules: paths only (no Host or method routing); a tree is one segment ("/a2a", not "/a/b"); a path or
tree given twice is a ValueError, never a silent override. The server's Limits (connections, head and
body read limits, timeouts, workers, stream threads) hold for every app on it; each app keeps its own
gate (Host, Origin, tokens) and its own body limit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Generic, Protocol, TypeVar

__all__ = ["Routes"]


class Targeted(Protocol):
    """What a route is picked by: the request target (engine.Request has it)."""

    @property
    def target(self) -> str: ...


RequestT = TypeVar("RequestT", bound=Targeted)
ChannelT = TypeVar("ChannelT")


class Routes(Generic[RequestT, ChannelT]):
    """An engine app that hands each request to the app mounted on its path, else to `default`
    (engine.Server uses it as Routes[Request, Channel]; this module imports nothing of the engine)."""

    __slots__ = ("default", "exact", "trees")

    def __init__(self, default: Callable[[RequestT, ChannelT], bool]) -> None:
        self.default = default
        self.exact: dict[str, Callable[[RequestT, ChannelT], bool]] = {}
        self.trees: dict[str, Callable[[RequestT, ChannelT], bool]] = {}

    def add(self, app: Callable[[RequestT, ChannelT], bool], *, paths: Iterable[str] = (),
            trees: Iterable[str] = ()) -> None:
        """Serve `app` at these exact paths and under these one-segment trees."""
        paths, trees = list(paths), list(trees)
        for path in paths:
            if not path.startswith("/") or "?" in path:
                raise ValueError(f"a route's path starts with / and has no query: {path!r}")
            if path in self.exact:
                raise ValueError(f"the path {path} is routed already")
        for tree in trees:
            if not tree.startswith("/") or tree == "/" or "/" in tree[1:] or "?" in tree:
                raise ValueError(f"a tree is one path segment, such as /a2a: {tree!r}")
            if tree in self.trees:
                raise ValueError(f"the tree {tree} is routed already")
        self.exact.update(dict.fromkeys(paths, app))
        self.trees.update(dict.fromkeys(trees, app))

    def app_for(self, target: str) -> Callable[[RequestT, ChannelT], bool]:
        """The app a request target goes to."""
        path = target.partition("?")[0]
        app = self.exact.get(path)
        if app is not None:
            return app
        end = path.find("/", 1)
        return self.trees.get(path if end < 0 else path[:end], self.default)

    def __call__(self, request: RequestT, channel: ChannelT) -> bool:
        return self.app_for(request.target)(request, channel)
