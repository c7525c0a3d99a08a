"""gateway.agent_records: how agent sessions lie in a `store.Store` — kinds, keys, listing orders, channels.

Written by gateway.agent_store and by its migration of older session files (gateway.agent_store_v0),
so the two cannot drift. Rules: names and pure functions only; no store calls.
"""

from __future__ import annotations

SESSIONS, TURNS, CHECKPOINTS, META = "agent_sessions", "agent_turns", "agent_checkpoints", "agent_meta"
RESTARTED = "the gateway restarted while this turn was running; its outcome is unknown"
_TOP = 10**20


def order_at(ns: int) -> str:
    """The listing order of a record made at `ns` (epoch nanoseconds): the store lists greatest
    first, so an inverted clock lists oldest first."""
    return f"{_TOP - ns:020d}"


def events_of(turn_id: str) -> str:
    """The event-log channel of one turn's stream."""
    return f"{TURNS}:{turn_id}"


def session_claim(owner: str, key: str) -> str:
    """The idempotency claim of a session made under a `message_id`."""
    return f"agents:session:{owner}:{key}"


def checkpoint_claim(owner: str, key: str) -> str:
    """The idempotency claim of a checkpoint or fork made under a `request_id`."""
    return f"agents:checkpoint:{owner}:{key}"
