"""gateway.agent_store: agent sessions, turns and checkpoints — one repository over a `store.Store`.

A session belongs to one principal and one agent; its turns are numbered in order (`seq`), each with
its MCP status, the agent's state and text, and (while paused) the pending question; a checkpoint
pins a session at one finished turn. The store is the one `--store URL` names (memory, sqlite,
PostgreSQL; `gateway --sessions FILE` is `sqlite:///FILE`), as records every replica sees: kind
`agent_sessions` (owner = principal, group = agent), `agent_turns` (group = session id, order = the
zero-padded seq, state = the MCP status), `agent_checkpoints` (group = session id); a turn's stream
is the event log `agent_turns:<turn id>` (`Store.append`: gap-free sequence numbers, read from any
number by any replica). Creating calls are idempotent per principal through store.claims
(`agents:session:<principal>:<message_id>`, `agents:checkpoint:<principal>:<request_id>`), so a
retry on another replica finds the first one's. A session's `seq` moves by compare-and-set. Task ids
are sealed with the replicas' shared secret, or, when none is given, with one the store keeps
(kind `agent_meta`), so ids survive a restart. A working turn is leased to the replica running it
(store.leases); one whose lease lapsed (its replica died) is failed with LAPSED by whichever
replica notices first; a `sole` user of its store (the one-process file) fails the turns a previous
run left working at once, with RESTARTED (a paused turn keeps its question: the agent still holds
it). A sqlite file of the older one-process schema is migrated on open (gateway.agent_store_v0).
Listing positions (`pos`) are opaque strings, oldest first. Rules: plain rows in and out; every
lookup a caller reaches is scoped to the principal; at most `max_sessions` sessions per principal
and `max_turns` turns per session (StoreFull beyond); no protocol knowledge.
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time
import uuid
from collections.abc import Callable, Collection
from typing import Any, TypeVar

from mcp_agent_kit.core.task_table import now
from mcp_agent_kit.gateway.agent_records import (
    CHECKPOINTS,
    META,
    RESTARTED,
    SESSIONS,
    TURNS,
    checkpoint_claim,
    events_of,
    order_at,
    session_claim,
)
from mcp_agent_kit.store import open_store
from mcp_agent_kit.store.base import Page, Record, Store, StoreError
from mcp_agent_kit.store.claims import Claims
from mcp_agent_kit.store.leases import LAPSED, LeaseKeeper

__all__ = ["LAPSED", "RESTARTED", "AgentSessions", "StoreFull", "open_sessions", "sessions_url"]
log = logging.getLogger("mcp_agent_kit.gateway")
MAX_SESSIONS_PER_PRINCIPAL = 10_000
MAX_TURNS_PER_SESSION = 10_000
DEFAULT_LEASE_S = 30.0
_ALL = 1_000_000  # a query limit that means "every one" (sessions and turns are capped far below)
CAS_TRIES = 50
WAIT_S = 5.0  # how long a retry waits for the record its twin on another replica is still writing
EMPTY = Page([], 0)
T = TypeVar("T")


class StoreFull(Exception):
    """A per-principal or per-session limit is reached (the caller sees it as a tool error)."""


def _owner(principal: str | None) -> str:
    return principal or ""


def _order() -> str:
    return order_at(time.time_ns())


def _cursor(after: str) -> tuple[str, str] | None:
    order, _, key = (after or "").partition(":")
    return (order, key) if order.isdigit() else None


def sessions_url(path: str) -> str:
    """The store URL of a `--sessions FILE` (relative or absolute): sqlite:///FILE."""
    return f"sqlite:///{path}"


def open_sessions(url: str | None = None, *, secret: bytes | None = None, replica: str | None = None,
                  lease_s: float = DEFAULT_LEASE_S, sole: bool = False) -> AgentSessions:
    """The sessions in the store `url` names (None: memory), which they own (closed with them);
    StoreError when it cannot be opened."""
    return AgentSessions(open_store(url), secret, replica or f"gateway-{uuid.uuid4().hex[:12]}", lease_s, sole=sole)


