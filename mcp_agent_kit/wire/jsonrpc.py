"""jsonrpc: JSON-RPC 2.0 framing as pure functions.

Turns one line of bytes into one classified message or a precise error reply, and builds
replies. Rules: no I/O, no threads, no MCP knowledge beyond the base error codes; ids keep
their JSON type; a notification is never answered; errors whose id cannot be read carry no id.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final, Literal

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603

Id = str | int
Kind = Literal["request", "notification", "response", "invalid"]

_decoder = json.JSONDecoder(parse_constant=lambda name: _reject_constant(name))
_scan: Callable[[str, int], tuple[Any, int]] = _decoder.scan_once  # type: ignore[attr-defined]
_encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_WHITESPACE = " \t\n\r"
_SLOW = object()


def _reusable_encoder() -> Callable[[Any], str]:
    """Compact, UTF-8-friendly, NaN-rejecting JSON text, with the C encoder built once.

    ``JSONEncoder.encode`` builds a fresh C encoder (and a circularity map) on every call,
    which is half the cost of encoding a small message. Without the map, a circular value
    raises RecursionError, which callers already treat as "not JSON".
    """
    from json import encoder

    make = getattr(encoder, "c_make_encoder", None)
    if make is None:  # no C accelerator: the plain encoder is as fast as it gets
        return _encoder.encode
    run = make(None, _encoder.default, encoder.encode_basestring, None, ":", ",", False, False, False)

    def dumps(value: Any) -> str:
        return "".join(run(value, 0))

    return dumps


dumps_compact: Callable[[Any], str] = _reusable_encoder()


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


MESSAGES: Final[dict[int, str]] = {
    PARSE_ERROR: "Parse error",
    INVALID_REQUEST: "Invalid Request",
    METHOD_NOT_FOUND: "Method not found",
    INVALID_PARAMS: "Invalid params",
    INTERNAL_ERROR: "Internal error",
}
"""The one code table: each standard code's message; a detailed message reads "<message>: <detail>"."""


class RpcError(Exception):
    """A JSON-RPC error: raised below a handler to answer with it, raised to a caller for a peer's error reply.

    Build the standard ones with their constructors (`RpcError.invalid_params("unknown tool 'x'")` is
    "Invalid params: unknown tool 'x'"); `RpcError(code, message, data)` for any other code.
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    @classmethod
    def standard(cls, code: int, detail: str | None = None, data: Any = None) -> RpcError:
        """A standard code's error: its message from MESSAGES, followed by ": detail" when given."""
        text = MESSAGES[code]
        return cls(code, text if detail is None else f"{text}: {detail}", data)

    @classmethod
    def parse_error(cls, detail: str | None = None, data: Any = None) -> RpcError:
        return cls.standard(PARSE_ERROR, detail, data)

    @classmethod
    def invalid_request(cls, detail: str | None = None, data: Any = None) -> RpcError:
        return cls.standard(INVALID_REQUEST, detail, data)

    @classmethod
    def method_not_found(cls, detail: str | None = None, data: Any = None) -> RpcError:
        return cls.standard(METHOD_NOT_FOUND, detail, data)

    @classmethod
    def invalid_params(cls, detail: str | None = None, data: Any = None) -> RpcError:
        return cls.standard(INVALID_PARAMS, detail, data)

    @classmethod
    def internal_error(cls, detail: str | None = None, data: Any = None) -> RpcError:
        return cls.standard(INTERNAL_ERROR, detail, data)

    @classmethod
    def described(cls, code: int, message: str, data: Any = None, *, name: str | None = None) -> RpcError:
        """An error whose text (str) also names its code and quotes its `data`, cut at 300 characters:
        how a peer's error reads to a person, since agents put the real reason in `data`.
        The wire form (`to_error`) is unchanged."""
        error = cls(code, message, data)
        detail = ""
        if data is not None:
            shown = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, default=str)
            detail = ": " + (shown if len(shown) <= 300 else shown[:300] + "...")
        error.args = (f"{message} ({name or MESSAGES.get(code, f'error {code}').lower()}, code {code}){detail}",)
        return error

    def to_error(self) -> dict[str, Any]:
        """The JSON-RPC error object."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error

    def reply(self, id_: Id | None) -> dict[str, Any]:
        """The error reply to request `id_` (None: an id that could not be read)."""
        return error_reply(id_, self.code, self.message, self.data)


class Incoming:
    """One classified inbound message. For kind "invalid", `reply` is the error to send."""

    __slots__ = ("kind", "message", "reply")

    def __init__(self, kind: Kind, message: dict[str, Any], reply: dict[str, Any] | None = None) -> None:
        self.kind = kind
        self.message = message
        self.reply = reply

    @property
    def id(self) -> Id | None:
        value = self.message.get("id")
        return value if _is_id(value) else None


_ID_TYPES = (str, int)
_BYTES = (bytes, bytearray)


def _is_id(value: object) -> bool:
    return type(value) in _ID_TYPES or (isinstance(value, _ID_TYPES) and not isinstance(value, bool))


def error_reply(id_: Id | None, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    reply: dict[str, Any] = {"jsonrpc": "2.0"}
    if id_ is not None:
        reply["id"] = id_
    reply["error"] = error
    return reply


def result_reply(id_: Id, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "result": result}


def notification(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def request(id_: Id, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        message["params"] = params
    return message


def _invalid(message: dict[str, Any], why: str, code: int = INVALID_REQUEST) -> Incoming:
    raw_id = message.get("id")
    id_ = raw_id if _is_id(raw_id) else None
    return Incoming("invalid", message, error_reply(id_, code, why))


def decode(raw: bytes | str) -> Incoming:
    """Parse one serialized message and classify it; never raises."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, _BYTES) else raw
    except UnicodeDecodeError as exc:
        return Incoming("invalid", {}, error_reply(None, PARSE_ERROR, f"Parse error: invalid UTF-8 ({exc.reason})"))
    try:  # the C scanner directly; anything unusual takes the full decoder for its exact message
        value, end = _scan(text, 0)
        if end != len(text) and text[end:].strip(_WHITESPACE):
            raise ValueError
    except (StopIteration, ValueError, RecursionError):
        value = _SLOW
    try:
        if value is _SLOW:
            value = _decoder.decode(text)
    except RecursionError:
        return Incoming("invalid", {}, error_reply(None, PARSE_ERROR, "Parse error: nesting too deep"))
    except ValueError as exc:
        return Incoming("invalid", {}, error_reply(None, PARSE_ERROR, f"Parse error: {exc}"))
    return classify(value)


