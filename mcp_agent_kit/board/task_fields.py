"""board.task_fields: the board task object — its fields, their bounds, and the checks on every input.

A task is a plain JSON object with exactly FIELDS (always all present; None where unset, but `metadata`,
an object, {} where unset), the names surfaces show (`blockedBy`, `sessionId`, `createdAt`, ...). `owner`
is the principal that created the task (None without authentication); `metadata` is the caller's own
JSON object (at most METADATA_MAX bytes as JSON), kept and returned as given; `labels` ([] where unset) are the
labels an agent host must have to run the task, `host` the id of the host it runs (ran) on, None for this
machine. Times are ISO 8601 UTC with milliseconds and a `Z`. `checked(fields)` validates what a caller may
change after creation (UPDATABLE: a table of field -> check), raising TaskInvalid with one line naming the field
and the rule. Rules: pure; no store, no state machine (board.states owns `state`).
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from mcp_agent_kit.board.errors import TaskInvalid

FIELDS = ("id", "title", "prompt", "agent", "priority", "state", "waiting", "blockedBy", "branch", "base",
          "workspace", "question", "result", "error", "sessionId", "createdAt", "startedAt", "endedAt",
          "progress",  # progress: the status line the task's agent last reported (report_progress), None before
          "owner", "metadata",
          "labels", "host")  # labels: what a host must have to run it (board.hosts); host: where it runs (None: here)
PRIORITIES = ("urgent", "high", "normal", "low")  # most urgent first
DEFAULT_PRIORITY = "normal"
QUESTION_KINDS = ("permission", "question")

ID_MAX = 64  # board.workspaces names worktrees and branches after it (a hash for a long or dotted one)
TITLE_MAX = 200
TITLE_FROM_PROMPT = 80  # a title derived from the prompt's first line is cut here
PROMPT_MAX = 100_000
NAME_MAX = 100  # an agent id
REF_MAX = 250  # a git ref (base, branch)
PATH_MAX = 4096
TEXT_MAX = 200_000  # result, error, waiting, a question's message
PROGRESS_MAX = 1000  # a status line (report_progress)
OWNER_MAX = 256  # a principal
METADATA_MAX = 16 * 1024  # the metadata object as compact JSON, in UTF-8 bytes
BLOCKERS_MAX = 50
LABELS_MAX = 20
OPTIONS_MAX = 50
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_BAD_REF = re.compile(r"[\x00-\x20\x7f]|^-")  # git itself checks the rest when it resolves the ref


def iso(seconds: float) -> str:
    """Wall-clock seconds as the task's time text: 2026-01-02T03:04:05.678Z."""
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def derive_title(prompt: str) -> str:
    """A title from the prompt: its first non-blank line, whitespace collapsed, cut at a word near TITLE_FROM_PROMPT."""
    line = next((" ".join(part.split()) for part in prompt.splitlines() if part.strip()), "")
    if len(line) <= TITLE_FROM_PROMPT:
        return line
    cut = line[:TITLE_FROM_PROMPT - 1]
    if " " in cut[TITLE_FROM_PROMPT // 2:]:
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,.;:") + "…"


def _text(name: str, value: Any, most: int, *, empty: bool = True) -> str:
    if not isinstance(value, str):
        raise TaskInvalid(f"{name} must be text, not {type(value).__name__}")
    if not empty and not value.strip():
        raise TaskInvalid(f"{name} must not be empty")
    if len(value) > most:
        raise TaskInvalid(f"{name} is {len(value)} characters long; at most {most} are allowed")
    return value


def _optional(check: Callable[[str, Any], Any]) -> Callable[[str, Any], Any]:
    def optional(name: str, value: Any) -> Any:
        return None if value is None else check(name, value)
    return optional


def check_id(name: str, value: Any) -> str:
    text = _text(name, value, ID_MAX, empty=False)
    if not _ID.fullmatch(text):
        raise TaskInvalid(f"{name} {text!r} may hold only letters, digits, '.', '-' and '_' (a letter or digit first)")
    return text


def check_prompt(name: str, value: Any) -> str:
    return _text(name, value, PROMPT_MAX, empty=False)


def check_title(name: str, value: Any) -> str:
    text = " ".join(_text(name, value, TITLE_MAX, empty=False).split())
    return text


def check_agent(name: str, value: Any) -> str:
    text = _text(name, value, NAME_MAX, empty=False)
    if text != text.strip() or any(ch.isspace() or ord(ch) < 32 for ch in text):
        raise TaskInvalid(f"{name} {text!r} must be an agent id without spaces")
    return text


def check_priority(name: str, value: Any) -> str:
    if value not in PRIORITIES:
        raise TaskInvalid(f"unknown {name} {value!r}: use one of {', '.join(PRIORITIES)}")
    return str(value)


def check_ref(name: str, value: Any) -> str:
    text = _text(name, value, REF_MAX, empty=False)
    if _BAD_REF.search(text):
        raise TaskInvalid(f"{name} {text!r} is not a git revision (no spaces or control characters, no leading '-')")
    return text


def check_path(name: str, value: Any) -> str:
    return _text(name, value, PATH_MAX, empty=False)


def check_long_text(name: str, value: Any) -> str:
    return _text(name, value, TEXT_MAX)


def check_progress(name: str, value: Any) -> str:
    return _text(name, value, PROGRESS_MAX, empty=False)


def check_session(name: str, value: Any) -> str:
    return _text(name, value, REF_MAX, empty=False)


def check_owner(name: str, value: Any) -> str:
    return _text(name, value, OWNER_MAX, empty=False)


def check_metadata(name: str, value: Any) -> dict[str, Any]:
    """A JSON object of at most METADATA_MAX bytes (compact JSON, UTF-8); a copy of it."""
    if not isinstance(value, Mapping) or not all(isinstance(key, str) for key in value):
        raise TaskInvalid(f"{name} must be a JSON object (text keys)")
    try:
        encoded = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
    except (TypeError, ValueError) as exc:
        raise TaskInvalid(f"{name} must hold only JSON values ({exc})") from None
    if len(encoded) > METADATA_MAX:
        raise TaskInvalid(f"{name} is {len(encoded)} bytes as JSON; at most {METADATA_MAX} are allowed")
    copied: dict[str, Any] = json.loads(encoded)
    return copied


RESUME_SESSION = "acp_session_id"  # a metadata key: the agent session a new task's first turn loads


def resumed_session(metadata: Mapping[str, Any]) -> str | None:
    """The agent session a new task continues (the seed's session-resumption flow: a follow-up task carries a
    finished task's `sessionId` as `metadata.acp_session_id`); None when absent. Its first turn then does
    `session/load` of it when the agent can load sessions (board.runner says so in the transcript otherwise)."""
    value = metadata.get(RESUME_SESSION)
    if value is None:
        return None
    if not isinstance(value, str) or not 0 < len(value) <= 256 or not value.isprintable():
        raise TaskInvalid(f"metadata.{RESUME_SESSION} must be an agent session id (text, at most 256 characters)")
    return value


def check_labels(name: str, value: Any) -> list[str]:
    """A list of labels (each like an id: letters, digits, '.', '-', '_'), duplicates dropped, order kept."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise TaskInvalid(f"{name} must be a list of labels (e.g. [\"gpu\"])")
    labels = list(itertools.islice(value, LABELS_MAX + 1))
    if len(labels) > LABELS_MAX:
        raise TaskInvalid(f"{name} holds more than {LABELS_MAX} labels; at most {LABELS_MAX} are allowed")
    return list(dict.fromkeys(check_id(name, label) for label in labels))


def check_question(name: str, value: Any) -> dict[str, Any]:
    """`{"kind": "permission"|"question", "message", "options": [{"id", "name", "kind"}] | "schema": {...}}`."""
    if not isinstance(value, Mapping):
        raise TaskInvalid(f"{name} must be an object with kind, message and options or schema")
    extra = sorted(set(value) - {"kind", "message", "options", "schema"})
    if extra:
        raise TaskInvalid(f"{name} has unknown fields {extra}: use kind, message, options, schema")
    if value.get("kind") not in QUESTION_KINDS:
        raise TaskInvalid(f"{name}.kind must be one of {', '.join(QUESTION_KINDS)}, not {value.get('kind')!r}")
    question: dict[str, Any] = {"kind": value["kind"], "message": _text(f"{name}.message", value.get("message"),
                                                                       TEXT_MAX)}
    options = value.get("options")
    if options is not None:
        if not isinstance(options, list) or len(options) > OPTIONS_MAX:
            raise TaskInvalid(f"{name}.options must be a list of at most {OPTIONS_MAX} options")
        question["options"] = [_option(f"{name}.options[{i}]", option) for i, option in enumerate(options)]
    schema = value.get("schema")
    if schema is not None:
        if not isinstance(schema, Mapping):
            raise TaskInvalid(f"{name}.schema must be a JSON schema object")
        question["schema"] = dict(schema)
    return question


def _option(name: str, option: Any) -> dict[str, str]:
    if not isinstance(option, Mapping) or not all(isinstance(option.get(k), str) for k in ("id", "name", "kind")):
        raise TaskInvalid(f"{name} must be an object with text id, name and kind")
    return {k: _text(f"{name}.{k}", option[k], NAME_MAX * 10) for k in ("id", "name", "kind")}


# field -> its check, for what a caller may set after creation (state moves through board.states;
# id, prompt, agent, blockedBy and the times are the repository's own)
UPDATABLE: Mapping[str, Callable[[str, Any], Any]] = {
    "title": check_title,
    "priority": check_priority,
    "waiting": _optional(check_long_text),
    "branch": _optional(check_ref),
    "base": _optional(check_ref),
    "workspace": _optional(check_path),
    "question": _optional(check_question),
    "result": _optional(check_long_text),
    "error": _optional(check_long_text),
    "sessionId": _optional(check_session),
    "progress": _optional(check_progress),
    "metadata": check_metadata,
    "host": _optional(check_id),
}


def checked(fields: Mapping[str, Any] | None, also: Mapping[str, Callable[[str, Any], Any]] | None = None
            ) -> dict[str, Any]:
    """The fields, each checked by UPDATABLE (or `also`); TaskInvalid names the first bad one."""
    checks = {**UPDATABLE, **(also or {})}
    out: dict[str, Any] = {}
    for name, value in (fields or {}).items():
        check = checks.get(name)
        if check is None:
            raise TaskInvalid(f"{name!r} cannot be set here: settable fields are {', '.join(sorted(checks))}")
        out[name] = check(name, value)
    return out


def check_blockers(value: Any) -> list[str]:
    """blockedBy as given: a list of task ids, duplicates dropped, order kept."""
    if value is None:
        return []
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise TaskInvalid("blockedBy must be a list of task ids")
    ids = list(itertools.islice(value, BLOCKERS_MAX + 1))
    if len(ids) > BLOCKERS_MAX:
        raise TaskInvalid(f"blockedBy names more than {BLOCKERS_MAX} tasks; at most {BLOCKERS_MAX} are allowed")
    return list(dict.fromkeys(check_id("blockedBy", item) for item in ids))


def new_task(task_id: str, prompt: str, title: str, agent: str, priority: str, state: str, blockers: list[str],
             base: str | None, created: float, owner: str | None = None,
             metadata: dict[str, Any] | None = None, labels: list[str] | None = None) -> dict[str, Any]:
    """A task object with every field, as created."""
    task: dict[str, Any] = dict.fromkeys(FIELDS)
    task.update(id=task_id, title=title, prompt=prompt, agent=agent, priority=priority, state=state,
                blockedBy=blockers, base=base, createdAt=iso(created), owner=owner, metadata=metadata or {},
                labels=labels or [])
    return task


def completed(body: Mapping[str, Any]) -> dict[str, Any]:
    """A stored task object with the fields added since it was written (owner and host None, metadata {},
    labels [])."""
    task = dict(body)
    if "host" not in task or "metadata" not in task or "owner" not in task:
        for name, empty in (("owner", None), ("metadata", {}), ("labels", []), ("host", None)):
            task.setdefault(name, empty)
        task = {name: task[name] for name in FIELDS} | task  # the fields in their order
    return task
