"""Thin entry point: `python server.py` serves ${name} on stdio (add `--http HOST:PORT` for HTTP)."""

from ${pkg}.server import main

if __name__ == "__main__":
    main()
