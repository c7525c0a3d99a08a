"""finish: the last steps of creating a project: the kit's wheel copied in, the project installed, next steps.

When the kit came from a wheel file, the project gets a copy of it under wheels/ so that its CI
workflow and Dockerfile install the very kit that made it. Run from a virtual environment, the
new project is installed into it in editable mode (`pip install -e`), so `python validate.py`
and `python server.py` work at once; outside one, nothing is installed and the command is printed.
Rules: writes only that one wheel, only inside the new project, and never over an existing file;
installs only into the running interpreter's virtual environment, and only with its own pip;
knows nothing of templates.
"""

from __future__ import annotations

import importlib.util
import json
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from mcp_agent_kit import __version__
from mcp_agent_kit.scaffold.names import Names
from mcp_agent_kit.scaffold.origin import DIST, WHEELS_DIR, Origin, file_path


def copy_kit_wheel(origin: Origin, project: Path) -> Path | None:
    """Copy the kit's wheel into project/wheels/ (when the kit came from one that still exists)."""
    name = origin.wheel_name()
    if name is None or not origin.spec or origin.local is None:
        return None
    target = project / WHEELS_DIR / name
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(origin.local, target)
    return target


@dataclass(frozen=True)
class Install:
    """What became of installing the project: done (or already so), or why not, and the command."""

    installed: bool
    command: list[str]
    why: str = ""  # why nothing was installed ("" when it was, or when it failed)
    error: str = ""  # pip's failure, one line

    def line(self) -> str:
        return shlex.join(self.command)


def in_virtualenv() -> bool:
    """True when this interpreter runs from a virtual environment (venv, virtualenv, uv)."""
    return sys.prefix != sys.base_prefix


def install_command(project: Path) -> list[str]:
    return [sys.executable, "-m", "pip", "install", "-e", str(project)]


def _editable_from(names: Names, project: Path) -> bool:
    """True when this environment already has the project installed, editable, from this directory."""
    try:
        record = json.loads(metadata.distribution(names.dist).read_text("direct_url.json") or "null")
    except (metadata.PackageNotFoundError, ValueError):
        return False
    if not isinstance(record, dict) or not (record.get("dir_info") or {}).get("editable"):
        return False
    where = file_path(str(record.get("url", "")))
    return where is not None and where.resolve() == project.resolve()


def _kit_installed() -> bool:
    """True when pip can see this very kit installed here (so the project's dependency resolves offline)."""
    try:
        return metadata.version(DIST) == __version__
    except metadata.PackageNotFoundError:
        return False


def install_project(names: Names, project: Path, *, wanted: bool) -> Install:
    """Install the project into this virtual environment in editable mode, unless not wanted or not possible."""
    command = install_command(project)
    reasons = (
        (not wanted, "--no-install was given"),
        (not in_virtualenv(), f"{sys.executable} does not run from a virtual environment"),
        (importlib.util.find_spec("pip") is None, f"pip is not installed for {sys.executable}"),
        (not _kit_installed(), f"mcp-agent-kit {__version__} is not installed for {sys.executable}"),
    )
    why = next((reason for unmet, reason in reasons if unmet), "")
    if why:
        return Install(False, command, why)
    if _editable_from(names, project):
        return Install(True, command)
    print(f"Installing {names.dist} into {sys.prefix} (editable): {shlex.join(command)}", flush=True)
    done = subprocess.run([*command[:4], "-q", *command[4:]], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, check=False)
    if done.returncode == 0:
        return Install(True, command)
    said = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    errors = [line for line in said if line.startswith("ERROR:")] or said
    return Install(False, command, error=errors[-1] if errors else f"pip exited with {done.returncode}")


def next_steps(names: Names, shown: Path, origin: Origin, install: Install) -> str:
    """What to run next, with this interpreter's absolute path so the steps use the right kit."""
    from mcp_agent_kit.scaffold.render import describe_origin, install_steps

    python = sys.executable
    lines: list[str] = []
    if not origin.from_index:
        lines += [f"note: this is {describe_origin(origin)}; README.md, the CI workflow and the Dockerfile",
                  "      install that kit (MCP_AGENT_KIT_SPEC overrides it)", ""]
    if install.installed:
        lines += [f"Installed {names.dist} into {sys.prefix} in editable mode: your edits take effect as you save", ""]
    elif install.why:
        lines += [f"Not installed ({install.why}); the steps below install it", ""]
    lines += ["Next steps:", f"  cd {shown}"]
    if not install.installed:
        lines += [f"  {step.replace('python ', python + ' ', 1)}" for step in install_steps(origin)]
    lines += [
        f"  {python} validate.py        # every check should print a check mark",
        f"  {python} -m unittest discover -s tests -v",
        f"  {python} -m {names.package}.server     # MCP over stdio; --http 127.0.0.1:8000 for HTTP",
        f"  mcp-agent-kit install claude-desktop --name {names.dist} -- {python} -m {names.package}.server",
    ]
    return "\n".join(lines) + "\n"
