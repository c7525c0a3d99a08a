"""Bearer-token near misses shared by the MCP and A2A auth tests: each must be refused with 401."""

from __future__ import annotations

TOKEN = "s3cret-token-0123"
OTHER = "another-token-9876"
NEAR_MISSES = {
    "appended": f"Bearer {TOKEN}x",
    "prepended": f"Bearer x{TOKEN}",
    "prefix": f"Bearer {TOKEN[:-1]}",
    "short prefix": f"Bearer {TOKEN[:4]}",
    "suffix": f"Bearer {TOKEN[1:]}",
    "both tokens": f"Bearer {TOKEN}{OTHER}",
    "basic scheme": f"Basic {TOKEN}",
    "no scheme": TOKEN,
    "wrong token": "Bearer wrong",
    "empty bearer": "Bearer ",
    "no header": "",
}
