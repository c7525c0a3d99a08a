"""board.render: a board task, its transcript and its diff as text for a person.

The MCP tools' text content and the `task` command's output are the same words: a one-line summary
of a task, its fields as `key: value` lines, a compact table of tasks, a question with its options,
one transcript event as a line (or a piece of one), a diff's file list. Transcript events are read
as board.runner and board.tasks write them (`type`, or `kind` as BOARD_API.md spells it): `turn_start`
{prompt, sessionId, note}, `message`/`thought` {text}, `plan` {entries}, `tool_call` {update, toolCallId,
title, toolKind, status, content (ACP content, its `diff` items shown as a patch), locations}, `question`
{question}, `answer` {outcome, optionId, optionKind} (or {answer}), `progress`/`error` {text},
`turn_end` {stopReason, error}, `state` {action, from, state}; unknown kinds still show.
Rules: pure functions over plain dicts; no I/O; tables over if-chains.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

# the fields `task show` prints, in this order (the rest of a task object follows, as given)
SHOWN = ("id", "title", "state", "waiting", "agent", "priority", "blockedBy", "base", "branch", "workspace",
         "sessionId", "createdAt", "startedAt", "endedAt", "error", "result", "prompt")
COLUMNS = (("ID", "id"), ("STATE", "state"), ("PRIORITY", "priority"), ("AGENT", "agent"), ("TITLE", "title"))
TITLE_WIDTH = 60
DIFF_LINES = 40  # a tool call's diff shows at most this many lines per file


def _oneline(value: Any, width: int | None = None) -> str:
    text = " ".join(str(value).split()) if value is not None else ""
    return text if width is None or len(text) <= width else text[:width - 1] + "…"


def summary(task: Mapping[str, Any]) -> str:
    """One line: `task ID "TITLE" is STATE (agent A, P priority; waiting: W)`."""
    extra = [f"agent {task.get('agent')}, {task.get('priority')} priority"]
    for key in ("waiting", "error"):
        if task.get(key):
            extra.append(f"{key}: {_oneline(task[key], 200)}")
    question = task.get("question")
    if isinstance(question, Mapping):
        extra.append(f"asks: {_oneline(question.get('message'), 200)}")
    return f"task {task.get('id')} \"{_oneline(task.get('title'), TITLE_WIDTH)}\" is {task.get('state')} " \
           f"({'; '.join(extra)})"


def _value(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(str(item) for item in value)
    if isinstance(value, Mapping):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def details(task: Mapping[str, Any]) -> str:
    """Every set field as `key: value` (multi-line values indented), the question last."""
    keys = [key for key in SHOWN if key in task] + [key for key in task if key not in SHOWN and key != "question"]
    lines = []
    for key in keys:
        value = task.get(key)
        if value is None or value == [] or value == "":
            continue
        text = _value(value).rstrip("\n")
        first, *rest = text.split("\n")
        lines.append(f"{key}: {first}")
        lines += [f"  {line}" for line in rest]
    question = task.get("question")
    if isinstance(question, Mapping):
        lines.append("question:")
        lines += [f"  {line}" for line in question_text(question).split("\n")]
    return "\n".join(lines)


def table(tasks: Iterable[Mapping[str, Any]]) -> str:
    """A compact table: id, state, priority, agent, title (a queued task's `waiting` after its title)."""
    rows = [[heading for heading, _ in COLUMNS]]
    for task in tasks:
        row = [_oneline(task.get(key)) for _, key in COLUMNS]
        row[-1] = _oneline(task.get("title"), TITLE_WIDTH)
        if task.get("waiting"):
            row[-1] += f"  [{_oneline(task['waiting'], 60)}]"
        rows.append(row)
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS) - 1)]
    return "\n".join("  ".join([*(cell.ljust(width) for cell, width in zip(row, widths, strict=False)), row[-1]])
                     for row in rows)


def question_text(question: Mapping[str, Any]) -> str:
    """The question's message, then one `  [id] name (kind)` line per option, or the schema it wants."""
    lines = [str(question.get("message") or f"the agent asks ({question.get('kind', 'question')})")]
    for option in question.get("options") or ():
        if isinstance(option, Mapping):
            lines.append(f"  [{option.get('id')}] {option.get('name')} ({option.get('kind')})")
    if question.get("schema") is not None:
        lines.append(f"  answer with JSON matching: {json.dumps(question['schema'], ensure_ascii=False)}")
    return "\n".join(lines)


def _text_of(event: Mapping[str, Any]) -> str:
    for key in ("text", "message", "content", "status"):
        value = event.get(key)
        if isinstance(value, str):
            return value
    return ""


def _plan(event: Mapping[str, Any]) -> str:
    entries = event.get("entries") or event.get("plan") or []
    marks = {"completed": "x", "in_progress": ">", "pending": " "}
    lines = [f"  [{marks.get(str(entry.get('status')), ' ')}] {entry.get('content', '')}"
             for entry in entries if isinstance(entry, Mapping)]
    return "\n".join(["plan:", *lines]) + "\n"


