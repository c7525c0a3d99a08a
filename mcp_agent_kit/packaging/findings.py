"""findings: the report records shared by the skill and plugin validators.

Rules: plain data only; no file system access, no knowledge of individual checks.
"""

from __future__ import annotations

from dataclasses import dataclass

ERROR = "error"
WARNING = "warning"


@dataclass(frozen=True)
class Finding:
    """One validation finding, printable as ``path:line: severity: message [rule]``."""

    severity: str
    rule: str
    message: str
    path: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.severity}: {self.message} [{self.rule}]"

    def as_dict(self) -> dict[str, object]:
        return {
            "severity": self.severity,
            "rule": self.rule,
            "message": self.message,
            "path": self.path,
            "line": self.line,
        }


def errors(findings: list[Finding]) -> list[Finding]:
    return [finding for finding in findings if finding.severity == ERROR]


def warnings(findings: list[Finding]) -> list[Finding]:
    return [finding for finding in findings if finding.severity == WARNING]
