"""The web board in headless Chromium, end to end: a REAL board.board.Board (a temporary git repository, the echo
agent examples/acp_echo_agent.py asking its permissions on the board, and tests/board/scoped_agent.py using the
board's ask_user tool) served as `mcp-agent-kit board` serves it (tests/board/boards.py: LiveServed), one server
per module, loopback and no token; one server with a token for the sign-in.

A person's work on the page: create a task from the new-task form, watch its text stream in, approve its
permission in the question form, read its diff, accept it (git, as the witness, finds the work on the task's
branch); answer an ask_user question with a click; cancel a running task; agent text holding `<script>` and
`<img onerror>` shows as text; the page's WebSocket dropped mid-task comes back and its transcript has no gap
and no duplicate (the same as a fresh page's); axe-core finds no serious or critical violation in the board
view, the task view or the login page; with a token, the login page signs in (HttpOnly cookie), the page
works, and signing out ends it. Each test keeps its last screen (conftest.py), and extra ones at key steps.
Nothing sleeps: the page is waited on inside Chromium (Page.wait_for), the board with Board.wait_task.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from mcp_agent_kit.board.board import Board
from mcp_agent_kit.board.config import parse_config
from tests.board import scoped_agent
from tests.board.boards import ECHO_AGENT, LiveServed, live_served, settled
from tests.board.conftest import run_git
from tests.browser.axe import assert_accessible
from tests.browser.cdp import CdpError, Page
from tests.net import until

TOKEN = "page-e2e-token"
AUTHOR = "Ada Tester <ada@example.com>"
HOSTILE = 'Show <script>window.pwned=1</script> and <img src=x onerror="window.pwned=2"> as text'
DROP_JS = """function () { for (const socket of this) socket.close(); return this.length; }"""


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Board]:
    """The real board, started: agents `echo` (asks permission on the board) and `scoped` (ask_user)."""
    root = tmp_path_factory.mktemp("board-page")
    with pytest.MonkeyPatch.context() as patch:  # git's identity and config stay inside the test
        home = root / "home"
        home.mkdir()
        for name, value in (("HOME", str(home)), ("GIT_CONFIG_NOSYSTEM", "1"),
                            ("GIT_CONFIG_GLOBAL", str(home / "gitconfig")), ("GIT_AUTHOR_NAME", "Ada Tester"),
                            ("GIT_AUTHOR_EMAIL", "ada@example.com"), ("GIT_COMMITTER_NAME", "Ada Tester"),
                            ("GIT_COMMITTER_EMAIL", "ada@example.com")):
            patch.setenv(name, value)
        repo = root / "repo"
        repo.mkdir()
        run_git(repo, "init", "-q", "-b", "main")
        (repo / "README.md").write_text("hello\n")
        run_git(repo, "add", "-A")
        run_git(repo, "commit", "-q", "-m", "first")
        agents = {
            "echo": {"acp": {"command": sys.executable, "args": [str(ECHO_AGENT)], "approve": "ask",
                             "env": {"ACP_ECHO_AGENT_DIR": str(root / "sessions")}}},
            "scoped": {"acp": {"command": sys.executable, "args": [scoped_agent.__file__], "approve": "all"}},
        }
        config = parse_config({"agents": agents, "board": {"max_concurrent": 4, "author": AUTHOR}})
        with Board(config, repo, data_dir=root / "board-data") as opened:
            opened.start()
            yield opened


@pytest.fixture(scope="module")
def site(board: Board) -> Iterator[LiveServed]:
    """The board's page and live API, no token (a loopback bind)."""
    with live_served(board) as served:
        yield served


# ---- helpers -------------------------------------------------------------------------------------------------
def open_board(page: Page, site: LiveServed, fragment: str = "") -> None:
    page.navigate(site.origin + "/" + fragment)
    page.wait_for("document.getElementById('connection').dataset.state === 'online'")
    page.wait_for("document.querySelector('#new-task-agent option[value=scoped]')")  # agents.list answered


def create_task(page: Page, agent: str, prompt: str) -> str:
    """Fill in the new-task form and submit it; the page opens the new task: its id."""
    page.evaluate(f"document.getElementById('new-task-agent').value = {json.dumps(agent)}")
    page.type_text("#new-task-prompt", prompt)
    page.click("#new-task-submit")
    task_id: str = page.wait_for("!document.getElementById('task-view').hidden && "
                                 "document.getElementById('task-view').dataset.taskId")
    return task_id


