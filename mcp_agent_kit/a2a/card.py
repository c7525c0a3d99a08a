"""card: the Agent Card (v1.0) for an agent, and its HTTP caching facts (ETag, Last-Modified).

Interfaces list every binding really served, at the URL clients must call (a public URL when the
server sits behind a proxy). A bearer token is declared in `securitySchemes`. Rules: builds dicts and
bytes only; the transport decides paths and headers.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from email.utils import formatdate
from typing import Any

from mcp_agent_kit.a2a.engine import Agent
from mcp_agent_kit.a2a.protocol import PROTOCOL_VERSION

MAX_AGE = 300


BEARER_SCHEME = {"httpAuthSecurityScheme": {"scheme": "Bearer", "description": "Authorization: Bearer <token>"}}


def build_card(agent: Agent, interfaces: list[tuple[str, str]], bearer: bool = False,
               schemes: dict[str, tuple[dict[str, Any], list[str]]] | None = None) -> dict[str, Any]:
    """interfaces: (url, protocolBinding) pairs in order of preference. schemes: name -> (SecurityScheme,
    scopes it needs); any one of them is enough (each is its own requirement). bearer: the static-token
    scheme, when no schemes are given."""
    capabilities: dict[str, Any] = {"streaming": True, "pushNotifications": agent.push_notifications,
                                    "extendedAgentCard": False}
    extensions = agent.extensions()
    if extensions:
        capabilities["extensions"] = extensions
    card: dict[str, Any] = {
        "name": agent.name,
        "description": agent.description,
        "version": agent.version,
        "supportedInterfaces": [
            {"url": url, "protocolBinding": binding, "protocolVersion": PROTOCOL_VERSION} for url, binding in interfaces
        ],
        "capabilities": capabilities,
        "defaultInputModes": list(agent.input_modes),
        "defaultOutputModes": list(agent.output_modes),
        "skills": agent.skills(),
    }
    if schemes is None and bearer:
        schemes = {"bearer": (BEARER_SCHEME, [])}
    if schemes:
        card["securitySchemes"] = {name: scheme for name, (scheme, _) in schemes.items()}
        card["securityRequirements"] = [{"schemes": {name: {"list": scopes}}} for name, (_, scopes) in schemes.items()]
    return card


class CardDocument:
    """The served card bytes with a strong ETag and the time they last changed."""

    def __init__(self, agent: Agent, interfaces: list[tuple[str, str]], bearer: bool = False,
                 schemes: dict[str, tuple[dict[str, Any], list[str]]] | None = None) -> None:
        self.agent = agent
        self.interfaces = interfaces
        self.bearer = bearer
        self.schemes = schemes
        self._lock = threading.Lock()
        self._etag = ""
        self._body = b""
        self._modified = time.time()

    def current(self) -> tuple[bytes, str, str]:
        """(body, ETag, Last-Modified) — rebuilt each time so registry changes show at once."""
        card = build_card(self.agent, self.interfaces, self.bearer, self.schemes)
        body = json.dumps(card, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
        with self._lock:
            if etag != self._etag:
                if self._etag:
                    self._modified = time.time()
                self._etag, self._body = etag, body
            return self._body, self._etag, formatdate(self._modified, usegmt=True)


def etag_matches(header: str | None, etag: str) -> bool:
    if not header:
        return False
    if header.strip() == "*":
        return True
    return any(tag.strip().removeprefix("W/") == etag for tag in header.split(","))
