"""sandbox: run a spawned agent under bubblewrap (`"sandbox": "bwrap"` on an ACP agent entry), Linux only.

`parse(entry, where)` reads an entry's `sandbox`, `network`, `binds` and `writable` keys into a frozen Sandbox
(None without `sandbox`) and checks that bwrap can be found (`find_bwrap`: Linux and a `bwrap` program, else
SandboxUnavailable, one line naming the fix); `bwrap_argv(command, workspace=..., ...)` is the command line
that runs `command` inside, and `Sandbox.wrap` the same for a configured entry. The layout, in bwrap's order
(a later mount covers an earlier one):
- the whole system read-only (`--ro-bind / /`), a fresh `/dev` and `/proc`, a private `/tmp` (tmpfs);
- the home directories absent: an empty tmpfs over the agent's `$HOME`, ours, `/home`, `/root` and
  `/run/user` (the per-user sockets: ssh-agent, D-Bus), those that exist;
- `binds` read-only, then the workspace writable (where the agent starts), its `.git` read-only again (its
  config and hooks are read by the git that runs outside: the board's, the person's), then `writable`;
- new PID, IPC and UTS namespaces (`--unshare-pid`: when the agent ends, every process it started ends with
  it, however it detached), no network when `network` is false (`--unshare-net`: loopback included), no
  capabilities (`--cap-drop ALL`: a root agent keeps none), `--new-session` (no terminal injection) and
  `--die-with-parent` (the sandbox dies with the process that spawned it).
The environment is the one the caller gives the bwrap process (bwrap passes it on). A relative program path
(`./agent`) is made absolute first: it names a file relative to our cwd, as ACP's rule is. What the
sandbox does not stop is in docs/sandbox.md. Rules: builds argument lists and starts nothing; a mistake is
one SandboxError line naming the key; imports nothing of ours.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

KINDS = ("bwrap",)
KEYS = ("sandbox", "network", "binds", "writable")
FALLBACK = "/usr/bin/bwrap"  # Debian's bubblewrap, when PATH does not name one
PLATFORM = sys.platform
HIDDEN = ("/home", "/root", "/run/user")  # beside $HOME: every user's home and per-user runtime sockets
INSTALL = "apt-get install bubblewrap (Fedora: dnf install bubblewrap)"


class SandboxError(ValueError):
    """A sandbox setting is wrong (one line naming the key and the fix)."""


class SandboxUnavailable(SandboxError):
    """bwrap cannot run here: not Linux, or not installed."""


def find_bwrap() -> str:
    """The bwrap program to run; SandboxUnavailable naming the fix when there is none (or this is not Linux)."""
    if not PLATFORM.startswith("linux"):
        raise SandboxUnavailable(f'"sandbox": "bwrap" needs Linux (this is {PLATFORM}): remove "sandbox" from the '
                                 "agent's entry or run the agent on a Linux host")
    found = shutil.which("bwrap") or (FALLBACK if os.access(FALLBACK, os.X_OK) else None)
    if found is None:
        raise SandboxUnavailable(f'"sandbox": "bwrap" needs bubblewrap, which is not installed: {INSTALL}')
    return found


@dataclass(frozen=True)
class Sandbox:
    """One agent entry's sandbox: `network` allowed or not, `binds` read-only, `writable` besides the workspace."""

    kind: str = "bwrap"
    network: bool = True
    binds: tuple[str, ...] = ()
    writable: tuple[str, ...] = ()

    def wrap(self, command: Sequence[str], *, workspace: str, cwd: str | None = None,
             env: Mapping[str, str] | None = None, optional: Iterable[str] = ()) -> list[str]:
        """`command` as run inside this sandbox (see bwrap_argv); SandboxUnavailable when bwrap cannot run."""
        return bwrap_argv(command, workspace=workspace, network=self.network, binds=self.binds,
                          writable=self.writable, env=env, cwd=cwd, optional=optional)


def _paths(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise SandboxError(f'{where} must be a list of absolute paths (e.g. ["~/.npm", "/opt/tools"])')
    out = []
    for item in value:
        path = os.path.normpath(os.path.expanduser(item))
        if not os.path.isabs(path) or "\0" in path:
            raise SandboxError(f"{where}: {item!r} is not an absolute path: write it from / (or ~/)")
        if path == "/":
            raise SandboxError(f"{where}: '/' would undo the sandbox: list the directories the agent needs")
        out.append(path)
    return tuple(out)


def parse(entry: Mapping[str, Any], where: str) -> Sandbox | None:
    """The Sandbox of an agent entry's keys (None when it has no `sandbox`); SandboxError names the wrong key,
    SandboxUnavailable says how to get bwrap."""
    kind = entry.get("sandbox")
    if kind is None:
        stray = [key for key in KEYS[1:] if key in entry]
        if stray:
            raise SandboxError(f'{where} {stray[0]} applies to a sandbox: add "sandbox": "bwrap" or remove it')
        return None
    if kind not in KINDS:
        raise SandboxError(f"{where} sandbox must be one of {list(KINDS)}, not {kind!r}")
    network = entry.get("network", True)
    if not isinstance(network, bool):
        raise SandboxError(f"{where} network must be true or false, not {network!r}")
    sandbox = Sandbox(kind, network, _paths(entry.get("binds", []), f"{where} binds"),
                      _paths(entry.get("writable", []), f"{where} writable"))
    find_bwrap()
    return sandbox


def _hidden(env: Mapping[str, str] | None) -> list[str]:
    """The home directories to cover, existing ones only, none inside another (a parent's tmpfs hides it)."""
    homes = [(env or {}).get("HOME", ""), os.path.expanduser("~"), *HIDDEN]
    found: list[str] = []
    for home in sorted({os.path.normpath(home) for home in homes if home and os.path.isabs(home)}):
        if home != "/" and os.path.isdir(home) and not any(home.startswith(top + "/") for top in found):
            found.append(home)
    return found


def bwrap_argv(command: Sequence[str], *, workspace: str, network: bool = True, binds: Iterable[str] = (),
               writable: Iterable[str] = (), env: Mapping[str, str] | None = None, cwd: str | None = None,
               optional: Iterable[str] = ()) -> list[str]:
    """The bwrap command line that runs `command` with `workspace` writable (see the module docstring).

    `env`: the environment the command will get (its HOME is hidden too); `cwd`: where it starts (default: the
    workspace); `optional`: read-only binds of paths that may not exist (what a caller of ours needs inside,
    such as the kit's own files), placed with `binds`."""
    if not command:
        raise SandboxError("no command given to run in the sandbox")
    program = command[0]
    if os.sep in program and not os.path.isabs(program):
        program = os.path.abspath(program)
    workspace = os.path.abspath(workspace)
    argv = [find_bwrap(), "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    if not network:
        argv.append("--unshare-net")
    argv += ["--cap-drop", "ALL", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for home in _hidden(env):
        argv += ["--tmpfs", home]
    for path in optional:
        argv += ["--ro-bind-try", path, path]
    for path in binds:
        argv += ["--ro-bind", path, path]
    argv += ["--bind", workspace, workspace]
    git = os.path.join(workspace, ".git")
    if os.path.lexists(git):
        argv += ["--ro-bind", git, git]
    for path in writable:
        argv += ["--bind", path, path]
    argv += ["--chdir", os.path.abspath(cwd) if cwd else workspace, "--", program, *command[1:]]
    return argv
