"""Client.add_listener: listeners are registered and removed, never overwritten, and one that
raises neither stops the others nor the transport thread that told them."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from mcp_agent_kit.client import Client
from mcp_agent_kit.client.channel import ChannelListeners


class Quiet(ChannelListeners):
    """A channel that never talks: the test plays the server's notifications through it."""

    strict = False
    legacy_version: str | None = None

    def exchange(self, message: dict[str, Any], timeout: float, headers: dict[str, str] | None = None) -> Any:
        raise AssertionError("no request expected")

    def notify(self, message: dict[str, Any]) -> None:
        return None

    def restart(self) -> None:
        return None

    def close(self) -> None:
        return None

    def describe(self) -> str:
        return "quiet"


def announce(channel: Quiet, kind: str) -> None:
    channel.tell_notification({"jsonrpc": "2.0", "method": f"notifications/{kind}/list_changed"})


def test_every_listener_hears_even_after_one_raises(caplog: pytest.LogCaptureFixture) -> None:
    channel = Quiet()
    client = Client(channel)
    heard: list[tuple[str, str]] = []

    def broken(kind: str) -> None:
        raise RuntimeError("listener bug")

    client.add_listener("list_changed", broken)
    client.add_listener("list_changed", lambda kind: heard.append(("first", kind)))
    remove = client.add_listener("list_changed", lambda kind: heard.append(("second", kind)))
    with caplog.at_level(logging.ERROR, logger="mcp_agent_kit.client"):
        announce(channel, "tools")
    assert heard == [("first", "tools"), ("second", "tools")]
    assert "a list_changed listener failed" in caplog.text and "listener bug" in caplog.text

    remove()
    remove()  # removing twice is harmless
    announce(channel, "prompts")
    assert heard[2:] == [("first", "prompts")]
    assert client.has_listeners("list_changed")


def test_an_unknown_kind_is_refused_with_the_known_ones() -> None:
    client = Client(Quiet())
    with pytest.raises(ValueError, match="unknown listener kind 'tools'; use one of list_changed"):
        client.add_listener("tools", print)
    assert not client.has_listeners("list_changed")


def test_a_channel_keeps_every_notification_listener_and_one_request_handler() -> None:
    channel = Quiet()
    client = Client(channel)
    heard: list[str] = []
    remove = channel.add_listener("notification", lambda message: heard.append(message["method"]))
    client.add_listener("list_changed", heard.append)
    announce(channel, "tools")
    assert heard == ["tools", "notifications/tools/list_changed"]  # the Client's listener is still there
    remove()
    announce(channel, "prompts")
    assert heard[2:] == ["prompts"]

    ping = {"jsonrpc": "2.0", "id": 7, "method": "ping"}
    assert channel.answer_request(ping) == {"jsonrpc": "2.0", "id": 7, "result": {}}  # the Client answers
    with pytest.raises(ValueError, match="already has a request handler; remove it first"):
        channel.add_listener("request", lambda request, related: {})
    with pytest.raises(ValueError, match="unknown listener kind 'response'; use one of notification, request"):
        channel.add_listener("response", print)  # type: ignore[call-overload]


def test_without_a_request_handler_a_request_gets_method_not_found() -> None:
    reply = Quiet().answer_request({"jsonrpc": "2.0", "id": 1, "method": "sampling/createMessage"})
    assert reply["error"]["code"] == -32601
