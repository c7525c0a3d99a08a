"""render: builds the file set of a new project from templates/ with string.Template.

Template paths may contain `__pkg__` (the Python package) and a leading `dot-` (a dotfile);
contents use `${name}`-style placeholders and `$$` for a literal dollar. The generated skill and
plugin package come from the packaging layer, fed with the example server's tool definitions.
Rules: returns `{relative path: text}`; writing to disk is `write_project`'s job, and it never
overwrites a path it did not generate itself, nor writes through a symlinked directory: with
--force every path's parents must resolve inside the project, checked for all paths before the
first write. Templates, the manifest and files compared by digest are read through safefile
(regular files, at most 1 MiB).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.resources
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from string import Template
from typing import Any

from mcp_agent_kit import __version__
from mcp_agent_kit.safefile import UnsafeFileError, check_parent_inside
from mcp_agent_kit.safefile import read_text as safe_read_text
from mcp_agent_kit.scaffold.names import Names
from mcp_agent_kit.scaffold.origin import WHEELS_DIR, Origin, find_origin

MANIFEST = ".mcp-agent-kit.json"  # records what we generated, so --force only replaces our own files
EXAMPLE_TOOL = "text_stats"
MAX_SKILL_DESCRIPTION = 1024  # the Agent Skills limit on a description
_ANGLES = str.maketrans("<>", "‹›")  # skill descriptions may not hold angle brackets


def template_root() -> Path:
    """templates/project, from a source checkout or from inside the installed wheel."""
    here = Path(__file__).resolve().parent
    for candidate in (here.parent / "templates" / "project", here.parent.parent / "templates" / "project"):
        if candidate.is_dir():
            return candidate
    return Path(str(importlib.resources.files("mcp_agent_kit.templates") / "project"))


def _walk(root: Path) -> Iterator[Path]:
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            yield path


def _target_path(rel: Path, names: Names) -> str:
    parts = [part.replace("__pkg__", names.package) for part in rel.parts]
    parts = ["." + part[4:] if part.startswith("dot-") else part for part in parts]
    return "/".join(parts)


def describe_origin(origin: Origin) -> str:
    """One line: where the kit that made the project came from."""
    where = f" ({origin.local})" if origin.local is not None else ""
    return {
        "index": f"mcp-agent-kit {__version__} from the package index",
        "wheel": f"mcp-agent-kit {__version__} from a wheel file{where}, not from PyPI",
        "checkout": f"mcp-agent-kit {__version__} from a local checkout{where}, not from PyPI",
        "url": f"mcp-agent-kit {__version__} from {origin.spec.partition(' @ ')[2] or 'a URL'}, not from PyPI",
    }[origin.kind]


def install_steps(origin: Origin) -> list[str]:
    """The commands that install a new project against the kit that made it (run in the project)."""
    if origin.kind == "index":
        return ["python -m pip install -e ."]
    if not origin.spec:  # a checkout (or a wheel that is gone): only this machine knows where it is
        first = f"python -m pip install {origin.local}" if origin.local else "python -m pip install <mcp-agent-kit>"
        return [first, "python -m pip install -e ."]
    return [f'python -m pip install "{origin.spec}"', "python -m pip install -e ."]


def _install_markdown(origin: Origin) -> str:
    commands = "\n".join(install_steps(origin))
    text = f"```bash\n{commands}\n```\n"
    if origin.kind == "index":
        return f"{text}\nThis also installs mcp-agent-kit>={__version__} from PyPI."
    note = f"\nThis project was made with {describe_origin(origin)}"
    if origin.kind == "wheel" and origin.spec:
        return text + note + (
            f"; a copy of that wheel is in `{WHEELS_DIR}/`, and the CI workflow and the Dockerfile install"
            " the kit from it."
        )
    if not origin.spec:
        return text + note + (
            ", so install that kit first. In CI, set the repository variable"
            " `MCP_AGENT_KIT_SPEC` to a pip requirement CI can reach (a wheel committed to this repository such as"
            " `./wheels/mcp_agent_kit-" + __version__ + "-py3-none-any.whl`, a wheel URL, or"
            " `mcp-agent-kit @ git+https://...`); for Docker, pass the same with"
            " `--build-arg MCP_AGENT_KIT_SPEC=...`."
        )
    return text + note + "; the CI workflow and the Dockerfile install it from the same place."


def variables(names: Names, description: str, origin: Origin | None = None) -> dict[str, str]:
    origin = origin or find_origin()
    return {
        "kit_origin": describe_origin(origin),
        "kit_spec": origin.spec,
        "kit_install_md": _install_markdown(origin),
        "name": names.dist,
        "pkg": names.package,
        "title_py": repr(names.title),
        "desc_md": description,
        "desc_py": repr(description),
        "desc_toml": json.dumps(description),
        "kit_version": __version__,
        "example_tool": EXAMPLE_TOOL,
    }


def render_templates(names: Names, description: str, origin: Origin | None = None) -> dict[str, str]:
    values = variables(names, description, origin)
    root = template_root()
    files: dict[str, str] = {}
    for path in _walk(root):
        rel = path.relative_to(root)
        try:
            files[_target_path(rel, names)] = Template(safe_read_text(path)).substitute(values)
        except (KeyError, ValueError) as exc:
            raise RuntimeError(f"template {rel} has a bad placeholder: {exc}") from exc
    return files


def tool_definitions(files: dict[str, str], names: Names) -> list[dict[str, Any]]:
    """Import the rendered server in isolation and list its tools' wire definitions."""
    with tempfile.TemporaryDirectory() as tmp:
        for rel, text in files.items():
            if rel.startswith(names.package + "/") and rel.endswith(".py"):
                path = Path(tmp, rel)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
        mine = names.package + "."
        saved = {key: mod for key, mod in sys.modules.items() if key == names.package or key.startswith(mine)}
        for key in saved:
            del sys.modules[key]
        sys.path.insert(0, tmp)
        try:
            module = importlib.import_module(f"{names.package}.server")
            return [tool.wire for tool in module.server.listing("tools")]
        finally:
            sys.path.remove(tmp)
            for key in [k for k in sys.modules if k == names.package or k.startswith(names.package + ".")]:
                del sys.modules[key]
            sys.modules.update(saved)