def _content_diff(item: Mapping[str, Any]) -> list[str]:
    """An ACP `diff` content item ({path, oldText, newText}) as indented patch lines, cut at DIFF_LINES."""
    old, new = item.get("oldText") or "", item.get("newText") or ""
    body = list(difflib.unified_diff(str(old).splitlines(), str(new).splitlines(), lineterm="", n=1))[2:]
    cut = body[:DIFF_LINES] + ([f"… {len(body) - DIFF_LINES} more lines"] if len(body) > DIFF_LINES else [])
    return [f"  {'new file' if item.get('oldText') is None else 'diff'} {item.get('path')}",
            *(f"  {line}" for line in cut)]


def _tool_call(event: Mapping[str, Any]) -> str:
    title = event.get("title") or event.get("name") or event.get("toolCallId") or "a tool"
    said = ", ".join(str(event[key]) for key in ("toolKind", "status") if event.get(key))
    lines = [f"[tool] {_oneline(title, 200)}" + (f" ({said})" if said else "")]
    diff = event.get("diff")
    if isinstance(diff, str) and diff.strip():
        lines.append(diff.rstrip())
    for item in event.get("content") or ():
        if isinstance(item, Mapping) and item.get("type") == "diff":
            lines += _content_diff(item)
    return "\n".join(lines) + "\n"


def _question(event: Mapping[str, Any]) -> str:
    question = event.get("question")
    return f"? {question_text(question if isinstance(question, Mapping) else event)}\n"


def _answer(event: Mapping[str, Any]) -> str:
    """A person's answer ({answer}) or the agent's permission outcome ({outcome, optionId}: none when cancelled)."""
    answer = event.get("answer", event.get("optionId"))
    if answer is None:
        return f"> not answered ({event.get('outcome') or 'no option chosen'})\n"
    return f"> answered: {answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)}\n"


def _turn_start(event: Mapping[str, Any]) -> str:
    prompt = f": {_oneline(event['prompt'], 200)}" if event.get("prompt") else ""
    note = f"\n({_oneline(event['note'], 300)})" if event.get("note") else ""
    return f"\n== turn started{prompt}{note}\n"


def _turn_end(event: Mapping[str, Any]) -> str:
    error = f" ({_oneline(event['error'], 300)})" if event.get("error") else ""
    return f"\n== turn ended: {event.get('stopReason') or ('error' if error else 'end_turn')}{error}\n"


def _state(event: Mapping[str, Any]) -> str:
    moved = f"{event.get('from')} -> {event.get('state')}" if event.get("from") else str(event.get("state"))
    return f"-- {moved} ({event.get('action')})\n" if event.get("action") else f"-- {moved}\n"


EVENTS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "message": _text_of,  # a text delta: printed as it comes, no newline of its own
    "thought": lambda event: f"[thinking] {_text_of(event)}\n",
    "plan": _plan,
    "tool_call": _tool_call,
    "question": _question,
    "answer": _answer,
    "turn_start": _turn_start,
    "turn_end": _turn_end,
    "state": _state,
    "progress": lambda event: f"[progress] {_text_of(event)}\n",
    "error": lambda event: f"[error] {_text_of(event) or event.get('error', '')}\n",
}


def kind(event: Mapping[str, Any]) -> str:
    """An event's kind: `type` as the board's repository writes it (or `kind`)."""
    return str(event.get("type") or event.get("kind") or "")


def event_text(event: Mapping[str, Any]) -> str:
    """One transcript event as terminal text (a message delta as is; anything else ends with a newline)."""
    render = EVENTS.get(kind(event))
    if render is not None:
        return render(event)
    rest = {key: value for key, value in event.items() if key not in ("seq", "type", "kind")}
    return f"[{kind(event) or 'event'}] {json.dumps(rest, ensure_ascii=False)}\n"


def piece(event: Mapping[str, Any], open_line: bool) -> tuple[str, bool]:
    """One event's text as it follows what was printed before (`open_line`: that ended inside a line, message
    deltas being printed as they come), and whether a line is open after it. An event other than a message
    delta always starts on a line of its own."""
    text = event_text(event)
    if open_line and text and kind(event) != "message" and not text.startswith("\n"):
        text = "\n" + text
    return text, (not text.endswith("\n")) if text else open_line


def transcript(events: Iterable[Mapping[str, Any]]) -> str:
    """Events as one text (message deltas joined, each other event on its own line)."""
    out: list[str] = []
    open_line = False
    for event in events:
        text, open_line = piece(event, open_line)
        out.append(text)
    return "".join(out)


def diff_summary(diff: Mapping[str, Any]) -> str:
    """`N files changed, +A -R` and one `  status path (+a -r)` line per file."""
    files = [entry for entry in diff.get("files") or () if isinstance(entry, Mapping)]
    added = sum(int(entry.get("added") or 0) for entry in files)
    removed = sum(int(entry.get("removed") or 0) for entry in files)
    lines = [f"{len(files)} file{'s' if len(files) != 1 else ''} changed, +{added} -{removed}"]
    lines += [f"  {entry.get('status', '?'):<8} {entry.get('path')} (+{entry.get('added', 0)} "
              f"-{entry.get('removed', 0)})" for entry in files]
    return "\n".join(lines)
