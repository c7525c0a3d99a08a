"""loader: resolves a `MODULE:ATTR` target (a dotted module or a path to a .py file) to an object.

Used by the `serve`, `a2a`, `call`, `list`, `check`, `dev` and `skill new --tools-from` commands.
Without `:ATTR` the server object is found: the first of `server`, `mcp`, `app` that holds a
Server, else the module's one Server instance, else the first of those names that exists (an a2a
Agent named `server`, say). Rules: imports user code, nothing else (the Server class is looked up
in sys.modules: a module that made a Server has imported it). A target that cannot be loaded
because of the user's code (a missing file, a syntax error, an import that fails, a missing
attribute, no server object) raises TargetError whose message names the file:line and the fix;
any other exception in the user's module propagates untouched.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

SHAPE = "targets look like path/to/server.py:server or pkg.module:server"
CONVENTIONAL = ("server", "mcp", "app")  # the names a server object is found by, in this order


class TargetError(ValueError):
    """A target that cannot be loaded; the message says why and what to do."""


def _where(exc: BaseException) -> str:
    """`file:line: ` of the user's code that raised exc (the deepest frame outside importlib and us)."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"{exc.filename}:{exc.lineno}: "
    frames = [
        frame for frame in traceback.extract_tb(exc.__traceback__)
        if not frame.filename.startswith("<") and Path(frame.filename).resolve() != Path(__file__).resolve()
    ]
    return f"{frames[-1].filename}:{frames[-1].lineno}: " if frames else ""


def _user_code_failed(what: str, exc: SyntaxError | ImportError) -> TargetError:
    if isinstance(exc, SyntaxError):
        return TargetError(f"{_where(exc)}syntax error in {what}: {exc.msg}; fix the file and run again")
    if isinstance(exc, ModuleNotFoundError) and exc.name and what.split(".")[0] == exc.name.split(".")[0]:
        return TargetError(f"cannot import {what}: {exc}; check the spelling and run from the directory that "
                           f"holds it, or give a file path ({SHAPE})")
    return TargetError(f"{_where(exc)}{what} failed to import: {exc}; install the missing package or fix the import")


def _load_file(module_part: str) -> ModuleType:
    path = Path(module_part)
    if not path.is_file():
        raise TargetError(f"no such file: {module_part}; check the path ({SHAPE})")
    name = f"_mcp_agent_kit_target_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TargetError(f"cannot import {module_part}; give a .py file ({SHAPE})")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, str(path.resolve().parent))
    try:
        spec.loader.exec_module(module)
    except (SyntaxError, ImportError) as exc:
        del sys.modules[name]
        raise _user_code_failed(module_part, exc) from exc
    return module


def _load_module(module_part: str) -> ModuleType:
    if "" not in sys.path:
        sys.path.insert(0, "")
    try:
        return importlib.import_module(module_part)
    except (SyntaxError, ImportError) as exc:
        raise _user_code_failed(module_part, exc) from exc


def split_target(target: str) -> tuple[str, str | None]:
    """(module part, attribute or None) of `pkg.mod:attr` / `path/file.py:attr` / either without `:attr`."""
    module_part, sep, attr = target.rpartition(":")
    if not sep or "/" in attr or "\\" in attr or attr.endswith(".py"):
        return target, None
    return module_part, attr


def is_file_target(module_part: str) -> bool:
    """A path to a .py file rather than a dotted module name."""
    return module_part.endswith(".py") or "/" in module_part or "\\" in module_part


def find_server(module: ModuleType, where: str) -> Any:
    """The module's server object (see the module docstring); TargetError naming the fix when none or several."""
    server_module = sys.modules.get("mcp_agent_kit.server")
    server_class: Any = getattr(server_module, "Server", None)
    named = [(name, getattr(module, name)) for name in CONVENTIONAL
             if hasattr(module, name) and not isinstance(getattr(module, name), ModuleType)]
    if server_class is not None:
        for _, value in named:
            if isinstance(value, server_class):
                return value
        instances: dict[int, str] = {}
        for name, value in vars(module).items():
            if isinstance(value, server_class) and not name.startswith("__"):
                instances.setdefault(id(value), name)
        if len(instances) == 1:
            return getattr(module, next(iter(instances.values())))
        if len(instances) > 1:
            names = sorted(instances.values())
            raise TargetError(f"{where} has {len(names)} Server objects ({', '.join(names)}); name one after a "
                              f"colon, e.g. {where}:{names[0]}")
    if named:
        return named[0][1]
    raise TargetError(f"{where} has no server object (nothing named server, mcp or app, and no Server instance); "
                      f"name it after a colon ({SHAPE})")


def load_target(target: str, default_attr: str | None = None) -> Any:
    """`pkg.mod:attr`, `path/to/file.py:attr`, or either without `:attr` (then `default_attr` when
    given, else the object find_server finds)."""
    module_part, attr = split_target(target)
    if not module_part:
        raise TargetError(f"no module in {target!r}; {SHAPE}")
    module = _load_file(module_part) if is_file_target(module_part) else _load_module(module_part)
    attr = attr or default_attr
    if attr is None:
        return find_server(module, module_part)
    try:
        return getattr(module, attr)
    except AttributeError as exc:
        raise TargetError(
            f"{module_part} has no attribute {attr!r}; name the server object after the colon ({SHAPE})"
        ) from exc