class AgentSessions:
    """Sessions, turns and checkpoints on `store`; `replica` holds the leases of the turns it runs."""

    def __init__(self, store: Store, secret: bytes | None, replica: str, lease_s: float = DEFAULT_LEASE_S, *,
                 max_sessions: int = MAX_SESSIONS_PER_PRINCIPAL, max_turns: int = MAX_TURNS_PER_SESSION,
                 own_store: bool = True, sole: bool = False) -> None:
        """secret: the one sealing task ids (None: the store's own); sole: no other process uses the store."""
        self.store, self.replica, self.lease_s = store, replica, lease_s
        self.max_sessions, self.max_turns, self._own_store = max_sessions, max_turns, own_store
        self.claims = Claims(store)
        self._working: set[str] = set()  # turns this replica runs
        self._lock = threading.Lock()  # around _working
        self._closed = threading.Event()
        try:
            if store.url.startswith("sqlite:"):
                from mcp_agent_kit.gateway.agent_store_v0 import migrate

                migrate(store)
            self.secret = secret if secret is not None else self._kept_secret()
            if sole:
                self._fail_working(RESTARTED)
        except BaseException:
            if own_store:
                store.close()
            raise
        self.leases = LeaseKeeper(store, TURNS, replica, lease_s, states=("working",), held=self._held,
                                  on_lapsed=self._fail_lapsed, name="gateway-turn-leases").start()

    def close(self) -> None:
        self._closed.set()
        self.leases.close()
        if self._own_store:
            self.store.close()

    # ---- helpers -----------------------------------------------------------------------------------
    def _kept_secret(self) -> bytes:
        """The secret the store keeps for sealing task ids, made once (whichever replica is first)."""
        self.store.insert(Record(META, "secret", {"secret": secrets.token_hex(32)}))
        found = self.store.get(META, "secret")
        if found is None:
            raise StoreError(f"{self.store.url}: the sessions' secret vanished")
        return bytes.fromhex(found.body["secret"])

    def _open(self, default: T, call: Callable[[], T]) -> T:
        """call(), or `default` once the sessions are closed: a turn still running then finds nothing
        and its writes are dropped (it reads as failed, RESTARTED or LAPSED, on the next open)."""
        if self._closed.is_set():
            return default
        try:
            return call()
        except StoreError:
            if self._closed.is_set():
                return default
            raise

    def _row(self, kind: str, key: Any, principal: str | None = None) -> dict[str, Any] | None:
        if not isinstance(key, str):
            return None
        found = self._open(None, lambda: self.store.get(kind, key))
        if found is None or (principal is not None and found.owner != principal):
            return None
        return dict(found.body)

    def _made(self, kind: str, claim: str) -> dict[str, Any] | None:
        """The row an idempotency claim names, waiting (bounded) while its replica still writes it
        (None: not claimed, or it never appeared)."""
        return self.claims.awaited(claim, lambda body: self._row(kind, body.get("id")), WAIT_S)

    def _claim(self, kind: str, claim: str, key: str | None, new_id: str, owner: str, what: str
               ) -> dict[str, Any] | None:
        """Claim the idempotency key for `new_id`; None when claimed (or no key), else the row of the
        concurrent call (on any replica) that won the claim."""
        if key is None or self.claims.claim(claim, owner, {"id": new_id}):
            return None
        earlier = self._made(kind, claim)
        if earlier is None:
            raise StoreError(f"the {what} made for {key!r} on another replica never appeared")
        return earlier

    def _listed(self, kind: str, group: str, owner: str | None, after: str, limit: int) -> list[dict[str, Any]]:
        page = self._open(EMPTY, lambda: self.store.query(kind, owner=owner, group=group if group else None,
                                                          before=_cursor(after), limit=limit))
        return [{"pos": f"{r.order}:{r.key}", **r.body} for r in page.records]

    # ---- sessions ----------------------------------------------------------------------------------
    def create_session(self, principal: str | None, agent: str, make_id: Callable[[], str], create_key: str | None,
                       refs: list[str] | None = None) -> tuple[dict[str, Any], bool]:
        owner = _owner(principal)
        claim = session_claim(owner, str(create_key))
        earlier = None if create_key is None else self._made(SESSIONS, claim)
        if earlier is not None:
            return earlier, False
        counted = self.store.count(SESSIONS, owner=owner)
        if counted >= self.max_sessions:
            raise StoreFull(f"you have {counted} sessions, the most this gateway keeps per caller")
        session_id = make_id()
        earlier = self._claim(SESSIONS, claim, create_key, session_id, owner, "session")
        if earlier is not None:
            return earlier, False
        row: dict[str, Any] = {"id": session_id, "principal": owner, "agent": agent, "created": now(),
                               "create_key": create_key, "seq": 0, "refs": json.dumps(refs) if refs else None}
        self.store.insert(Record(SESSIONS, session_id, row, owner=owner, group=agent, order=_order()))
        return row, True

    def session(self, session_id: Any, principal: str | None) -> dict[str, Any] | None:
        return self._row(SESSIONS, session_id, _owner(principal))

    def session_any(self, session_id: str) -> dict[str, Any] | None:
        return self._row(SESSIONS, session_id)

    def head(self, session_id: str) -> dict[str, Any] | None:
        page = self._open(EMPTY, lambda: self.store.query(TURNS, group=session_id, limit=1))
        return dict(page.records[0].body) if page.records else None

    def sessions(self, principal: str | None, after: str, limit: int) -> list[dict[str, Any]]:
        return self._listed(SESSIONS, "", _owner(principal), after, limit)

    def take_refs(self, session_id: str) -> list[str]:
        for _ in range(CAS_TRIES):
            found = self.store.get(SESSIONS, session_id)
            if found is None or not found.body.get("refs"):
                return []
            if self.store.update(found._replace(body={**found.body, "refs": None}), expect_version=found.version):
                return list(json.loads(found.body["refs"]))  # given once, on whichever replica asks first
        raise StoreError(f"session {session_id} keeps changing on other replicas")

    # ---- turns ---------------------------------------------------------------------------------------
    def add_turn(self, session_id: str, principal: str | None, message_id: str) -> dict[str, Any]:
        for _ in range(CAS_TRIES):
            found = self.store.get(SESSIONS, session_id)
            if found is None:
                raise StoreError(f"session {session_id} is gone")
            seq = int(found.body["seq"]) + 1
            if seq > self.max_turns:
                raise StoreFull(f"session {session_id} has {self.max_turns} turns, the most it may have; "
                                "fork it from a checkpoint or start a new one")
            if self.store.update(found._replace(body={**found.body, "seq": seq}), expect_version=found.version):
                break
        else:
            raise StoreError(f"session {session_id} keeps changing on other replicas")
        stamp = now()
        row: dict[str, Any] = {
            "id": str(uuid.uuid4()), "session_id": session_id, "principal": _owner(principal), "seq": seq,
            "message_id": message_id, "agent_task_id": "", "status": "working", "state": "TASK_STATE_WORKING",
            "text": "", "message": "", "question": None, "created": stamp, "updated": stamp}
        with self._lock:
            self._working.add(row["id"])
        self.store.insert(self._turn_record(row))
        return row

    def _turn_record(self, row: dict[str, Any]) -> Record:
        working = row["status"] == "working" and row["id"] in self._working
        return Record(TURNS, row["id"], row, owner=row["principal"], group=row["session_id"],
                      order=f"{int(row['seq']):010d}", state=row["status"],
                      holder=self.replica if working else None,
                      lease_until=time.time() + self.lease_s if working else None)

    def turn(self, turn_id: str, principal: str | None) -> dict[str, Any] | None:
        return self._row(TURNS, turn_id, _owner(principal))

    def turn_by_message(self, session_id: str, message_id: str) -> dict[str, Any] | None:
        return next((t for t in self.turns(session_id) if t["message_id"] == message_id), None)

    def turns(self, session_id: str) -> list[dict[str, Any]]:
        page = self._open(EMPTY, lambda: self.store.query(TURNS, group=session_id, limit=_ALL))
        return [dict(r.body) for r in reversed(page.records)]

    def update_turn(self, turn_id: str, **fields: Any) -> None:
        self._open(None, lambda: self._update_turn(turn_id, fields))

    def _update_turn(self, turn_id: str, fields: dict[str, Any]) -> None:
        if "question" in fields and fields["question"] is not None:
            fields["question"] = json.dumps(fields["question"])
        for _ in range(CAS_TRIES):
            found = self.store.get(TURNS, turn_id)
            if found is None:
                return
            row = {**found.body, **fields, "updated": now()}
            if row["status"] != "working":
                with self._lock:
                    self._working.discard(turn_id)
            if self.store.update(self._turn_record(row), expect_version=found.version):
                return
        raise StoreError(f"turn {turn_id} keeps changing on other replicas")

    def append_event(self, turn_id: str, event: dict[str, Any]) -> int:
        """Add one event to the turn's log; its sequence number (0: the sessions are closed, nothing kept)."""
        return self._open(0, lambda: self.store.append(events_of(turn_id), event))

    def turn_events(self, turn_id: str, after: int = 0, limit: int = 1000) -> list[tuple[int, dict[str, Any]]]:
        return self._open([], lambda: self.store.events(events_of(turn_id), after, limit))

    # ---- checkpoints ---------------------------------------------------------------------------------
    def add_checkpoint(self, session_id: str, principal: str | None, head: dict[str, Any], refs: list[str],
                       request_id: str | None, make_snapshot: Callable[[], str | None] | None = None
                       ) -> tuple[dict[str, Any], bool]:
        owner = _owner(principal)
        claim = checkpoint_claim(owner, str(request_id))
        earlier = None if request_id is None else self._made(CHECKPOINTS, claim)
        if earlier is not None:
            return earlier, False
        snapshot = make_snapshot() if make_snapshot is not None else None
        checkpoint_id = str(uuid.uuid4())
        earlier = self._claim(CHECKPOINTS, claim, request_id, checkpoint_id, owner, "checkpoint")
        if earlier is not None:
            return earlier, False
        row: dict[str, Any] = {
            "id": checkpoint_id, "session_id": session_id, "principal": owner, "head_task_id": head["agent_task_id"],
            "history_sequence": head["seq"], "refs": json.dumps(refs), "created": now(), "request_id": request_id,
            "snapshot": snapshot}
        self.store.insert(Record(CHECKPOINTS, checkpoint_id, row, owner=owner, group=session_id, order=_order()))
        return row, True

    def checkpoint(self, checkpoint_id: Any, principal: str | None) -> dict[str, Any] | None:
        return self._row(CHECKPOINTS, checkpoint_id, _owner(principal))

    def checkpoints(self, session_id: str, principal: str | None, after: str, limit: int) -> list[dict[str, Any]]:
        return self._listed(CHECKPOINTS, session_id, _owner(principal), after, limit)

    # ---- retention -----------------------------------------------------------------------------------
    def sweep(self, cutoff: str, keep: Collection[str] = ()) -> list[str]:
        """Delete the sessions last used (created, a turn updated, a checkpoint taken) before `cutoff` (a
        timestamp as `now()` writes them), their turns, turn events, checkpoints and idempotency keys,
        except those in `keep` and any with a working turn; their ids."""
        return self._open([], lambda: self._sweep(cutoff, keep))

    def _sweep(self, cutoff: str, keep: Collection[str]) -> list[str]:
        gone = []
        for session in self.store.query(SESSIONS, limit=_ALL).records:
            if session.key in keep:
                continue
            turns = self.store.query(TURNS, group=session.key, limit=_ALL).records
            checkpoints = self.store.query(CHECKPOINTS, group=session.key, limit=_ALL).records
            used = max([str(session.body["created"]), *(str(t.body["updated"]) for t in turns),
                        *(str(c.body["created"]) for c in checkpoints)])
            if used >= cutoff or any(t.body["status"] == "working" for t in turns):
                continue
            for turn in turns:
                self.store.drop_events(events_of(turn.key))
                self.store.delete(TURNS, turn.key)
            for checkpoint in checkpoints:
                self.store.delete(CHECKPOINTS, checkpoint.key)
                if checkpoint.body.get("request_id") is not None:
                    self.claims.release(checkpoint_claim(session.owner, checkpoint.body["request_id"]))
            if session.body.get("create_key") is not None:
                self.claims.release(session_claim(session.owner, session.body["create_key"]))
            self.store.delete(SESSIONS, session.key)
            gone.append(session.key)
        return gone

    # ---- leases --------------------------------------------------------------------------------------
    def _held(self) -> list[str]:
        with self._lock:
            return list(self._working)

    def _fail_lapsed(self, record: Record, reason: str) -> None:
        """A turn whose replica died (the lease keeper found it): failed once, the first replica's write wins."""
        self._end(record, reason)

    def _fail_working(self, reason: str) -> None:
        """Fail every turn left working (a sole user's previous run died with them)."""
        for record in self.store.query(TURNS, states=["working"], limit=_ALL).records:
            self._end(record, reason)

    def _end(self, record: Record, reason: str) -> None:
        failed = {**record.body, "status": "failed", "state": "TASK_STATE_FAILED", "text": reason, "message": reason,
                  "question": None, "updated": now()}
        self.store.update(record._replace(body=failed, state="failed", holder=None, lease_until=None),
                          expect_version=record.version)
