"""acp.client.permissions: who answers `session/request_permission`, and how an option is chosen.

A policy looks at a `PermissionRequest` (the tool call as the session knows it, merged with the
request's own `toolCall`, and the agent's options) and returns the option to select, or None for
the `cancelled` outcome: at once (`Policy.decide`), or later through a reply callback (`LaterPolicy`,
which holds no thread while the question is open). Options are always found by their `kind` (allow_once, allow_always,
reject_once, reject_always), never by position or id: agents name them freely (Qwen
`proceed_once`, Claude `allow-once`). Rules: no I/O except through an ask callback; imports only
`wire`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from mcp_agent_kit.wire import acp as wire


@dataclass(frozen=True)
class PermissionOption:
    option_id: str
    name: str
    kind: str


@dataclass(frozen=True)
class PermissionRequest:
    """One question of the agent: `tool_call` is the merged tool call, `raw` the request params."""

    session_id: str
    tool_call_id: str | None
    title: str | None
    tool_kind: str | None
    tool_call: dict[str, Any]
    options: tuple[PermissionOption, ...]
    raw: dict[str, Any]

    def option(self, *kinds: str) -> PermissionOption | None:
        """The first option whose kind is the first of `kinds` the agent offers (None when none is)."""
        for kind in kinds:
            for option in self.options:
                if option.kind == kind:
                    return option
        return None

    def allow(self) -> PermissionOption | None:
        return self.option(wire.ALLOW_ONCE, wire.ALLOW_ALWAYS)

    def reject(self) -> PermissionOption | None:
        return self.option(wire.REJECT_ONCE, wire.REJECT_ALWAYS)


class Policy(Protocol):
    """Answers permission questions. A policy with a true `inline` attribute promises that `decide` returns
    at once or waits only on its own bounded signal that a cancel of the turn wakes (Session.on_cancel): the
    client then asks it on the request's own thread; any other is asked on a helper thread it can abandon."""

    def decide(self, request: PermissionRequest) -> PermissionOption | None:
        """The option to select, or None to answer `cancelled`."""
        ...


Reply = Callable[[PermissionOption | None], None]
"""How a LaterPolicy answers: `reply(option)` (None: cancelled), once, from any thread."""


@runtime_checkable
class LaterPolicy(Protocol):
    """Answers permission questions without holding a thread: `decide_later` takes the question and returns at
    once, and the policy calls `reply(option)` once when it is settled. The policy bounds the wait itself and
    answers a question of a cancelled turn (Session.on_cancel) with None; the client asks it on the request's
    handler thread and writes the answer when `reply` is called, on the thread that calls it. That thread must
    hold no lock the session's event listeners take (the decision is delivered to the session on it)."""

    def decide_later(self, request: PermissionRequest, reply: Reply) -> None:
        """Take the question; call `reply(option)` once it is decided."""
        ...


AnyPolicy = Policy | LaterPolicy


class AllowAll:
    """Select the agent's allow_once option (allow_always when that is all it offers)."""

    inline = True

    def decide(self, request: PermissionRequest) -> PermissionOption | None:
        return request.allow()


class DenyAll:
    """Select the agent's reject_once option (reject_always, else answer cancelled)."""

    inline = True

    def decide(self, request: PermissionRequest) -> PermissionOption | None:
        return request.reject()


class AllowReads:
    """Allow read-only tool kinds (read, search, fetch, think); reject everything else."""

    inline = True

    def __init__(self, kinds: Sequence[str] = tuple(sorted(wire.READ_ONLY_TOOL_KINDS))) -> None:
        self.kinds = frozenset(kinds)

    def decide(self, request: PermissionRequest) -> PermissionOption | None:
        return request.allow() if request.tool_kind in self.kinds else request.reject()


class Ask:
    """Ask a callback (a terminal prompt, a UI); it returns the option chosen or None."""

    def __init__(self, ask: Callable[[PermissionRequest], PermissionOption | None]) -> None:
        self.ask = ask

    def decide(self, request: PermissionRequest) -> PermissionOption | None:
        return self.ask(request)


POLICIES: dict[str, Callable[[], Policy]] = {"all": AllowAll, "reads": AllowReads, "none": DenyAll}

# an `approve` setting (gateway agents, `a2a --acp`) -> whether a request is allowed without asking anyone:
# `all` allows every request, `reads` the read-only tool kinds, `ask` none (each is asked about)
SELF_APPROVES: dict[str, Callable[[PermissionRequest], bool]] = {
    "all": lambda request: True,
    "reads": lambda request: request.tool_kind in wire.READ_ONLY_TOOL_KINDS,
    "ask": lambda request: False,
}


def parse_options(raw: Any) -> tuple[PermissionOption, ...]:
    """The well-formed options of a request (malformed entries are left out)."""
    options = []
    for item in raw if isinstance(raw, list) else []:
        if isinstance(item, dict) and isinstance(item.get("optionId"), str) and isinstance(item.get("kind"), str):
            options.append(PermissionOption(item["optionId"], str(item.get("name", item["optionId"])), item["kind"]))
    return tuple(options)


def selected(option: PermissionOption | None) -> dict[str, Any]:
    """The `session/request_permission` result for a decision."""
    if option is None:
        return {"outcome": {"outcome": wire.OUTCOME_CANCELLED}}
    return {"outcome": {"outcome": wire.OUTCOME_SELECTED, "optionId": option.option_id}}
