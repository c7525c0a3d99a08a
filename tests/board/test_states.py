"""board.states: the one transition table, refusals that name the state and what is allowed, the semantic
events derived from actions, and the board → A2A state table."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mcp_agent_kit.board import states as st
from mcp_agent_kit.board.errors import BoardError, TaskInvalid, TransitionRefused
from mcp_agent_kit.board.git import WorkspaceError

# the issue's lifecycle, edge by edge: (from, action, to)
EXPECTED = {
    ("held", "release", "queued"), ("queued", "start", "running"),
    ("running", "ask", "needs_input"), ("needs_input", "answer", "running"),
    ("running", "finish", "review"), ("needs_input", "finish", "review"),
    ("review", "accept", "done"), ("review", "discard", "discarded"),
    ("failed", "discard", "discarded"), ("cancelled", "discard", "discarded"),
    ("review", "prompt", "queued"), ("failed", "prompt", "queued"), ("cancelled", "prompt", "queued"),
    ("running", "interrupt", "failed"), ("needs_input", "interrupt", "failed"),
    ("running", "requeue", "queued"), ("needs_input", "requeue", "queued"),
    *((live, "fail", "failed") for live in ("held", "queued", "running", "needs_input")),
    *((live, "cancel", "cancelled") for live in ("held", "queued", "running", "needs_input")),
}


def test_the_table_is_exactly_the_issue_lifecycle() -> None:
    found = {(state, action, new) for state, moves in st.TRANSITIONS.items() for action, new in moves.items()}
    assert found == EXPECTED
    assert set(st.STATES) == {"held", "queued", "running", "needs_input", "review", "done", "discarded", "failed",
                              "cancelled"}
    assert set(st.ACTIONS) == {action for _, action, _ in EXPECTED}


@pytest.mark.parametrize("state", st.STATES)
@pytest.mark.parametrize("action", st.ACTIONS)
def test_transition_follows_the_table_or_refuses_naming_state_and_allowed(state: str, action: str) -> None:
    new = st.TRANSITIONS[state].get(action)
    if new is not None:
        assert st.transition(state, action) == new
        assert action in st.allowed(state)
        return
    with pytest.raises(TransitionRefused) as refused:
        st.transition(state, action, "t1")
    error = refused.value
    assert isinstance(error, BoardError)
    assert (error.state, error.action, error.task_id) == (state, action, "t1")
    assert error.allowed == st.allowed(state)
    message = str(error)
    assert message.startswith(f"task t1 is {state}: cannot {action} it")
    listed = re.search(r"allowed now: (.*)$", message)
    offered = set(listed.group(1).split(", ")) if listed else set()
    if action in st.PERSON_ACTIONS:  # a person is told what a person can do there
        assert offered == set(st.allowed(state)) & set(st.PERSON_ACTIONS)
    else:
        assert offered == set(st.allowed(state))
    if not offered:
        assert "nothing more can be done" in message


def test_final_states_take_nothing_and_live_ones_can_always_fail_or_cancel() -> None:
    for state in st.FINAL:
        assert st.allowed(state) == ()
    for state in st.LIVE:
        assert {"fail", "cancel"} <= set(st.allowed(state))
    assert st.ACTIVE < st.LIVE


def test_unknown_states_and_actions_are_invalid_input_not_refusals() -> None:
    with pytest.raises(TaskInvalid, match="unknown task state 'paused'"):
        st.transition("paused", "start")
    with pytest.raises(TaskInvalid, match="unknown task action 'merge'"):
        st.transition("review", "merge")
    with pytest.raises(TaskInvalid):
        st.allowed("nope")


def test_semantic_events_come_from_the_action_never_from_the_state() -> None:
    assert {st.semantic_event(a) for a in st.ACTIONS} - {None} == {
        "task.needs_input", "task.review", "task.failed", "task.done", "task.cancelled"}
    assert st.semantic_event("ask") == "task.needs_input"
    assert st.semantic_event("finish") == "task.review"
    assert st.semantic_event("accept") == "task.done"
    assert st.semantic_event("cancel") == "task.cancelled"
    assert st.semantic_event("fail") == st.semantic_event("interrupt") == "task.failed"
    for quiet in ("release", "start", "answer", "prompt", "discard", "requeue"):
        assert st.semantic_event(quiet) is None
    # reaching running again after an answer says nothing, though running was reached once with news elsewhere
    assert st.transition("needs_input", "answer") == "running" and st.semantic_event("answer") is None


def test_every_board_state_maps_to_an_a2a_v1_state() -> None:
    v1 = {"TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED",
          "TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"}
    assert set(st.A2A_STATES) == set(st.STATES)
    assert set(st.A2A_STATES.values()) <= v1
    assert st.A2A_STATES["done"] == "TASK_STATE_COMPLETED"
    assert st.A2A_STATES["needs_input"] == st.A2A_STATES["review"] == "TASK_STATE_INPUT_REQUIRED"
    # a state that still takes a message is never terminal for A2A ... except failed and cancelled (documented)
    terminal = {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"}
    for state in st.STATES:
        if st.A2A_STATES[state] in terminal:
            assert state in st.FINAL | {"failed", "cancelled"}


def test_the_docstring_table_is_the_code_table() -> None:
    doc = st.__doc__ or ""
    for state, a2a in st.A2A_STATES.items():
        assert re.search(rf"^\s+{state}\s+{a2a}\b", doc, re.M), f"{state} -> {a2a} missing from the module doc"
    docs = Path(st.__file__).read_text()
    assert "TRANSITIONS is the only place" in docs


def test_workspace_errors_are_board_errors() -> None:
    assert issubclass(WorkspaceError, BoardError)
