"""gateway.agent_store: agent sessions, turns and checkpoints on a shared `store.Store` (`gateway --store URL`).

The same rows and methods as gateway.agent_sessions.SessionStore (the one-process sqlite file), as
records every replica sees: kind `agent_sessions` (owner = principal, group = agent), `agent_turns`
(group = session id, order = the zero-padded seq, state = the MCP status), `agent_checkpoints` (group =
session id); a turn's stream is the event log `agent_turns:<turn id>` (`Store.append`: gap-free sequence
numbers, read from any number by any replica); creating calls are idempotent through `idempotency`
records (`agents:session:<principal>:<message_id>`, `agents:checkpoint:<principal>:<request_id>`,
insert-if-absent, so a retry on another replica finds the first one's). A session's `seq` moves by
compare-and-set. The secret sealing task ids is the replicas' shared one, not a per-file one. A working
turn is leased to the replica running it and renewed by one thread; a turn whose lease lapsed (its
replica died) is marked failed by whichever replica notices first, instead of the sqlite store's "failed
at the next start" (other replicas' turns are running). Listing positions (`pos`) are opaque strings,
oldest first. Rules: plain rows in and out, as SessionStore; every lookup a caller reaches is scoped to
the principal; no protocol knowledge.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Collection
from typing import Any

from mcp_agent_kit.core.task_table import now
from mcp_agent_kit.gateway.agent_sessions import MAX_SESSIONS_PER_PRINCIPAL, MAX_TURNS_PER_SESSION, StoreFull
from mcp_agent_kit.store.base import Record, Store, StoreError

log = logging.getLogger("mcp_agent_kit.gateway")
SESSIONS, TURNS, CHECKPOINTS, IDEMPOTENCY = "agent_sessions", "agent_turns", "agent_checkpoints", "idempotency"
LAPSED = "the replica running this turn stopped (lease expired)"
_TOP = 10**20
_ALL = 1_000_000  # a query limit that means "every one" (sessions and turns are capped far below)
CAS_TRIES = 50
WAIT_S = 5.0  # how long a retry waits for the record its twin on another replica is still writing


def _owner(principal: str | None) -> str:
    return principal or ""


def _order() -> str:
    """Listing order: the store lists greatest first, so an inverted clock lists oldest first."""
    return f"{_TOP - time.time_ns():020d}"


def _events_of(turn_id: str) -> str:
    """The event-log channel of one turn's stream."""
    return f"{TURNS}:{turn_id}"


def _cursor(after: str) -> tuple[str, str] | None:
    order, _, key = (after or "").partition(":")
    return (order, key) if order.isdigit() else None


