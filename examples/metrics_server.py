"""A small MCP server: summary statistics over a list of numbers.

Run it on stdio with `python examples/metrics_server.py`, or over Streamable HTTP with
`python examples/metrics_server.py --http 127.0.0.1:8000`. The `server` object is what
`python -m mcp_agent_kit serve` and `a2a` pick up.
"""

from __future__ import annotations

from typing import Annotated, Literal

from mcp_agent_kit import Server

server = Server(
    "metrics",
    "1.0.0",
    title="Metrics",
    instructions="Use calculate_metrics to summarise a list of numbers.",
)

METRICS = {
    "mean": lambda values: sum(values) / len(values),
    "sum": sum,
    "max": max,
    "min": min,
}


@server.tool(
    read_only=True,
    idempotent=True,
    open_world=False,
    input_schema={
        "type": "object",
        "properties": {
            "values": {
                "type": "array",
                "items": {"type": "number"},
                "minItems": 1,
                "description": "The numbers to summarise.",
            },
            "metric_type": {
                "type": "string",
                "enum": ["mean", "sum", "max", "min"],
                "default": "mean",
                "description": "Which statistic to compute.",
            },
        },
        "required": ["values"],
        "additionalProperties": False,
    },
    output_schema={
        "type": "object",
        "properties": {
            "metric": {"type": "string"},
            "value": {"type": "number"},
            "count": {"type": "integer"},
        },
        "required": ["metric", "value", "count"],
    },
)
def calculate_metrics(
    values: Annotated[list[float], "The numbers to summarise."],
    metric_type: Literal["mean", "sum", "max", "min"] = "mean",
) -> dict[str, object]:
    """Use when you need the mean, sum, max or min of a list of numbers. Do not use for text or dates."""
    return {"metric": metric_type, "value": METRICS[metric_type](values), "count": len(values)}


@server.resource("metrics://catalog", name="catalog", mime_type="application/json")
def catalog() -> dict[str, object]:
    """The metrics this server can compute."""
    return {"metrics": sorted(METRICS), "input": "a non-empty list of numbers"}


@server.prompt()
def summarize_numbers(numbers: str, metric_type: str = "mean") -> str:
    """Ask the model to summarise a comma-separated list of numbers."""
    return (
        f"Compute the {metric_type} of these numbers with the calculate_metrics tool, "
        f"then explain the result in one sentence: {numbers}"
    )


@server.completion(prompt="summarize_numbers")
def complete_metric(argument: str, value: str, context: dict[str, str]) -> list[str]:
    if argument != "metric_type":
        return []
    return [name for name in sorted(METRICS) if name.startswith(value)]


if __name__ == "__main__":
    server.run()