def packaging_files(tools: list[dict[str, Any]], names: Names, description: str) -> dict[str, str]:
    """The skill (skills/<name>/) and the Agent Plugins package (plugin/) for these tools."""
    from mcp_agent_kit.packaging.plugin_build import PluginSpec, plugin_files
    from mcp_agent_kit.packaging.skill_generate import render_skill

    about = skill_description(description, names, tools)
    skill = render_skill(tools, name=names.dist, description=about, version="0.1.0")
    files = {f"skills/{names.dist}/{rel}": text for rel, text in skill.items()}
    spec = PluginSpec(
        name=names.dist,
        description=description,
        command=names.dist,
        url="http://127.0.0.1:8000/mcp",
        skill_files=[skill],
    )
    files.update({f"plugin/{rel}": text for rel, text in plugin_files(spec).items()})
    files.update({f"plugin/skills/{names.dist}/{rel}": text for rel, text in skill.items()})
    return files


def skill_description(description: str, names: Names, tools: Sequence[dict[str, Any]] = ()) -> str:
    """The skill's description, in the kit's "Use when X. Do not use for Y." form.

    A description already in that form is kept. Otherwise the agent's description leads and the
    tools' own purposes say when to pick the skill: "Reports statistics about text. Use when you
    need the number of words in a text. Do not use for counting tokens." (one tool: its exclusion;
    several: whatever none of them covers). Angle brackets from tool text become ‹ ›.
    """
    from mcp_agent_kit.packaging.skill_generate import purpose

    text = " ".join(description.split()).rstrip(".")
    if text.lower().startswith("use when"):
        return text + ("." if "do not use" in text.lower() else f". Do not use for tasks outside {names.dist}.")
    lead = f"{text}. " if text else ""
    found = [(str(tool.get("name", "")), *purpose(str(tool.get("description") or ""))) for tool in tools]
    uses = [(use or f"a task calls for {name}").translate(_ANGLES) for name, use, _ in found]
    avoids = [avoid for _, _, avoid in found]
    avoid = (avoids[0] or "").translate(_ANGLES) if len(found) == 1 else ""
    tail = f". Do not use for {avoid or 'anything none of its tools covers'}."
    if not uses:
        return f"{lead}Use when you need {names.title}{tail}"
    when, rest = "Use when " + uses[0], f", or when another of its {len(uses)} tools fits"
    for use in uses[1:]:
        if len(lead + when + f", or when {use}" + rest + tail) > MAX_SKILL_DESCRIPTION:
            when += rest
            break
        when += f", or when {use}"
    return lead + when + tail if len(lead + when + tail) <= MAX_SKILL_DESCRIPTION else when + tail