def wait_state(page: Page, state: str) -> None:
    page.wait_for(f"document.getElementById('task-view').dataset.state === {json.dumps(state)}", timeout=30)


def transcript(page: Page) -> str:
    return str(page.evaluate("document.getElementById('transcript').innerText"))


def shot(page: Page, step: str) -> None:
    """An extra screenshot beside the test's own: `<test>.<step>.png`."""
    assert page.artifact is not None
    page.screenshot(page.artifact.with_name(f"{page.artifact.stem}.{step}.png"))


def arrived(page: Page, path: str) -> bool:
    """The page shows a loaded document at `path` (False while a navigation replaces it)."""
    try:
        return bool(page.evaluate(f"location.pathname === {json.dumps(path)} && document.readyState === 'complete'"))
    except CdpError:  # the document went away under the evaluation: a navigation is under way
        return False


def drop_websockets(page: Page) -> int:
    """Close every WebSocket the page holds (found with Runtime.queryObjects): how many."""
    prototype = page.call("Runtime.evaluate", expression="WebSocket.prototype")["result"]["objectId"]
    found = page.call("Runtime.queryObjects", prototypeObjectId=prototype)["objects"]["objectId"]
    closed = page.call("Runtime.callFunctionOn", objectId=found, functionDeclaration=DROP_JS, returnByValue=True)
    return int(closed["result"]["value"])


def offline(page: Page, off: bool) -> None:
    """Chromium's network emulation: offline, new requests fail (an open WebSocket is left as it is)."""
    page.call("Network.enable")
    page.call("Network.emulateNetworkConditions", offline=off, latency=0, downloadThroughput=-1,
              uploadThroughput=-1)


# ---- the tests -------------------------------------------------------------------------------------------------
def test_create_stream_approve_diff_and_accept(page: Page, site: LiveServed, board: Board) -> None:
    open_board(page, site)
    assert_accessible(page)  # the board view
    task_id = create_task(page, "echo", "Write the board test")
    page.wait_for("document.getElementById('transcript').innerText.includes('Echo: Write the board test')")
    chunks = page.evaluate("document.querySelector('[data-testid=transcript-message]').childNodes.length")
    assert chunks >= 4, "the echo arrives word by word, each chunk appended as it comes"
    page.wait_for("!document.getElementById('question-form').hidden && "
                  "document.querySelector('[data-option-id=allow-once]')", timeout=30)
    options = page.evaluate("[...document.querySelectorAll('[data-testid=question-option]')]"
                            ".map(b => b.dataset.optionId)")
    assert options == ["allow-once", "reject-once", "allow-always"]
    card = f"document.getElementById('task-card-{task_id}')"
    assert page.evaluate(f"{card}.querySelector('[data-testid=needs-input]') !== null")  # the card's badge
    shot(page, "permission")
    assert_accessible(page)  # the task view, its question open
    page.click("[data-option-id=allow-once]")
    wait_state(page, "review")
    page.click("#diff-refresh")
    page.wait_for("document.querySelector('#diff [data-testid=diff-file][data-path=\"echo.txt\"]')")
    assert "+Write the board test" in str(page.text("#diff"))
    shot(page, "diff")
    page.click("#task-accept")
    wait_state(page, "done")
    task = board.get_task(task_id)
    assert task["state"] == "done" and "File: written." in transcript(page)
    assert run_git(board.workspaces.root, "show", f"{task['branch']}:echo.txt") == "Write the board test"
    assert f"(task {task_id})" in run_git(board.workspaces.root, "log", "-1", "--format=%s", task["branch"])
    assert "echo.txt" not in run_git(board.workspaces.root, "ls-tree", "--name-only", "main")  # accepted, not merged
    assert page.errors() == []


def test_answer_an_ask_user_question_with_a_click(page: Page, site: LiveServed, board: Board) -> None:
    open_board(page, site)
    task_id = create_task(page, "scoped", "choose")
    page.wait_for("document.querySelector('[data-testid=question-option][data-option-id=red]')", timeout=30)
    assert page.text("#question-text") == "Red or green?"
    shot(page, "question")
    page.click("[data-testid=question-option][data-option-id=red]")
    wait_state(page, "review")
    assert board.get_task(task_id)["result"] == "chose: red"
    page.wait_for("document.getElementById('transcript').innerText.includes('chose: red')")
    assert "Answered: red" in transcript(page)


