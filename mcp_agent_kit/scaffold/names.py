"""names: turn what a user typed (`my-agent`, `my_agent`) into safe project, package and skill names.

Rules: pure string checks; rejects anything that is not a plain identifier-like name, that would
shadow a standard-library or kit module, or that could escape a directory.
"""

from __future__ import annotations

import keyword
import re
import sys

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)*")  # fullmatch: `$` lets "x\n" through
RESERVED = frozenset({"tools", "a2a", "mcp", "mcp_agent_kit", "test", "tests", "server", "validate", "setup"})


class NameError_(ValueError):
    """A project name we refuse, with the reason."""


class Names:
    """The derived names of one project."""

    __slots__ = ("directory", "dist", "package", "title")

    def __init__(self, dist: str, package: str, title: str, directory: str | None = None) -> None:
        self.dist = dist  # distribution, skill and server name: my-agent
        self.package = package  # Python package: my_agent
        self.title = title  # display title: My Agent
        self.directory = directory or dist  # the project directory, the name as typed: `cd NAME` works


def derive(raw: str) -> Names:
    """Names for `raw`, or NameError_ saying why it is not acceptable."""
    if not raw or len(raw) > 64:
        raise NameError_("the name must be 1 to 64 characters")
    if not raw.isascii() or not _NAME.fullmatch(raw):
        raise NameError_(
            f"{raw!r} is not a safe name: use letters and digits, words joined by '-' or '_', starting with a letter"
        )
    package = raw.replace("-", "_").lower()
    dist = raw.replace("_", "-").lower()
    if keyword.iskeyword(package) or package in sys.stdlib_module_names or package in RESERVED:
        raise NameError_(f"{raw!r} would shadow the Python module {package!r}; choose another name")
    title = " ".join(part.capitalize() for part in dist.split("-"))
    return Names(dist, package, title, raw)
