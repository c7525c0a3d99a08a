"""Namespace merging: unique names stay, collisions get prefixes, nothing is lost, order never matters."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from mcp_agent_kit.client.merge import NAME_RE, merge_names, merge_uris


def test_unique_names_stay_and_collisions_are_prefixed() -> None:
    merged = merge_names({"alpha": ["add", "only_a"], "beta": ["add", "only_b"]})
    assert merged.route == {
        "alpha.add": ("alpha", "add"),
        "beta.add": ("beta", "add"),
        "only_a": ("alpha", "only_a"),
        "only_b": ("beta", "only_b"),
    }
    assert merged.conflicts == []


def test_a_prefixed_name_never_overwrites_an_existing_name() -> None:
    # beta's own tool is literally called "alpha.add", which is what alpha's add would become
    merged = merge_names({"alpha": ["add"], "beta": ["add", "alpha.add"]})
    assert len(merged.route) == 3
    assert set(merged.route.values()) == {("alpha", "add"), ("beta", "add"), ("beta", "alpha.add")}
    assert all(NAME_RE.match(name) for name in merged.route)


def test_over_long_and_invalid_names_become_valid_deterministically() -> None:
    long = "x" * 128
    offers = {"a": [long, "has space"], "b": [long]}
    first = merge_names(offers)
    second = merge_names(dict(reversed(list(offers.items()))))
    assert first.route == second.route
    assert all(NAME_RE.match(name) for name in first.route)
    assert len(first.route) == 3


def test_invalid_alias_characters_are_replaced() -> None:
    merged = merge_names({"my server/1": ["t"], "other": ["t"]})
    assert all(NAME_RE.match(name) for name in merged.route)
    assert len(merged.route) == 2


def test_duplicate_names_within_one_server_are_reported() -> None:
    merged = merge_names({"a": ["t", "t"]})
    assert merged.route == {"t": ("a", "t")}
    assert merged.conflicts and "more than once" in merged.conflicts[0]


def test_uri_collisions_are_reported_and_served_from_one_server() -> None:
    route, conflicts = merge_uris({"b": ["file:///x", "file:///b"], "a": ["file:///x"]})
    assert route == {"file:///x": "a", "file:///b": "b"}
    assert len(conflicts) == 1 and "file:///x" in conflicts[0]


names = st.text(alphabet="abc._-/ é", min_size=1, max_size=140)
offers = st.dictionaries(st.sampled_from(["a", "b", "c", "a.b", "x y"]), st.lists(names, max_size=6), max_size=4)


@given(offers)
def test_merge_properties(offer: dict[str, list[str]]) -> None:
    merged = merge_names(offer)
    entries = {(alias, name) for alias, items in offer.items() for name in items}
    lost = entries - set(merged.route.values())
    for alias, name in lost:  # nothing disappears without being reported
        assert any(f"{alias}:{name}" in conflict for conflict in merged.conflicts)
    assert set(merged.names) == set(merged.route.values())
    for name, entry in merged.route.items():
        assert NAME_RE.match(name)
        assert merged.names[entry] == name
    for order in itertools.islice(itertools.permutations(offer.items()), 3):
        assert merge_names(dict(order)).route == merged.route


plain = st.text(alphabet="abcxyz_-", min_size=1, max_size=20)


@given(st.dictionaries(st.sampled_from(["a", "b", "c"]), st.lists(plain, max_size=5, unique=True), max_size=3))
def test_names_used_by_one_server_stay_as_they_are(offer: dict[str, list[str]]) -> None:
    merged = merge_names(offer)
    counts: dict[str, int] = {}
    for items in offer.values():
        for name in items:
            counts[name] = counts.get(name, 0) + 1
    for alias, items in offer.items():
        for name in items:
            expected = name if counts[name] == 1 else f"{alias}.{name}"
            assert merged.names[(alias, name)] == expected
