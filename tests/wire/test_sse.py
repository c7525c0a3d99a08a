"""wire.sse: the one SSE reader parses as the WHATWG HTML standard says (fed bytes, no network)."""

from __future__ import annotations

import io

import pytest

from mcp_agent_kit.wire.sse import iter_sse


class Chunks:
    """A stream that hands its bytes over in the given pieces (read1), as a socket would."""

    def __init__(self, *pieces: bytes) -> None:
        self.pieces = list(pieces)

    def read1(self, size: int = -1) -> bytes:
        return self.pieces.pop(0) if self.pieces else b""


class LinesOnly:
    """A stream with readline and nothing else."""

    def __init__(self, data: bytes) -> None:
        self.inner = io.BytesIO(data)

    def readline(self, size: int = -1) -> bytes:
        return self.inner.readline(size)


def events(data: bytes, seen: dict[str, str] | None = None) -> list[tuple[str, str]]:
    return list(iter_sse(io.BytesIO(data), seen=seen))


def test_a_data_line_loses_one_space_after_the_colon_and_nothing_else() -> None:
    assert events(b"data:   three spaces, two kept, trailing kept  \t\n\n") == [
        ("message", "  three spaces, two kept, trailing kept  \t")]
    assert events(b"data:no space\n\n") == [("message", "no space")]


def test_data_lines_of_one_event_join_with_a_newline() -> None:
    assert events(b"data: first\ndata:\ndata:  third \n\ndata: next\n\n") == [
        ("message", "first\n\n third "), ("message", "next")]


@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r"], ids=["LF", "CRLF", "CR"])
def test_every_line_end_the_standard_allows(end: bytes) -> None:
    data = end.join([b"event: update", b"data: a", b"data: b", b"", b"data: c", b"", b""])
    assert events(data) == [("update", "a\nb"), ("message", "c")]


def test_a_crlf_split_between_two_reads_is_one_line_end() -> None:
    stream = Chunks(b"data: a\r", b"\ndata: b\r", b"\r", b"\ndata: c\r\n\r\n")
    assert list(iter_sse(stream)) == [("message", "a\nb"), ("message", "c")]


def test_a_stream_with_readline_only_is_read_too() -> None:
    assert list(iter_sse(LinesOnly(b"data: x\r\ndata: y\n\n"))) == [("message", "x\ny")]


def test_comments_unknown_fields_and_a_bom_are_ignored() -> None:
    data = "\ufeff: a comment\ndata: x\nfoo: bar\n:another\n\n".encode()
    assert events(data) == [("message", "x")]


def test_a_field_without_a_colon_has_an_empty_value() -> None:
    assert events(b"data\n\n") == [("message", "")]
    assert events(b"data\ndata\n\n") == [("message", "\n")]


def test_an_event_without_data_is_not_dispatched_and_the_name_resets() -> None:
    assert events(b"event: lonely\n\nevent:\ndata: d\n\ndata: e\n\n") == [("message", "d"), ("message", "e")]


def test_id_and_retry_are_remembered_across_events() -> None:
    seen: dict[str, str] = {}
    assert events(b"id: 7\nretry: 1500\ndata: a\n\nretry: soon\nid: bad\0id\ndata: b\n\n", seen) == [
        ("message", "a"), ("message", "b")]
    assert seen == {"id": "7", "retry": "1500"}


def test_the_event_a_stream_ends_in_is_still_handed_over() -> None:
    assert events(b"data: a\n\ndata: last") == [("message", "a"), ("message", "last")]


def test_an_over_long_event_or_line_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="event exceeds"):
        list(iter_sse(io.BytesIO(b"data: 12345\ndata: 67890\n\n"), limit=10))
    with pytest.raises(ValueError, match="line exceeds"):
        list(iter_sse(Chunks(b"data: " + b"x" * 20), limit=10))


def test_bad_utf8_is_replaced_not_raised() -> None:
    assert events(b"data: \xff ok\n\n") == [("message", "\ufffd ok")]