def classify(value: Any) -> Incoming:
    """Classify an already-parsed JSON value as request, notification, response or invalid."""
    if type(value) is not dict and isinstance(value, list):
        return Incoming("invalid", {}, error_reply(None, INVALID_REQUEST, "Invalid Request: batches are not supported"))
    if not isinstance(value, dict):
        return Incoming("invalid", {}, error_reply(None, INVALID_REQUEST, "Invalid Request: expected a JSON object"))
    if value.get("jsonrpc") != "2.0":
        return _invalid(value, 'Invalid Request: "jsonrpc" must be "2.0"')
    method = value.get("method")
    if method is None:
        if ("result" in value) != ("error" in value) and _is_id(value.get("id")):
            return Incoming("response", value)
        return _invalid(value, 'Invalid Request: missing "method"')
    if not isinstance(method, str) or not method:
        return _invalid(value, 'Invalid Request: "method" must be a non-empty string')
    if "result" in value or "error" in value:
        return _invalid(value, "Invalid Request: a request cannot carry result or error")
    params = value.get("params")
    if params is not None and not isinstance(params, dict):
        return _invalid(value, 'Invalid Request: "params" must be an object')
    if "id" not in value:
        return Incoming("notification", value)
    if not _is_id(value["id"]):
        return Incoming(
            "invalid", value, error_reply(None, INVALID_REQUEST, 'Invalid Request: "id" must be a string or an integer')
        )
    return Incoming("request", value)


def encode(message: dict[str, Any]) -> bytes:
    """Serialize one message compactly as UTF-8 (no newline). Raises ValueError/TypeError."""
    return dumps_compact(message).encode("utf-8")


def encode_safely(message: dict[str, Any]) -> bytes:
    """Serialize a reply; a result that is not JSON becomes an internal-error reply for its id."""
    try:
        return encode(message)
    except (TypeError, ValueError, RecursionError) as exc:
        raw_id = message.get("id")
        id_ = raw_id if _is_id(raw_id) else None
        return encode(error_reply(id_, INTERNAL_ERROR, f"Internal error: result is not JSON ({exc})"))
