"""devtools: the developer loop from the shell — `call`, `list`, `check` and `dev` (the MCP Inspector).

Each command takes a SERVER (a kit server file or module, `file.py[:obj]`, or an http(s) URL) or
`-- CMD ARGS...` (any stdio server). Rules: front doors over client/ (the dual-era Client), the
loader and scaffold.checks (the design rules of validate.py); nothing here serves MCP itself.
"""
