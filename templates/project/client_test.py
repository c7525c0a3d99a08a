"""Call ${name} as an MCP client would: spawn it over stdio, probe the era, list and call tools."""

import sys

from mcp_agent_kit.client import Client


def main() -> int:
    with Client.stdio(sys.executable, ["-m", "${pkg}.server"]) as client:
        tools = client.list_tools()
        result = client.call_tool("${example_tool}", {"text": "hello world"})
        print(f"era {client.era}: {len(tools)} tool(s); ${example_tool} -> {result['content'][0]['text']}")
        return 1 if result.get("isError") else 0


if __name__ == "__main__":
    sys.exit(main())
