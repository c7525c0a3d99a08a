"""Prove ${name} is compliant: `python validate.py [--json] [--fix]`; exit 1 on any failure."""

import sys

from mcp_agent_kit.scaffold.checks import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], target="${pkg}.server:server", name="${name}"))
