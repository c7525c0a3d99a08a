"""The same metrics tool on the official MCP Python SDK (mcp 2.3.0), as a peer for bench/."""

from typing import Literal

from mcp.server.mcpserver import MCPServer

server = MCPServer("metrics-sdk")
METRICS = {"mean": lambda v: sum(v) / len(v), "sum": sum, "max": max, "min": min}


@server.tool()
def calculate_metrics(values: list[float], metric_type: Literal["mean", "sum", "max", "min"] = "mean") -> dict:
    """Use when you need the mean, sum, max or min of a list of numbers."""
    return {"metric": metric_type, "value": METRICS[metric_type](values), "count": len(values)}


if __name__ == "__main__":
    server.run()
