"""a2a: an A2A v1.0 task server (JSON-RPC and HTTP+JSON over SSE-capable HTTP) for a registry's tools.

Layers inside: protocol (errors, enums, timestamps) → lifecycle (transition table) → messages
(ProtoJSON input checks) → job (Agent, Job) → store (the one task repository, on any store.Store)
/ task_file (`--store PATH`, an older file migrated) → replication (event logs, leases, idempotency
across replicas; OneProcess when none share the tasks) → engine (tasks, jobs, fan-out) → toolagent
(tools as skills) → card → jsonrpc / rest (sans-IO bindings) → http (transport) → cli.
Rules: imports core/, store/ and wire/ only; never transports/ or client/.
Beside the server: client (an A2A v1.0 JSON-RPC client, SSE read by wire/sse.py; the gateway's A2A agents use it).
"""

from __future__ import annotations

from mcp_agent_kit.a2a.engine import Agent, Job, TaskEngine
from mcp_agent_kit.a2a.protocol import A2AError

__all__ = ["A2AError", "Agent", "Job", "TaskEngine"]
