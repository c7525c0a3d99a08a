"""client.oauth.challenge: parse `WWW-Authenticate` (RFC 9110 §11.6.1) into challenges.

A header value may hold several challenges, each a scheme followed by `name=value` parameters
(token or quoted-string with `\\` escapes) or a token68; several header lines are joined with
newlines by the caller. Scheme and parameter names are case-insensitive (lower-cased here).
Rules: a pure function; malformed input yields what could be read, never an exception.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_TOKEN = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_PARAM = re.compile(rf"\s*({_TOKEN})\s*=\s*(?:\"((?:[^\"\\]|\\.)*)\"|({_TOKEN}))\s*(,)?", re.DOTALL)
_SCHEME = re.compile(rf"[\s,]*({_TOKEN})(?:\s+|$|(?=,))")
_TOKEN68 = re.compile(r"\s*[A-Za-z0-9\-._~+/]+=*\s*(?:,|$)")


@dataclass
class Challenge:
    scheme: str
    params: dict[str, str] = field(default_factory=dict)

    def get(self, name: str) -> str | None:
        return self.params.get(name)


def parse(header: str) -> list[Challenge]:
    """Every challenge in the header text (lines joined by newlines), in order."""
    found: list[Challenge] = []
    at, text = 0, header.replace("\n", ", ")
    while at < len(text):
        scheme = _SCHEME.match(text, at)
        if scheme is None:
            break
        current = Challenge(scheme.group(1).lower())
        found.append(current)
        at = scheme.end()
        param = _PARAM.match(text, at)
        if param is None:
            token68 = _TOKEN68.match(text, at)
            at = token68.end() if token68 else at
            continue
        while param is not None:
            quoted, bare = param.group(2), param.group(3)
            value = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else bare
            current.params.setdefault(param.group(1).lower(), value or "")
            at = param.end()
            if not param.group(4):
                break
            param = _PARAM.match(text, at)
    return found


def pick(header: str, schemes: tuple[str, ...] = ("dpop", "bearer")) -> Challenge | None:
    """The first challenge of a scheme we handle (DPoP before Bearer when both are offered)."""
    challenges = parse(header)
    for scheme in schemes:
        for challenge in challenges:
            if challenge.scheme == scheme:
                return challenge
    return None
