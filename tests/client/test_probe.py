"""The sans-IO probe state machine, event by event (digest §8)."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_agent_kit.client.probe import Endpoint, Failure, OpenStream, Probe, Reply, Send, Verdict, resolve_endpoint

INFO = {"name": "t", "version": "1"}


def _probe(**options: Any) -> tuple[Probe, Send]:
    probe = Probe(client_info=INFO, **options)
    first = probe.start()
    assert isinstance(first, Send)
    return probe, first


def _error(send: Send, code: int, data: Any = None) -> Reply:
    error: dict[str, Any] = {"code": code, "message": "x"}
    if data is not None:
        error["data"] = data
    return Reply({"jsonrpc": "2.0", "id": send.message["id"], "error": error})


def _result(send: Send, result: dict[str, Any]) -> Reply:
    return Reply({"jsonrpc": "2.0", "id": send.message["id"], "result": result})


def test_discover_first_with_full_envelope() -> None:
    _, first = _probe()
    message = first.message
    assert message["method"] == "server/discover"
    meta = message["params"]["_meta"]
    assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert meta["io.modelcontextprotocol/clientCapabilities"] == {}
    assert meta["io.modelcontextprotocol/clientInfo"] == INFO


def test_discover_result_is_modern() -> None:
    probe, first = _probe()
    verdict = probe.feed(
        _result(
            first,
            {
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}},
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}},
            },
        )
    )
    assert isinstance(verdict, Verdict)
    assert (verdict.era, verdict.version) == ("modern", "2026-07-28")
    assert verdict.server_info == {"name": "s", "version": "1"}


def test_unsupported_version_retries_once_even_at_the_same_version() -> None:
    probe, first = _probe()
    again = probe.feed(_error(first, -32022, {"supported": ["2026-07-28"], "requested": "2026-07-28"}))
    assert isinstance(again, Send) and again.message["method"] == "server/discover"
    assert again.message["id"] != first.message["id"]
    final = probe.feed(_error(again, -32022, {"supported": ["2026-07-28"]}))
    assert isinstance(final, Verdict) and final.era == "unavailable"


@pytest.mark.parametrize("code", [-32020, -32021, -32022])
def test_modern_errors_never_fall_back_to_initialize(code: int) -> None:
    probe, first = _probe(offerable={"elicitation": {}})
    data = {"requiredCapabilities": {"elicitation": {}}} if code == -32021 else {"supported": ["2026-07-28"]}
    action = probe.feed(_error(first, code, data))
    while isinstance(action, Send):
        assert action.message["method"] == "server/discover"
        action = probe.feed(_error(action, code, data))
    assert action.era == "unavailable"


def test_missing_capability_is_added_when_we_can_offer_it() -> None:
    probe, first = _probe(offerable={"sampling": {}})
    again = probe.feed(_error(first, -32021, {"requiredCapabilities": {"sampling": {}}}))
    assert isinstance(again, Send)
    assert again.message["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] == {"sampling": {}}


def test_missing_capability_we_lack_is_unavailable() -> None:
    probe, first = _probe()
    verdict = probe.feed(_error(first, -32021, {"requiredCapabilities": {"sampling": {}}}))
    assert isinstance(verdict, Verdict) and verdict.era == "unavailable" and "sampling" in str(verdict.reason)


def test_unsupported_version_listing_only_legacy_versions_is_legacy() -> None:
    probe, first = _probe()
    action = probe.feed(_error(first, -32022, {"supported": ["2025-06-18"]}))
    assert isinstance(action, Send) and action.message["method"] == "initialize"


def test_disjoint_modern_versions_are_unavailable() -> None:
    probe, first = _probe()
    verdict = probe.feed(_error(first, -32022, {"supported": ["2099-01-01"]}))
    assert isinstance(verdict, Verdict) and verdict.era == "unavailable"


@pytest.mark.parametrize("code", [-32601, -32602, -32600, -32000, -32001])
def test_other_json_rpc_errors_are_legacy_signals(code: int) -> None:
    probe, first = _probe()
    action = probe.feed(_error(first, code))
    assert isinstance(action, Send) and action.message["method"] == "initialize" and not action.fresh
    verdict = probe.feed(_result(action, {"protocolVersion": "2025-03-26", "capabilities": {}, "serverInfo": {}}))
    assert isinstance(verdict, Verdict) and (verdict.era, verdict.version) == ("legacy", "2025-03-26")
    assert verdict.notify == {"jsonrpc": "2.0", "method": "notifications/initialized"}


@pytest.mark.parametrize("kind", ["timeout", "exited", "garbage", "http-5xx"])
def test_ambiguous_signals_fail_closed(kind: str) -> None:
    probe, _ = _probe()
    verdict = probe.feed(Failure(kind, "d"))  # type: ignore[arg-type]
    assert isinstance(verdict, Verdict) and verdict.era == "unavailable"


@pytest.mark.parametrize("kind", ["timeout", "exited", "garbage", "http-5xx"])
def test_ambiguous_signals_try_initialize_on_a_fresh_start_when_allowlisted(kind: str) -> None:
    probe, _ = _probe(allow_legacy=True)
    action = probe.feed(Failure(kind, "d"))  # type: ignore[arg-type]
    assert isinstance(action, Send) and action.fresh and action.message["method"] == "initialize"
    verdict = probe.feed(Failure("timeout", "again"))
    assert isinstance(verdict, Verdict) and verdict.era == "unavailable"


def test_http_4xx_without_modern_body_is_legacy() -> None:
    probe, _ = _probe()
    action = probe.feed(Failure("http-4xx", "HTTP 405"))
    assert isinstance(action, Send) and action.message["method"] == "initialize"


@pytest.mark.parametrize("allow", [False, True])
def test_auth_is_never_an_era_verdict(allow: bool) -> None:
    probe, _ = _probe(allow_legacy=allow)
    verdict = probe.feed(Failure("auth", "HTTP 401"))
    assert isinstance(verdict, Verdict) and verdict.era == "unavailable" and verdict.auth


def test_initialize_answered_with_an_unknown_version_is_unavailable() -> None:
    probe, first = _probe()
    action = probe.feed(_error(first, -32601))
    assert isinstance(action, Send)
    verdict = probe.feed(_result(action, {"protocolVersion": "2026-07-28", "capabilities": {}}))
    assert isinstance(verdict, Verdict) and verdict.era == "unavailable"


def test_legacy_unsupported_version_error_retries_at_a_mutual_version() -> None:
    probe, first = _probe()
    action = probe.feed(_error(first, -32601))
    assert isinstance(action, Send)
    retry = probe.feed(_error(action, -32602, {"supported": ["2024-11-05"], "requested": "2025-11-25"}))
    assert isinstance(retry, Send) and retry.message["params"]["protocolVersion"] == "2024-11-05"


def test_error_with_a_foreign_id_still_counts() -> None:
    probe, _ = _probe()
    action = probe.feed(Reply({"jsonrpc": "2.0", "id": "server-error", "error": {"code": -32600, "message": "x"}}))
    assert isinstance(action, Send) and action.message["method"] == "initialize"


def test_result_with_a_foreign_id_is_unavailable() -> None:
    probe, _ = _probe()
    verdict = probe.feed(Reply({"jsonrpc": "2.0", "id": 99, "result": {}}))
    assert isinstance(verdict, Verdict) and verdict.era == "unavailable"


def test_known_legacy_era_starts_with_initialize() -> None:
    _, first = _probe(known_era="legacy")
    assert first.message["method"] == "initialize"
    assert first.message["params"]["protocolVersion"] == "2025-11-25"


# ---- the 2024-11-05 HTTP+SSE fallback -------------------------------------------------------------
BASE = "http://127.0.0.1:8000/sse"


def _to_stream(discover_status: int = 405, initialize_status: int = 405) -> Probe:
    probe, _ = _probe()
    action = probe.feed(Failure("http-4xx", f"HTTP {discover_status}", discover_status))
    assert isinstance(action, Send) and action.message["method"] == "initialize"
    opened = probe.feed(Failure("http-4xx", f"HTTP {initialize_status}", initialize_status))
    assert isinstance(opened, OpenStream)
    return probe


@pytest.mark.parametrize("status", [400, 404, 405])
def test_both_posts_rejected_opens_the_old_sse_stream(status: int) -> None:
    probe = _to_stream(status, status)
    action = probe.feed(Endpoint(BASE, "/messages/?session_id=abc"))
    assert isinstance(action, Send) and action.endpoint == "http://127.0.0.1:8000/messages/?session_id=abc"
    assert action.message["method"] == "initialize"
    assert action.message["params"]["protocolVersion"] == "2024-11-05"
    verdict = probe.feed(_result(action, {"protocolVersion": "2024-11-05", "capabilities": {"tools": {}}}))
    assert isinstance(verdict, Verdict) and (verdict.era, verdict.version) == ("legacy", "2024-11-05")
    assert verdict.notify == {"jsonrpc": "2.0", "method": "notifications/initialized"}


@pytest.mark.parametrize(("discover", "initialize"), [(415, 405), (405, 406), (405, 422)])
def test_other_4xx_statuses_do_not_open_a_stream(discover: int, initialize: int) -> None:
    probe, _ = _probe()
    probe.feed(Failure("http-4xx", "x", discover))
    verdict = probe.feed(Failure("http-4xx", "x", initialize))
    assert isinstance(verdict, Verdict) and verdict.era == "unavailable"


def test_a_json_rpc_answer_to_discover_means_streamable_http_not_sse() -> None:
    probe, first = _probe()
    action = probe.feed(_error(first, -32601))
    assert isinstance(action, Send)
    verdict = probe.feed(Failure("http-4xx", "HTTP 404", 404))
    assert isinstance(verdict, Verdict) and verdict.era == "unavailable"


def test_a_known_legacy_origin_may_fall_back_to_the_stream() -> None:
    probe, _ = _probe(known_era="legacy")
    assert isinstance(probe.feed(Failure("http-4xx", "HTTP 405", 405)), OpenStream)


def test_the_stream_is_tried_once() -> None:
    probe = _to_stream()
    action = probe.feed(Endpoint(BASE, "/messages/"))
    assert isinstance(action, Send)
    verdict = probe.feed(Failure("http-4xx", "HTTP 404", 404))
    assert isinstance(verdict, Verdict) and verdict.era == "unavailable"


@pytest.mark.parametrize(
    "data",
    [
        "http://evil.example/messages/",
        "//evil.example/messages/",
        "https://127.0.0.1:8000/messages/",
        "http://127.0.0.1:8001/messages/",
        "http://user@127.0.0.1:8000/messages/",
        "javascript:alert(1)",
        "",
    ],
)
def test_a_cross_origin_or_odd_endpoint_is_refused(data: str) -> None:
    probe = _to_stream()
    verdict = probe.feed(Endpoint(BASE, data))
    assert isinstance(verdict, Verdict) and verdict.era == "unavailable"
    assert "GET (2024-11-05 HTTP+SSE)" in str(verdict.reason)


def test_same_origin_includes_the_default_port() -> None:
    assert resolve_endpoint("http://Example.com/sse", "http://example.com:80/m")[0] == "http://example.com:80/m"
    assert resolve_endpoint("https://example.com/a/sse", "m?s=1")[0] == "https://example.com/a/m?s=1"


@pytest.mark.parametrize("failure", [Failure("auth", "HTTP 401", 401), Failure("garbage", "began with 'message'")])
def test_a_failed_stream_is_unavailable(failure: Failure) -> None:
    probe = _to_stream()
    verdict = probe.feed(failure)
    assert isinstance(verdict, Verdict) and verdict.era == "unavailable"
    assert verdict.auth == (failure.kind == "auth")
