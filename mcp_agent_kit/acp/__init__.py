"""acp: the Agent Client Protocol v1 — a client that spawns and drives coding agents over stdio.

Rules: may import `wire`, `safefile`, `cli_common` and `logs` only; never `core`, `client`,
`gateway` or `a2a` (tests/test_layers.py checks it).
"""
