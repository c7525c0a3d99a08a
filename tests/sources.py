"""Parse Python sources for the structure tests (layers, names, import cycles), safe beside threads.

CPython 3.11's `ast.parse` keeps its recursion-depth bookkeeping per interpreter, not per thread: when a
thread left running by an earlier test in the same worker parses at the same moment (pytest's
assertion rewriting imports test modules through `ast.parse`), one of the two raises
`SystemError: AST constructor recursion depth mismatch` (CPython gh-106905). Parsing is pure, so the
tests parse again; a real syntax error still raises.
"""

from __future__ import annotations

import ast

TRIES = 5


def parse(source: str) -> ast.Module:
    """`ast.parse(source)`, parsed again when CPython's cross-thread recursion bookkeeping trips."""
    for _ in range(TRIES - 1):
        try:
            return ast.parse(source)
        except SystemError as exc:
            if "recursion depth mismatch" not in str(exc):
                raise
    return ast.parse(source)