class SharedSessionStore:
    """SessionStore's interface over a shared Store; `replica` holds the leases of its working turns."""

    def __init__(self, store: Store, secret: bytes, replica: str, lease_s: float = 30.0, *,
                 max_sessions: int = MAX_SESSIONS_PER_PRINCIPAL, max_turns: int = MAX_TURNS_PER_SESSION,
                 own_store: bool = True) -> None:
        self.store, self.secret, self.replica, self.lease_s = store, secret, replica, lease_s
        self.max_sessions, self.max_turns, self._own_store = max_sessions, max_turns, own_store
        self._working: set[str] = set()  # turns this replica runs
        self._lock = threading.Lock()  # around _working
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._keep_leases, name="gateway-turn-leases", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._closed.set()
        self._thread.join(timeout=5.0)
        if self._own_store:
            self.store.close()

    # ---- helpers -----------------------------------------------------------------------------------
    def _row(self, kind: str, key: Any, principal: str | None = None) -> dict[str, Any] | None:
        if not isinstance(key, str):
            return None
        found = self.store.get(kind, key)
        if found is None or (principal is not None and found.owner != principal):
            return None
        return dict(found.body)

    def _awaited(self, kind: str, claim: str) -> dict[str, Any] | None:
        """The row an idempotency claim names, waiting (bounded) while its replica still writes it."""
        deadline = time.monotonic() + WAIT_S
        while True:
            named = self.store.get(IDEMPOTENCY, claim)
            row = self._row(kind, named.body.get("id")) if named is not None else None
            if row is not None or time.monotonic() > deadline:
                return row
            time.sleep(0.02)

    def _earlier(self, kind: str, claim: str, key: str | None) -> dict[str, Any] | None:
        """The row an earlier call with this idempotency key made (None: no key, or none made)."""
        if key is None or self.store.get(IDEMPOTENCY, claim) is None:
            return None
        return self._awaited(kind, claim)

    def _claim(self, kind: str, claim: str, key: str | None, new_id: str, owner: str, what: str
               ) -> dict[str, Any] | None:
        """Claim the idempotency key for `new_id`; None when claimed (or no key), else the row of the
        concurrent call (on any replica) that won the claim."""
        if key is None or self.store.insert(Record(IDEMPOTENCY, claim, {"id": new_id}, owner=owner)):
            return None
        earlier = self._awaited(kind, claim)
        if earlier is None:
            raise StoreError(f"the {what} made for {key!r} on another replica never appeared")
        return earlier

    def _listed(self, kind: str, group: str, owner: str | None, after: str, limit: int) -> list[dict[str, Any]]:
        page = self.store.query(kind, owner=owner, group=group if group else None, before=_cursor(after),
                                limit=limit)
        return [{"pos": f"{r.order}:{r.key}", **r.body} for r in page.records]

    # ---- sessions ----------------------------------------------------------------------------------
    def create_session(self, principal: str | None, agent: str, make_id: Callable[[], str], create_key: str | None,
                       refs: list[str] | None = None) -> tuple[dict[str, Any], bool]:
        owner = _owner(principal)
        claim = f"agents:session:{owner}:{create_key}"
        earlier = self._earlier(SESSIONS, claim, create_key)
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
        page = self.store.query(TURNS, group=session_id, limit=1)
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
        return [dict(r.body) for r in reversed(self.store.query(TURNS, group=session_id, limit=_ALL).records)]

    def update_turn(self, turn_id: str, **fields: Any) -> None:
        if self._closed.is_set():
            return
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
        """As SessionStore.append_event: one event on the turn's log (`Store.append`); its sequence number."""
        if self._closed.is_set():
            return 0
        return self.store.append(_events_of(turn_id), event)

    def turn_events(self, turn_id: str, after: int = 0, limit: int = 1000) -> list[tuple[int, dict[str, Any]]]:
        return self.store.events(_events_of(turn_id), after, limit)

    # ---- checkpoints ---------------------------------------------------------------------------------
    def add_checkpoint(self, session_id: str, principal: str | None, head: dict[str, Any], refs: list[str],
                       request_id: str | None, make_snapshot: Callable[[], str | None] | None = None
                       ) -> tuple[dict[str, Any], bool]:
        owner = _owner(principal)
        claim = f"agents:checkpoint:{owner}:{request_id}"
        earlier = self._earlier(CHECKPOINTS, claim, request_id)
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
        """As SessionStore.sweep: delete sessions last used before `cutoff` (their turns, checkpoints and
        idempotency keys), except those in `keep` and any with a working turn; their ids."""
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
                self.store.drop_events(_events_of(turn.key))
                self.store.delete(TURNS, turn.key)
            for checkpoint in checkpoints:
                self.store.delete(CHECKPOINTS, checkpoint.key)
                if checkpoint.body.get("request_id") is not None:
                    self.store.delete(IDEMPOTENCY, f"agents:checkpoint:{session.owner}:{checkpoint.body['request_id']}")
            if session.body.get("create_key") is not None:
                self.store.delete(IDEMPOTENCY, f"agents:session:{session.owner}:{session.body['create_key']}")
            self.store.delete(SESSIONS, session.key)
            gone.append(session.key)
        return gone

    # ---- leases --------------------------------------------------------------------------------------
    def _keep_leases(self) -> None:
        while not self._closed.wait(min(1.0, self.lease_s / 3)):
            try:
                with self._lock:
                    working = set(self._working)
                if working:
                    self.store.renew(TURNS, list(working), self.replica, self.lease_s)
                for record in self.store.lapsed(TURNS, ["working"], time.time()):
                    if record.key not in working:
                        failed = {**record.body, "status": "failed", "state": "TASK_STATE_FAILED", "text": LAPSED,
                                  "message": LAPSED, "question": None, "updated": now()}
                        self.store.update(record._replace(body=failed, state="failed", holder=None, lease_until=None),
                                          expect_version=record.version)  # once: the first replica's write wins
            except (StoreError, OSError) as exc:
                log.warning("gateway turn leases: %s (will retry)", exc)
