"""The requestState tag (core.state, MRTR): only the genuine HMAC opens a token. An empty, a
truncated, an extended and a same-length other tag are each refused by the constant-time
comparison, unsealed directly and sent back to a server as `requestState`; other spellings of
the genuine tag (junk characters, other spare bits) and of the body are refused as malformed."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import pytest

from mcp_agent_kit import Context, Server
from mcp_agent_kit.core.state import StateError, seal, unseal
from tests.forgeries import forgeries
from tests.stdio_peer import modern

SECRET = b"k" * 32
NOW = 1_000.0


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _genuine() -> tuple[str, str]:
    body, tag = seal(SECRET, {"m": "tools/call"}, ttl_s=60, now=NOW).split(".")
    return body, tag


def test_the_genuine_tag_opens_the_token() -> None:
    body, tag = _genuine()
    assert unseal(SECRET, f"{body}.{tag}", {"m": "tools/call"}, now=NOW)["m"] == "tools/call"


@pytest.mark.parametrize("case", sorted(forgeries(b"0123456789")))
def test_a_near_miss_tag_fails_the_integrity_check(case: str) -> None:
    body, tag = _genuine()
    forged = _b64(forgeries(_unb64(tag))[case])
    with pytest.raises(StateError, match="integrity check"):
        unseal(SECRET, f"{body}.{forged}", {"m": "tools/call"}, now=NOW)


ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def _other_spare_bits(text: str) -> str:
    """The same bytes spelled with the lowest spare bit of the last character set the other way."""
    assert len(text) % 4 in (2, 3), "this text has no spare bits"
    return text[:-1] + ALPHABET[ALPHABET.index(text[-1]) ^ 1]


SPELLINGS: dict[str, Callable[[str], str]] = {
    "junk appended": lambda text: text + "!",
    "junk inside": lambda text: text[:5] + "!" + text[5:],
    "other spare bits": _other_spare_bits,
    "padded": lambda text: text + "=" * (4 - len(text) % 4),
    "standard alphabet": lambda text: text[:-3] + "+/" + text[-1],
}


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
@pytest.mark.parametrize("part", ["body", "tag"])
def test_other_spellings_of_the_genuine_token_are_malformed(part: str, spelling: str) -> None:
    body, tag = _genuine()
    token = f"{SPELLINGS[spelling](body)}.{tag}" if part == "body" else f"{body}.{SPELLINGS[spelling](tag)}"
    with pytest.raises(StateError, match=r"malformed|integrity check"):
        unseal(SECRET, token, {"m": "tools/call"}, now=NOW)


def _confirming_server() -> Server:
    server = Server("state-secrets", "1.0")

    @server.tool
    def confirm(ctx: Context) -> str:
        answer = ctx.elicit("Sure?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
        return str(answer["content"]["ok"])

    return server


@pytest.mark.parametrize("case", ["genuine", *sorted(forgeries(b"0123456789"))])
def test_a_server_answers_only_the_genuine_request_state(case: str) -> None:
    server = _confirming_server()
    caps: dict[str, Any] = {"elicitation": {}}
    first = server.handle(modern(1, "tools/call", caps, name="confirm", arguments={}))["result"]  # type: ignore[index]
    body, tag = first["requestState"].split(".")
    sent = tag if case == "genuine" else _b64(forgeries(_unb64(tag))[case])
    answer = {"elicitation_1": {"action": "accept", "content": {"ok": True}}}
    reply = server.handle(modern(2, "tools/call", caps, name="confirm", arguments={}, inputResponses=answer,
                                 requestState=f"{body}.{sent}"))
    if case == "genuine":
        assert reply["result"]["content"][0]["text"] == "True"  # type: ignore[index]
    else:
        assert reply["error"]["code"] == -32602  # type: ignore[index]
        assert "integrity check" in reply["error"]["message"]  # type: ignore[index]
