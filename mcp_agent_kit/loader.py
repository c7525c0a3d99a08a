"""loader: resolves a `MODULE:ATTR` target (a dotted module or a path to a .py file) to an object.

Used by the `serve`, `a2a` and gateway commands. Rules: imports user code, nothing else.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any


class TargetError(ValueError):
    """A target that cannot be loaded; the message says why."""


def load_target(target: str, default_attr: str = "server") -> Any:
    """`pkg.mod:attr`, `path/to/file.py:attr`, or either without `:attr` (then `server`)."""
    module_part, sep, attr = target.rpartition(":")
    if not sep or ("/" in attr or attr.endswith(".py")):
        module_part, attr = target, default_attr
    if module_part.endswith(".py") or "/" in module_part or "\\" in module_part:
        path = Path(module_part)
        if not path.is_file():
            raise TargetError(f"no such file: {module_part}")
        name = f"_mcp_agent_kit_target_{path.stem}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise TargetError(f"cannot import {module_part}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        sys.path.insert(0, str(path.resolve().parent))
        spec.loader.exec_module(module)
    else:
        if "" not in sys.path:
            sys.path.insert(0, "")
        try:
            module = importlib.import_module(module_part)
        except ImportError as exc:
            raise TargetError(f"cannot import {module_part}: {exc}") from exc
    try:
        return getattr(module, attr)
    except AttributeError as exc:
        raise TargetError(f"{module_part} has no attribute {attr!r}") from exc
