"""forgeries: the near misses of a secret value (a MAC, a tag, a token, a thumbprint) that a
constant-time comparison must refuse and a prefix test would let through.

`forgeries(genuine)` gives, by name: empty, one short, half, one longer, a block longer, and two of
the same length with one byte changed (the first, the last). `text_forgeries` does the same for an
ASCII string and adds one with a non-ASCII character. Each site's tests feed these through the real
parsing, so they also prove that no parsing step refuses (or lets through) a value before the
comparison sees it.
"""

from __future__ import annotations


def forgeries(genuine: bytes) -> dict[str, bytes]:
    """Byte-level near misses of `genuine` (at least two bytes long)."""
    assert len(genuine) >= 2, "a secret shorter than two bytes has no proper truncation"
    return {
        "empty": b"",
        "one short": genuine[:-1],
        "half": genuine[: len(genuine) // 2],
        "one longer": genuine + b"A",
        "a block longer": genuine + b"AAAA",
        "first changed": bytes([genuine[0] ^ 1]) + genuine[1:],
        "last changed": genuine[:-1] + bytes([genuine[-1] ^ 1]),
    }


def text_forgeries(genuine: str) -> dict[str, str]:
    """Near misses of an ASCII string, plus one ending in a non-ASCII character."""
    assert genuine.isascii()
    near = {name: value.decode("ascii") for name, value in forgeries(genuine.encode("ascii")).items()}
    near["non-ASCII"] = genuine[:-1] + "\u00e9"
    return near
