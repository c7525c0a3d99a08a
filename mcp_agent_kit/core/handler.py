"""handler: a user callable plus how to call it (its Context parameter, async-ness, conversions).

A raw handler (Registry.add_raw_tool) is called `fn(ctx, arguments)` instead.
Rules: introspection happens once, at registration; `convert` is on the hot path and does
nothing for a handler with nothing to convert. Knows nothing of MCP shapes or eras.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from mcp_agent_kit.core.signature import context_parameter, converters, parameters_schema


def _context_type() -> type:
    from mcp_agent_kit.core.context import Context

    return Context


class Handler:
    """A user callable plus how to call it."""

    __slots__ = ("accepts", "context_arg", "converters", "fn", "is_async", "plain", "raw", "takes_kwargs")

    def __init__(
        self,
        fn: Callable[..., Any],
        context_arg: str | None,
        takes_kwargs: bool,
        is_async: bool,
        converters: dict[str, Callable[[Any], Any]] | None = None,
    ) -> None:
        self.fn = fn
        self.context_arg = context_arg
        self.takes_kwargs = takes_kwargs
        self.is_async = is_async
        self.plain = context_arg is None and not is_async  # callable directly: no Context, no event loop
        self.raw = False  # a raw tool's fn(ctx, arguments) (Registry.add_raw_tool), not fn(**arguments)
        self.converters = converters or {}
        # The argument names fn can receive (None: it takes **kwargs, so any name).
        self.accepts: frozenset[str] | None = None
        if not takes_kwargs:
            self.accepts = frozenset(inspect.signature(fn).parameters) - {context_arg}

    @classmethod
    def wrap(cls, fn: Callable[..., Any]) -> Handler:
        ctx = context_parameter(fn, _context_type())
        skip = frozenset({ctx}) if ctx else frozenset()
        _, takes_kwargs = parameters_schema(fn, skip)
        return cls(fn, ctx, takes_kwargs, inspect.iscoroutinefunction(fn), converters(fn, skip))

    def convert(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Arguments as the handler can take them: names it does not accept are dropped (a schema
        may allow extra properties the function has no parameter for), Enum members and numbers
        converted; ValueError if a value does not convert."""
        accepts = self.accepts
        if accepts is not None and not accepts.issuperset(arguments):
            arguments = {key: value for key, value in arguments.items() if key in accepts}
        if not self.converters:
            return arguments
        converted = dict(arguments)
        for name, convert in self.converters.items():
            if name in converted and converted[name] is not None:
                try:
                    converted[name] = convert(converted[name])
                except (ValueError, KeyError, TypeError) as exc:
                    raise ValueError(f"argument {name!r}: cannot convert {converted[name]!r}") from exc
        return converted
