"""origin: where the running mcp-agent-kit came from, and how a new project should install it.

A generated project depends on `mcp-agent-kit>=<this version>`. That floor only resolves on a
package index when the index has this version; a kit installed from a local checkout, a wheel
file or a URL must say so, and the project's README, CI workflow and Dockerfile must install
that kit instead. The answer comes from the installed distribution's PEP 610 `direct_url.json`.
Rules: reads metadata and paths only; never writes (the caller copies a wheel if told to).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlsplit

from mcp_agent_kit import __version__

DIST = "mcp-agent-kit"
WHEELS_DIR = "wheels"  # where a project keeps the kit's wheel when the kit came from one


@dataclass(frozen=True)
class Origin:
    """How the kit was installed.

    kind: "index" (a package index such as PyPI), "wheel" (a local wheel file), "checkout"
    (a local source tree, editable or not), or "url" (a remote archive or a VCS URL).
    spec: the pip requirement a project installs the kit with, or "" when only the user can
    tell (a local checkout seen from CI); local: the wheel file or checkout on this machine.
    """

    kind: str
    spec: str
    local: Path | None = None

    @property
    def from_index(self) -> bool:
        return self.kind == "index"

    def wheel_name(self) -> str | None:
        return self.local.name if self.kind == "wheel" and self.local is not None else None


def _package_dir() -> Path:
    return Path(__file__).resolve().parent.parent


def file_path(url: str) -> Path | None:
    """The local path of a file:// URL (None for any other URL)."""
    parts = urlsplit(url)
    return Path(unquote(parts.path)) if parts.scheme == "file" else None


def _installed_here(dist: metadata.Distribution) -> bool:
    """True when this distribution's files include the package that is running now."""
    located = dist.locate_file("mcp_agent_kit/__init__.py")
    try:
        return Path(str(located)).resolve() == _package_dir() / "__init__.py"
    except OSError:
        return False


def _from_direct_url(record: dict[str, object]) -> Origin:
    url = str(record.get("url", ""))
    path = file_path(url)
    if "vcs_info" in record:
        vcs = record["vcs_info"]
        name = vcs.get("vcs", "git") if isinstance(vcs, dict) else "git"
        return Origin("url", f"{DIST} @ {name}+{url}")
    if "archive_info" in record:
        if path is not None and path.suffix == ".whl":
            spec = f"./{WHEELS_DIR}/{path.name}" if path.is_file() else ""  # a wheel since deleted: no copy
            return Origin("wheel", spec, path)
        return Origin("url", f"{DIST} @ {url}") if path is None else Origin("checkout", "", path)
    return Origin("checkout", "", path) if path is not None else Origin("url", f"{DIST} @ {url}")


def _read_record(dist: metadata.Distribution) -> dict[str, object] | None:
    try:
        record = json.loads(dist.read_text("direct_url.json") or "null")
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _source_tree() -> Path | None:
    """The checkout the running package sits in (its pyproject.toml names this distribution)."""
    tree = _package_dir().parent
    try:
        text = (tree / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return None
    return tree if f'name = "{DIST}"' in text else None


def find_origin() -> Origin:
    """Where the running kit came from: a source tree it runs from (editable or not installed at
    all) is a checkout; otherwise the installed distribution's record says."""
    tree = _source_tree()
    if tree is not None:
        return Origin("checkout", "", tree)
    try:
        dist = metadata.distribution(DIST)
    except metadata.PackageNotFoundError:
        return Origin("checkout", "", None)
    if dist.version != __version__ or not _installed_here(dist):
        return Origin("checkout", "", None)  # metadata of another copy: where this one came from is unknown
    record = _read_record(dist)
    return Origin("index", f"{DIST}>={__version__}") if record is None else _from_direct_url(record)
