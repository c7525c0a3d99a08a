"""finish: the last steps of creating a project: the kit's wheel copied in, the next steps printed.

When the kit came from a wheel file, the project gets a copy of it under wheels/ so that its CI
workflow and Dockerfile install the very kit that made it. Rules: writes only that one file, only
inside the new project, and never over an existing file; knows nothing of templates.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from mcp_agent_kit.scaffold.names import Names
from mcp_agent_kit.scaffold.origin import WHEELS_DIR, Origin


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


def next_steps(names: Names, path: Path, shown: Path, origin: Origin) -> str:
    """What to run next, with this interpreter's absolute path so the steps use the right kit."""
    from mcp_agent_kit.scaffold.render import describe_origin, install_steps

    python = sys.executable
    lines = [f"Created {path}", ""]
    if not origin.from_index:
        lines += [f"note: this is {describe_origin(origin)}; README.md, the CI workflow and the Dockerfile",
                  "      install that kit (MCP_AGENT_KIT_SPEC overrides it)", ""]
    lines += ["Next steps:", f"  cd {shown}"]
    lines += [f"  {step.replace('python ', python + ' ', 1)}" for step in install_steps(origin)]
    lines += [
        f"  {python} validate.py        # every check should print a check mark",
        f"  {python} -m unittest discover -s tests -v",
        f"  {python} -m {names.package}.server     # MCP over stdio; --http 127.0.0.1:8000 for HTTP",
        f"  mcp-agent-kit install claude-desktop --name {names.dist} -- {python} -m {names.package}.server",
    ]
    return "\n".join(lines) + "\n"
