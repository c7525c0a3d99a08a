"""protocol: A2A v1.0 facts as tables — error codes, reasons and HTTP statuses, task states, timestamps.

Rules: pure data and tiny pure functions (the standard JSON-RPC texts come from wire.jsonrpc);
no I/O, no threads, no knowledge of tools or stores. The wire is ProtoJSON: enums by their proto
names, timestamps in UTC with a `Z`.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any, Final

from mcp_agent_kit.wire import jsonrpc as rpc

DOMAIN: Final = "a2a-protocol.org"
ERROR_INFO: Final = "type.googleapis.com/google.rpc.ErrorInfo"
BAD_REQUEST: Final = "type.googleapis.com/google.rpc.BadRequest"
PROTOCOL_VERSION: Final = "1.0"
SUPPORTED_VERSIONS: Final = frozenset({"1.0"})

# name -> (JSON-RPC code, ErrorInfo reason or None, HTTP status (spec v1.0.1), gRPC status name, default text)
ERRORS: Final[dict[str, tuple[int, str | None, int, str, str]]] = {
    "TaskNotFound": (-32001, "TASK_NOT_FOUND", 404, "NOT_FOUND", "Task not found"),
    "TaskNotCancelable": (-32002, "TASK_NOT_CANCELABLE", 400, "FAILED_PRECONDITION", "Task cannot be canceled"),
    "PushNotificationNotSupported": (
        -32003,
        "PUSH_NOTIFICATION_NOT_SUPPORTED",
        400,
        "FAILED_PRECONDITION",
        "Push notifications are not supported",
    ),
    "UnsupportedOperation": (-32004, "UNSUPPORTED_OPERATION", 400, "FAILED_PRECONDITION", "Unsupported operation"),
    "ContentTypeNotSupported": (
        -32005,
        "CONTENT_TYPE_NOT_SUPPORTED",
        400,
        "INVALID_ARGUMENT",
        "Content type not supported",
    ),
    "InvalidAgentResponse": (-32006, "INVALID_AGENT_RESPONSE", 500, "INTERNAL", "Invalid agent response"),
    "ExtendedAgentCardNotConfigured": (
        -32007,
        "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
        400,
        "FAILED_PRECONDITION",
        "Extended agent card not configured",
    ),
    "ExtensionSupportRequired": (
        -32008,
        "EXTENSION_SUPPORT_REQUIRED",
        400,
        "FAILED_PRECONDITION",
        "Extension support required",
    ),
    "VersionNotSupported": (-32009, "VERSION_NOT_SUPPORTED", 400, "FAILED_PRECONDITION", "Version not supported"),
    # the standard JSON-RPC codes, their texts from wire.jsonrpc's table (A2A spells "Invalid request")
    "ParseError": (rpc.PARSE_ERROR, None, 400, "INVALID_ARGUMENT", rpc.MESSAGES[rpc.PARSE_ERROR]),
    "InvalidRequest": (rpc.INVALID_REQUEST, None, 400, "INVALID_ARGUMENT", "Invalid request"),
    "MethodNotFound": (rpc.METHOD_NOT_FOUND, None, 404, "NOT_FOUND", rpc.MESSAGES[rpc.METHOD_NOT_FOUND]),
    "InvalidParams": (rpc.INVALID_PARAMS, None, 400, "INVALID_ARGUMENT", rpc.MESSAGES[rpc.INVALID_PARAMS]),
    "Internal": (rpc.INTERNAL_ERROR, None, 500, "INTERNAL", rpc.MESSAGES[rpc.INTERNAL_ERROR]),
    "Unauthenticated": (-32600, "UNAUTHENTICATED", 401, "UNAUTHENTICATED", "Authentication required"),
    "PermissionDenied": (-32600, "PERMISSION_DENIED", 403, "PERMISSION_DENIED", "Permission denied"),
    "PayloadTooLarge": (-32600, "PAYLOAD_TOO_LARGE", 413, "INVALID_ARGUMENT", "Request body too large"),
}


_NAME_OF_CODE: Final = {code: name for name, (code, *_) in reversed(ERRORS.items())}  # each code's first name


class A2AError(Exception):
    """One A2A or JSON-RPC error: raised by the server (bindings render it as a JSON-RPC error object
    or an AIP-193 body) and by A2A clients for a call that failed (`A2AError.call_failed`).

    `A2AError("InvalidParams", detail="x")` reads "Invalid params: x" (the name's text from ERRORS,
    then the detail); `message` replaces the text instead.
    """

    def __init__(
        self,
        name: str,
        message: str | None = None,
        metadata: dict[str, Any] | None = None,
        violations: list[tuple[str, str]] | None = None,
        *,
        detail: str | None = None,
    ) -> None:
        code, reason, status, grpc, text = ERRORS[name]
        if not message:
            message = text if detail is None else f"{text}: {detail}"
        super().__init__(message)
        self.name = name
        self.code = code
        self.reason = reason
        self.status = status
        self.grpc = grpc
        self.message = message
        self.metadata = {key: str(value) for key, value in (metadata or {}).items()}
        self.violations = violations or []
        self.unreachable = False  # a client's call: no connection at all (not an error the agent answered)

    @classmethod
    def call_failed(cls, message: str, code: int | None = None, *, unreachable: bool = False) -> A2AError:
        """A client's call to an agent failed: unreachable, answered with an error (its JSON-RPC
        `code`, kept as is), or sent something that cannot be read (InvalidAgentResponse)."""
        name = "InvalidAgentResponse" if code is None else _NAME_OF_CODE.get(code, "InvalidAgentResponse")
        error = cls(name, message)
        error.code = error.code if code is None else code
        error.unreachable = unreachable
        return error

    def details(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if self.reason is not None:
            out.append({"@type": ERROR_INFO, "reason": self.reason, "domain": DOMAIN, "metadata": self.metadata})
        if self.violations:
            out.append(
                {
                    "@type": BAD_REQUEST,
                    "fieldViolations": [{"field": field, "description": why} for field, why in self.violations],
                }
            )
        return out

    def rpc_error(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        details = self.details()
        if details:
            error["data"] = details
        return error

    def rest_error(self) -> dict[str, Any]:
        return {"error": {"code": self.status, "status": self.grpc, "message": self.message, "details": self.details()}}


# ---- task states ------------------------------------------------------------------------------
SUBMITTED: Final = "TASK_STATE_SUBMITTED"
WORKING: Final = "TASK_STATE_WORKING"
INPUT_REQUIRED: Final = "TASK_STATE_INPUT_REQUIRED"
AUTH_REQUIRED: Final = "TASK_STATE_AUTH_REQUIRED"
COMPLETED: Final = "TASK_STATE_COMPLETED"
FAILED: Final = "TASK_STATE_FAILED"
CANCELED: Final = "TASK_STATE_CANCELED"
REJECTED: Final = "TASK_STATE_REJECTED"
# ProtoJSON accepts enum numbers too; these are the proto numbers (0 = UNSPECIFIED is never valid).
STATE_NUMBERS: Final = {
    1: SUBMITTED,
    2: WORKING,
    3: COMPLETED,
    4: FAILED,
    5: CANCELED,
    6: INPUT_REQUIRED,
    7: REJECTED,
    8: AUTH_REQUIRED,
}
ROLE_USER: Final = "ROLE_USER"
ROLE_AGENT: Final = "ROLE_AGENT"
ROLE_NUMBERS: Final = {1: ROLE_USER, 2: ROLE_AGENT}


def now_iso(clock: float | None = None) -> str:
    """A ProtoJSON timestamp, UTC, millisecond precision: 2026-01-02T03:04:05.678Z."""
    moment = datetime.fromtimestamp(time.time() if clock is None else clock, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def parse_iso(value: str) -> float:
    """Seconds since the epoch for an RFC 3339 timestamp; a zone is required (Z or ±hh:mm)."""
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise ValueError("a timestamp needs a zone (Z)")
    return moment.timestamp()


def version_of(header: str | None) -> str:
    """The Major.Minor an `A2A-Version` value asks for; missing or empty means 0.3 (spec §3.6.2)."""
    if header is None or not header.strip():
        return "0.3"
    parts = header.strip().split(".")
    return ".".join(parts[:2])


def check_version(header: str | None) -> None:
    version = version_of(header)
    if version not in SUPPORTED_VERSIONS:
        raise A2AError(
            "VersionNotSupported",
            f"A2A version '{version}' is not supported; send the header A2A-Version: {PROTOCOL_VERSION}",
            {"requested": version, "supported": PROTOCOL_VERSION},
        )