def render_project(names: Names, description: str, origin: Origin | None = None) -> dict[str, str]:
    files = render_templates(names, description, origin)
    files.update(packaging_files(tool_definitions(files, names), names, description))
    return dict(sorted(files.items()))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _manifest(files: dict[str, str], previous: dict[str, str] | None = None) -> str:
    """The manifest text: previous digests (still ours) updated with the files just written."""
    digests = dict(previous or {})
    digests.update({rel: _digest(text) for rel, text in files.items()})
    record = {"generator": f"mcp-agent-kit {__version__}", "files": digests}
    return json.dumps(record, indent=2, sort_keys=True) + "\n"


class ExistsError(FileExistsError):
    """The target exists and we may not replace it."""


@dataclass
class Written:
    """What write_project did: made the project, or (--force) which files it rewrote, added or kept."""

    created: bool = False
    updated: list[str] = field(default_factory=list)  # ours and unchanged by you, with new content
    added: list[str] = field(default_factory=list)  # missing, written again
    kept: list[str] = field(default_factory=list)  # changed by you (or not ours): left alone

    def summary(self, path: Path) -> str:
        """One line: "Created PATH", "Updated PATH: ...", or "Refreshed PATH: ... already up to date"."""
        if self.created:
            return f"Created {path}"
        if not (self.updated or self.added):
            return f"Refreshed {path}: every file it generated is already up to date"
        done = [f"{len(self.updated)} file(s) rewritten"] if self.updated else []
        done += [f"{len(self.added)} added"] if self.added else []
        return f"Updated {path}: " + ", ".join(done)


def write_project(files: dict[str, str], target: Path, *, force: bool = False) -> Written:
    """Write a new project atomically; says what was written and which paths the user changed (kept).

    A new project is written into a temporary sibling and renamed into place, so a failure leaves
    nothing half-made. An existing path is never touched without force; with force, only files we
    generated and the user left unchanged are replaced (each atomically, and only when their text
    changes), missing ones are added, and everything else is kept.
    """
    target = target.absolute()
    if not (target.exists() or target.is_symlink()):
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
        try:
            _write_all(staging, {**files, MANIFEST: _manifest(files)})
            umask = os.umask(0)
            os.umask(umask)
            staging.chmod(0o777 & ~umask)  # mkdtemp made it private
            os.rename(staging, target)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return Written(created=True)
    if not force:
        raise ExistsError(f"{target} already exists; nothing was written (--force regenerates a project we made)")
    previous = _read_manifest(target)
    refuse_outside(target, [*files, MANIFEST])
    result = Written()
    for rel, text in files.items():
        path = target / rel
        if path.is_symlink() or (path.exists() and not _unchanged(path, previous.get(rel))):
            result.kept.append(rel)
            previous.pop(rel, None)  # the user's file now: never replaced later either
            continue
        if not path.exists():
            result.added.append(rel)
        elif previous.get(rel) != _digest(text):
            result.updated.append(rel)
        else:
            continue  # already this text
        _write_atomic(path, text)
    _write_atomic(target / MANIFEST, _manifest({rel: files[rel] for rel in result.added + result.updated}, previous))
    return result


def refuse_outside(target: Path, rels: list[str]) -> None:
    """ExistsError (one line) when any ``target/rel`` would be written through a symlink out of ``target``."""
    for rel in rels:
        try:
            check_parent_inside(target / rel, target)
        except UnsafeFileError as exc:
            raise ExistsError(f"{exc}; nothing was written") from exc


def _read_manifest(target: Path) -> dict[str, str]:
    manifest = target / MANIFEST
    if target.is_symlink() or not target.is_dir() or not manifest.is_file():
        raise ExistsError(f"{target} was not generated by mcp-agent-kit; refusing to touch it")
    try:
        files = json.loads(safe_read_text(manifest, root=target)).get("files", {})
    except (ValueError, AttributeError, OSError) as exc:
        raise ExistsError(f"{manifest} is damaged; refusing to touch {target}") from exc
    return {str(k): str(v) for k, v in files.items()} if isinstance(files, dict) else {}


def _unchanged(path: Path, digest: str | None) -> bool:
    try:
        return digest is not None and _digest(safe_read_text(path, root=path.parent)) == digest
    except (OSError, UnicodeDecodeError):
        return False


def _write_all(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