def test_cancel_a_running_task(page: Page, site: LiveServed, board: Board) -> None:
    open_board(page, site)
    task_id = create_task(page, "echo", "/wait until cancelled")
    page.wait_for("document.getElementById('transcript').innerText.includes('Waiting for a cancel')", timeout=30)
    wait_state(page, "running")
    page.click("#task-cancel")
    wait_state(page, "cancelled")
    assert board.get_task(task_id)["state"] == "cancelled"
    page.wait_for("!document.getElementById('task-cancel').checkVisibility() && "
                  "document.getElementById('task-discard').checkVisibility()")


def test_markup_from_the_agent_is_text_and_a_dropped_socket_resumes(page: Page, site: LiveServed,
                                                                    board: Board, chromium: Any) -> None:
    open_board(page, site)
    task_id = create_task(page, "echo", HOSTILE)
    page.wait_for("!document.getElementById('question-form').hidden", timeout=30)
    assert f"Echo: {HOSTILE}" in transcript(page)
    assert page.evaluate("document.querySelectorAll('main script, main img, main [onerror]').length") == 0
    assert page.evaluate("typeof window.pwned") == "undefined"
    assert page.errors() == []  # nothing ran, and no inline script was even tried (CSP would say so)
    seq = int(page.evaluate("document.getElementById('transcript').dataset.seq"))

    offline(page, True)  # the page cannot come back until the test says so
    assert drop_websockets(page) >= 1
    page.wait_for("document.getElementById('connection').dataset.state !== 'online'")
    board.answer_task(task_id, "reject-once")  # the task goes on without the page: its events pile up
    finished = settled(board, task_id, "review")
    last = board.task_events(task_id, seq)["events"][-1]["seq"]
    assert last > seq
    page.wait_console(lambda entry: "ERR_INTERNET_DISCONNECTED" in entry.text)  # it tried to come back: refused
    assert page.evaluate("document.getElementById('connection').dataset.state") != "online"
    offline(page, False)
    page.wait_for("document.getElementById('connection').dataset.state === 'online'", timeout=60)
    page.wait_for(f"document.getElementById('transcript').dataset.seq === '{last}'")
    wait_state(page, "review")
    shot(page, "resumed")
    resumed = transcript(page)
    assert resumed.count("File: refused.") == 1 and resumed.count("Turn ended") == 1, resumed
    with chromium.new_page() as fresh:  # the whole transcript, read once, from the start
        open_board(fresh, site, f"#task={task_id}")
        fresh.wait_for(f"document.getElementById('transcript').dataset.seq === '{last}'")
        assert transcript(fresh) == resumed  # no gap, no duplicate
    assert finished["state"] == "review"


def test_sign_in_with_the_token_then_the_page_works(page: Page, board: Board) -> None:
    with live_served(board, tokens={TOKEN: "alice"}) as guarded:
        page.navigate(guarded.origin + "/")
        assert page.evaluate("location.pathname") == "/login"
        assert_accessible(page)
        page.type_text("#login-token", TOKEN)
        page.click("#login-submit")  # the form posts; its 303 leads to the board
        until(lambda: arrived(page, "/"), "the board's page after signing in")
        page.wait_for("document.getElementById('connection').dataset.state === 'online'")
        cookie = page.cookies(guarded.origin + "/")["mak_session"]
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
        assert page.evaluate("document.cookie") == ""
        assert page.text("#principal") == "Signed in as alice"
        page.wait_for("document.querySelector('#new-task-agent option[value=echo]')")  # agents.list answered
        page.evaluate("document.getElementById('new-task-agent').value = 'echo'")
        page.type_text("#new-task-prompt", "Held for alice")
        page.click("#new-task-hold")
        page.click("#new-task-submit")
        task_id = page.wait_for("document.querySelector('[data-testid=task-card][data-state=held]')?.dataset.taskId")
        assert board.get_task(task_id)["owner"] == "alice"
        page.wait_for(f"document.getElementById('task-view').dataset.taskId === {json.dumps(task_id)} && "
                      "document.getElementById('task-cancel').checkVisibility()")  # the page opened the new task
        page.click("#task-cancel")  # an action over the cookie's connection: it carries the CSRF token
        wait_state(page, "cancelled")
        assert page.errors() == []
        page.click("#logout")  # a form POST with the page's CSRF token
        until(lambda: arrived(page, "/login"), "the login page after signing out")
        assert "mak_session" not in page.cookies(guarded.origin + "/")
