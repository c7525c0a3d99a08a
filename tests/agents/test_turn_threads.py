"""A paused ACP turn holds no thread at all: not one of its own, and not one of the connection's request handlers
either (the agent's permission request is answered through a line_peer Deferred); the turns' deadlines, and the
answers handed to the agents, share one clock thread (turns.engine, turns.clock)."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

from mcp_agent_kit.acp.client import events as ev
from mcp_agent_kit.acp.client.client import AcpAgent, ClientOptions, Timeouts
from mcp_agent_kit.acp.client.permissions import PermissionRequest
from mcp_agent_kit.turns.clock import Clock
from mcp_agent_kit.turns.engine import TurnEngine, TurnOutcome
from tests.agents.test_agents_acp import ECHO
from tests.net import until

N = 20
HANDLER = "acp-agent-session/request_permission"  # a connection's handler thread for an agent's question


class Sink:
    def __init__(self) -> None:
        self.updates: list[ev.Event] = []
        self.questions: list[PermissionRequest] = []
        self.ends: list[TurnOutcome] = []

    def update(self, event: ev.Event) -> None:
        self.updates.append(event)

    def paused(self, question: PermissionRequest) -> None:
        self.questions.append(question)

    def ended(self, end: TurnOutcome) -> None:
        self.ends.append(end)


def test_paused_turns_hold_no_thread(tmp_path: Path) -> None:
    clock = Clock(name="turns-clock-under-test")
    engine = TurnEngine("ask", timeout=120.0, clock=clock)
    with AcpAgent.spawn(sys.executable, [str(ECHO)], env={"ACP_ECHO_AGENT_DIR": str(tmp_path / "acp")},
                        cwd=str(tmp_path), policy=engine, options=ClientOptions(), log=lambda message: None,
                        timeouts=Timeouts(turn=120, permission=120)) as agent:
        agent.initialize()
        sessions = [agent.new_session(str(tmp_path)) for _ in range(N)]
        before = {t.ident for t in threading.enumerate()}
        sinks = [Sink() for _ in range(N)]
        turns = [engine.turn(lambda s=s: s, f"hello {i}", sink)
                 for i, (s, sink) in enumerate(zip(sessions, sinks, strict=True))]
        for turn in turns:
            turn.start()
        until(lambda: all(sink.questions for sink in sinks), "every turn to pause on its permission question")
        assert all(turn.state == "paused" for turn in turns)
        until(lambda: agent.connection.in_flight == N, "every question to be read (and deferred)")
        # the short-lived start threads are gone once their prompt is sent
        until(lambda: not [t for t in threading.enumerate() if t.name == "acp-turn-start"], "the start threads to end")
        # the handler threads of the agent's questions ended as soon as their replies were deferred
        until(lambda: not [t for t in threading.enumerate() if t.name == HANDLER], "the handler threads to end")
        grown = [t for t in threading.enumerate() if t.ident not in before]
        assert [t.name for t in grown] == [clock.name], "a paused turn must hold no thread"
        assert agent.connection.in_flight == N  # the agent's questions, open: counted, unanswered
        assert clock.pending == N  # one deadline per turn, on the one clock thread

        for sink in sinks:  # every update the agent sent before asking came first, and in order
            said = "".join(e.text for e in sink.updates if isinstance(e, ev.AgentMessageChunk))
            assert said.startswith("Echo:")
        for turn in turns[: N // 2]:
            assert turn.answer(turn.question.options[0] if turn.question else None)
        for turn in turns[N // 2:]:
            turn.cancel()
        until(lambda: all(sink.ends for sink in sinks), "every turn to end")
        assert all(len(sink.ends) == 1 for sink in sinks)
        assert {sink.ends[0].stop_reason for sink in sinks[: N // 2]} == {"end_turn"}
        assert {sink.ends[0].stop_reason for sink in sinks[N // 2:]} == {"cancelled"}
        assert not engine.busy
        until(lambda: agent.connection.in_flight == 0, "every question to be answered")
        decisions = [[e.outcome for e in sink.updates if isinstance(e, ev.PermissionDecision)] for sink in sinks]
        assert decisions[: N // 2] == [["selected"]] * (N // 2)  # told before the agent got it, so before the end
        assert all(said in ([], ["cancelled"]) for said in decisions[N // 2:])  # the agent may end first
        until(lambda: clock.pending == 0, "the ended turns' timers to be dropped")
        until(lambda: clock.name not in {t.name for t in threading.enumerate()}, "the idle clock's thread to end")


def test_the_clock_runs_entries_in_time_order_and_skips_dropped_ones() -> None:
    clock = Clock(name="turns-clock-order")
    ran: list[str] = []
    done = threading.Event()
    start = time.monotonic()
    clock.at(start + 0.2, lambda: ran.append("late"))
    drop = clock.at(start + 0.1, lambda: ran.append("dropped"))
    clock.at(start + 0.05, lambda: ran.append("early"))
    clock.at(start + 0.3, done.set)
    drop()
    assert done.wait(10)
    assert ran == ["early", "late"]
    until(lambda: clock.name not in {t.name for t in threading.enumerate()}, "the idle clock's thread to end")
