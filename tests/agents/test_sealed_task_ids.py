"""Sealed task ids (gateway.agent_turns): `v1.` + body + `.` + an 18-byte HMAC bound to the
principal. Only the genuine MAC opens one: an empty, a truncated, an extended and a same-length
other MAC are refused by the constant-time comparison; other spellings of the genuine id (junk
characters, padding, other spare bits) are refused, and a forged body is never parsed."""

from __future__ import annotations

import base64

import pytest

from mcp_agent_kit.gateway.agent_turns import open_id, seal_id
from tests.forgeries import forgeries

SECRET = b"s" * 32


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _parts(turn: str = "turn-1", principal: str | None = "alice") -> tuple[str, str]:
    _, body, mac = seal_id(SECRET, turn, principal).split(".")
    return body, mac


@pytest.mark.parametrize("principal", ["alice", None])
def test_the_genuine_id_opens(principal: str | None) -> None:
    body, mac = _parts(principal=principal)
    assert open_id(SECRET, f"v1.{body}.{mac}", principal) == "turn-1"


@pytest.mark.parametrize("case", sorted(forgeries(b"0123456789")))
@pytest.mark.parametrize("principal", ["alice", None])
def test_a_near_miss_mac_is_refused(case: str, principal: str | None) -> None:
    body, mac = _parts(principal=principal)
    forged = _b64(forgeries(_unb64(mac))[case])
    assert open_id(SECRET, f"v1.{body}.{forged}", principal) is None


def test_another_principals_mac_and_a_changed_body_are_refused() -> None:
    body, mac = _parts()
    assert open_id(SECRET, f"v1.{body}.{mac}", "bob") is None
    assert open_id(SECRET, f"v1.{body}.{mac}", None) is None
    other_body, _ = _parts(turn="turn-2")
    assert open_id(SECRET, f"v1.{other_body}.{mac}", "alice") is None


@pytest.mark.parametrize("spelling", ["junk appended", "junk inside", "padded", "a char too many", "non-ASCII"])
@pytest.mark.parametrize("part", ["body", "mac"])
def test_other_spellings_of_the_genuine_id_are_refused(part: str, spelling: str) -> None:
    body, mac = _parts()
    text = body if part == "body" else mac
    altered = {
        "junk appended": text + "!",
        "junk inside": text[:5] + "!" + text[5:],
        "padded": text + "====",
        "a char too many": text + "A",
        "non-ASCII": text + "\u00e9",
    }[spelling]
    sealed = f"v1.{altered}.{mac}" if part == "body" else f"v1.{body}.{altered}"
    assert open_id(SECRET, sealed, "alice") is None


def test_a_body_with_other_spare_bits_is_refused() -> None:
    body, mac = _parts()  # {"t":"turn-1"}: 14 bytes, 19 characters, 2 spare bits in the last one
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    assert len(body) % 4 == 3
    respelled = body[:-1] + alphabet[alphabet.index(body[-1]) ^ 1]
    assert _unb64(respelled) == _unb64(body)  # the same bytes, another spelling
    assert open_id(SECRET, f"v1.{respelled}.{mac}", "alice") is None


def test_a_forged_body_is_not_parsed() -> None:
    """A body no MAC vouches for is refused before any JSON parsing (here: nesting deep enough
    to exhaust the parser's recursion)."""
    deep = _b64(b"[" * 200_000)
    assert open_id(SECRET, f"v1.{deep}.{_parts()[1]}", "alice") is None
    assert open_id(SECRET, f"v1.{deep}.", "alice") is None
