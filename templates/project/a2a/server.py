"""The older kit's `python a2a/server.py [PORT]`, kept working: serves ${name} as an A2A v1.0 agent.

This kit's own command is `python -m ${pkg}.a2a_server --http 127.0.0.1:PORT` (card at
/.well-known/agent-card.json; send messages with the A2A v1.0 `SendMessage` method).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the project root, when not installed

from ${pkg}.a2a_server import main  # noqa: E402


if __name__ == "__main__":
    args = sys.argv[1:]
    if args and args[0].isdigit():  # the older kit took the port as its only argument
        args = ["--http", f"127.0.0.1:{args[0]}", *args[1:]]
    print(f"note: this kit's command is: python -m ${pkg}.a2a_server {' '.join(args)}", file=sys.stderr)
    main(args)
