"""Prove ${name} is compliant: `python validate.py [--json] [--fix]`, from any directory; exit 1 on any failure."""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent  # this project, wherever validate.py is run from


def _kit_missing(exc: ImportError) -> int:
    fix = f"{sys.executable} -m pip install -e {ROOT}"
    problem = f"mcp-agent-kit cannot be imported by {sys.executable} ({exc})"
    if "--json" in sys.argv[1:]:
        row = {"check": "mcp-agent-kit installed", "ok": False, "detail": f"{problem}; run: {fix}"}
        print(json.dumps({"ok": False, "checks": [row]}, indent=2))
    else:
        print(f"✗ mcp-agent-kit installed: {problem}; run: {fix}")
    return 1


if __name__ == "__main__":
    try:
        from mcp_agent_kit.scaffold.checks import main
    except ImportError as exc:
        sys.exit(_kit_missing(exc))
    sys.exit(main(sys.argv[1:], target="${pkg}.server:server", name="${name}", root=ROOT))
