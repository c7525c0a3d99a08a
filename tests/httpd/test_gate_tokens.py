"""Static bearer tokens (httpd.gate): a request names a principal only with exactly a configured
token. An empty, a truncated, an extended, a same-length other and a non-ASCII token are each
refused (no principal; `authorize` raises a 401 with an invalid_token challenge), with one token
or several configured, and a configured empty token matches nothing."""

from __future__ import annotations

import pytest

from mcp_agent_kit.auth.resource import Refusal
from mcp_agent_kit.httpd.gate import Policy
from tests.forgeries import text_forgeries

TOKEN = "s3cret-token-0123456789"
POLICIES = {
    "one token": Policy(token=TOKEN),
    "several tokens": Policy(tokens={"another-token-abcdefghij": "bob", TOKEN: "alice", "z" * 40: "carol"}),
}


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_the_genuine_token_names_its_principal(policy: str) -> None:
    gate = POLICIES[policy]
    found = gate.principal(f"Bearer {TOKEN}")
    assert found is not None and found == gate.authorize(f"bearer  {TOKEN} ")
    assert found == "alice" if policy == "several tokens" else found.startswith("token:")


@pytest.mark.parametrize("case", sorted(text_forgeries(TOKEN)))
@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_a_near_miss_token_is_refused(policy: str, case: str) -> None:
    gate = POLICIES[policy]
    header = f"Bearer {text_forgeries(TOKEN)[case]}"
    assert gate.principal(header) is None
    with pytest.raises(Refusal) as refused:
        gate.authorize(header)
    assert refused.value.status == 401
    assert refused.value.challenge == 'Bearer realm="mcp", error="invalid_token"'


def test_a_configured_empty_token_matches_nothing() -> None:
    gate = Policy(tokens={"": "nobody", TOKEN: "alice"})
    assert gate.principal("Bearer x") is None and gate.principal("Bearer " + TOKEN[:-1]) is None
    assert gate.principal("Bearer " + TOKEN) == "alice"
