"""hosts.workspace_routes: the HTTP face of the host's workspaces (hosts.workspaces), behind the host's gate.

`POST /api/v1/workspaces` {"id", "repo", "ref", "branch"} (or {"id", "mounted": true, "path"}) → 201 (200 when it
exists at that ref) {"id", "path", "base", "branch"}; `GET /api/v1/workspaces` → {"workspaces": [... "changed"]};
`GET /api/v1/workspaces/<id>` → one of them; `GET .../<id>/diff` → {"files", "patch"}; `POST .../<id>/bundle`
{"message", "author"?} → 200 application/x-git-bundle with `X-Commit`; `DELETE .../<id>` (`?force=1`) → 204.
Refusals are `{"error": "<one line>"}`: 400 bad input (an id that is no plain name included), 404 unknown, 405
another method, 409 a conflict (another ref, unbundled changes, a mounted workspace's diff), 413 a body over the
limit, 422 a ref the repository lacks, 503 no usable git, 500 a git command that failed. Rules: parsing and
answers only; the work is hosts.workspaces'.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

from mcp_agent_kit.gitwork import GitMissing, GitWorkError
from mcp_agent_kit.hosts.replies import send, send_error, send_json
from mcp_agent_kit.hosts.workspaces import HostWorkspaces, WorkspaceRefused
from mcp_agent_kit.httpd import Channel, Request

__all__ = ["PREFIX", "handle", "serves"]

PREFIX = "/api/v1/workspaces"
Handler = Callable[[HostWorkspaces, Request, Channel, str], bool]


def serves(path: str) -> bool:
    """Whether `path` is one of the workspace routes."""
    return path == PREFIX or path.startswith(PREFIX + "/")


def _body(request: Request) -> Any:
    if not request.complete:
        raise WorkspaceRefused("the body is over the host's limit or not length-framed: "
                               "send JSON with a Content-Length")
    try:
        return json.loads(request.body or b"{}")
    except ValueError as exc:
        raise WorkspaceRefused(f"the body is not JSON: {exc}") from None


def _list(spaces: HostWorkspaces, request: Request, channel: Channel, _: str) -> bool:
    return send_json(channel, request, 200, {"workspaces": spaces.listing()})


def _create(spaces: HostWorkspaces, request: Request, channel: Channel, _: str) -> bool:
    status, record = spaces.create(_body(request))
    return send_json(channel, request, status, record)


def _show(spaces: HostWorkspaces, request: Request, channel: Channel, workspace_id: str) -> bool:
    return send_json(channel, request, 200, spaces.get(workspace_id).reply())


def _diff(spaces: HostWorkspaces, request: Request, channel: Channel, workspace_id: str) -> bool:
    return send_json(channel, request, 200, spaces.diff(workspace_id))


def _bundle(spaces: HostWorkspaces, request: Request, channel: Channel, workspace_id: str) -> bool:
    body = _body(request)
    if not isinstance(body, dict):
        raise WorkspaceRefused('send {"message": "<commit message>", "author": "Name <email>"}')
    data, commit = spaces.bundle(workspace_id, body.get("message"), body.get("author"))
    return send(channel, request, 200, data, "application/x-git-bundle", {"X-Commit": commit})


def _delete(spaces: HostWorkspaces, request: Request, channel: Channel, workspace_id: str) -> bool:
    force = parse_qs(urlsplit(request.target).query).get("force", [""])[-1] in ("1", "true", "yes")
    spaces.delete(workspace_id, force=force)
    return send(channel, request, 204)


# (the path's shape, the method) -> its handler; the shape is "" (the collection), "id", "id/diff", "id/bundle"
ROUTES: dict[tuple[str, str], Handler] = {
    ("", "GET"): _list, ("", "POST"): _create, ("id", "GET"): _show, ("id", "DELETE"): _delete,
    ("id/diff", "GET"): _diff, ("id/bundle", "POST"): _bundle,
}


def handle(spaces: HostWorkspaces, request: Request, channel: Channel) -> bool:
    """Answer one request to a workspace route (the gate has passed)."""
    rest = urlsplit(request.target).path[len(PREFIX):].strip("/")
    workspace_id, _, tail = rest.partition("/")
    shape = "" if not rest else "id" if not tail else f"id/{tail}"
    allowed = [method for (known, method) in ROUTES if known == shape]
    if not allowed:
        return send_error(channel, request, 404, f"nothing is served at {request.target[:100]}: the workspace routes "
                          "are /api/v1/workspaces[/<id>[/diff|/bundle]]")
    route = ROUTES.get((shape, request.method))
    if route is None:
        return send_error(channel, request, 405, f"{PREFIX}{'/<id>' if workspace_id else ''}"
                          f"{'/' + tail if tail else ''} takes {', '.join(allowed)}", {"Allow": ", ".join(allowed)})
    try:
        return route(spaces, request, channel, workspace_id)
    except WorkspaceRefused as exc:
        return send_error(channel, request, exc.status, str(exc))
    except GitMissing as exc:
        return send_error(channel, request, 503, str(exc))
    except (GitWorkError, OSError) as exc:
        return send_error(channel, request, 500, f"the workspace operation failed: {exc}")
