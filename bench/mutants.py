"""Mutation check of the security- and protocol-critical lines: does the suite notice a planted bug?

Each mutant is one textual replacement of an exact source snippet (it must occur exactly once, or the
run stops: a refactor moved the line, so update the mutant). The working tree is copied to a scratch
directory once; for each mutant the file is changed there, the mutant's own test files run (pytest
-x, with a timeout), and the file is put back. A mutant is KILLED when those tests fail, SURVIVED
when they pass. First a baseline run of every test set on the unchanged copy must pass, or the
verdicts would mean nothing.

    python bench/mutants.py                 # all mutants, prints a table; exit 1 if one survives
    python bench/mutants.py -k token -k hmac  # only mutants whose name contains one of the words
    python bench/mutants.py --list

Run on demand (minutes); not part of CI's default run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IGNORE = shutil.ignore_patterns(".git", ".venv*", "__pycache__", "*.pyc", ".pytest_cache", ".mypy_cache",
                                ".ruff_cache", ".hypothesis", "node_modules", "build", "dist", "*.egg-info")


@dataclass(frozen=True)
class Mutant:
    name: str
    file: str
    original: str
    replacement: str
    tests: tuple[str, ...]


AUTH_MCP = ("tests/http/test_auth_tokens.py",)
AUTH_A2A = ("tests/a2a/test_auth_tokens.py",)
STATE = ("tests/http/test_request_state_binding.py", "tests/core/test_dispatcher.py")
CANCEL = ("tests/core/test_cancellation_observed.py",)
DROP = ("tests/http/test_drop_versus_cancel.py", "tests/http/test_sse_resume.py")
SCHEMA = ("tests/core/test_schema.py",)
OAUTH = ("tests/auth/test_tokens.py", "tests/auth/test_resource.py")

MUTANTS = [
    Mutant("mcp token: substring", "mcp_agent_kit/httpd/gate.py",
           "if hmac.compare_digest(given, token):", "if token in given:", AUTH_MCP),
    Mutant("mcp token: prefix", "mcp_agent_kit/httpd/gate.py",
           "if hmac.compare_digest(given, token):", "if given.startswith(token):", AUTH_MCP),
    Mutant("mcp token: any scheme", "mcp_agent_kit/httpd/gate.py",
           'if scheme.lower() != "bearer" or not credentials.strip():', "if not credentials.strip():", AUTH_MCP),
    Mutant("a2a token: prefix", "mcp_agent_kit/httpd/gate.py",
           "if hmac.compare_digest(given, token):", "if given.startswith(token):", AUTH_A2A),
    Mutant("a2a token: substring", "mcp_agent_kit/httpd/gate.py",
           "if hmac.compare_digest(given, token):", "if token in given:", AUTH_A2A),
    Mutant("a2a token: any scheme", "mcp_agent_kit/httpd/gate.py",
           'if scheme.lower() != "bearer" or not credentials.strip():', "if not credentials.strip():", AUTH_A2A),
    Mutant("mcp host check off", "mcp_agent_kit/httpd/gate.py",
           "host = _split_host(host_header)\n        return host is not None and host in self.allowed_hosts",
           "host = _split_host(host_header)\n        return True", ("tests/http/test_security.py",)),
    Mutant("mcp origin check off", "mcp_agent_kit/httpd/gate.py",
           "if origin is None or ANY in self.allowed_origins:", "if True:", ("tests/http/test_security.py",)),
    Mutant("mrtr state: principal unbound", "mcp_agent_kit/core/mrtr.py",
           '"p": call.conn.principal}', '"p": None}', STATE),
    Mutant("mrtr state: arguments unbound", "mcp_agent_kit/core/mrtr.py",
           '"h": fingerprint(arguments)', '"h": ""', STATE),
    Mutant("mrtr state: method unbound", "mcp_agent_kit/core/mrtr.py",
           '{"m": call.method,', '{"m": "tools/call",', STATE),
    Mutant("state: binding not checked", "mcp_agent_kit/core/state.py",
           "if payload.get(key) != value:", "if False:", STATE),
    Mutant("state: HMAC not checked", "mcp_agent_kit/core/state.py",
           "if not hmac.compare_digest(tag, hmac.new(secret, raw, hashlib.sha256).digest()):", "if False:", STATE),
    Mutant("cancel notification ignored", "mcp_agent_kit/core/methods.py",
           'conn.cancel(params.get("requestId"))', "return None", CANCEL),
    Mutant("cancel flag never set", "mcp_agent_kit/core/dispatcher.py",
           "if event is not None:\n            event.set()", "if event is not None:\n            pass", CANCEL),
    Mutant("sse drop always cancels", "mcp_agent_kit/transports/sse.py",
           "if self._stream is None:  # a resumable stream's events", "if True:  # a resumable stream's events",
           DROP),
    Mutant("sse drop never cancels", "mcp_agent_kit/transports/sse.py",
           "events wait for the client to come back\n            self.cancel.set()",
           "events wait for the client to come back\n            pass", DROP),
    Mutant("stdio answers notifications", "mcp_agent_kit/transports/stdio.py",
           "        self.dispatcher.notification(message, self.conn)",
           "        self.dispatcher.notification(message, self.conn)\n"
           '        self.write({"jsonrpc": "2.0", "id": None, "result": {}})',
           ("tests/transports/test_stdio.py",)),
    Mutant("a2a task ownership off", "mcp_agent_kit/a2a/engine.py",
           'if task is None or task.get("_owner", "") != owner:', "if task is None:", AUTH_A2A),
    Mutant("a2a list ownership off", "mcp_agent_kit/a2a/store.py",
           'owner = query.owner or ""', "owner = None", AUTH_A2A),
    Mutant("mcp task ownership off", "mcp_agent_kit/core/task_table.py",
           "if task is None or task.owner != owner:", "if task is None:",
           ("tests/tasks/test_tasks.py", "tests/tasks/test_legacy_tasks.py")),
    Mutant("schema: required ignored", "mcp_agent_kit/core/schema_keywords.py",
           "return x.keys() >= need", "return True", SCHEMA),
    Mutant("schema: additionalProperties false ignored", "mcp_agent_kit/core/schema_keywords.py",
           "if not hit and extra is FALSE:", "if False:", SCHEMA),
    Mutant("schema: recursion overflow is valid", "mcp_agent_kit/core/schema.py",
           "except RecursionError:\n            return False",
           "except RecursionError:\n            return True", SCHEMA),
    Mutant("path containment off (safefile)", "mcp_agent_kit/safefile.py",
           "return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(root))", "return True",
           ("tests/packaging/test_plugin_corpus.py", "tests/packaging/test_hostile_files.py")),
    Mutant("skill path containment off", "mcp_agent_kit/packaging/skill_validate.py",
           "if not candidate.is_relative_to(resolved_root):", "if False:",
           ("tests/packaging/test_skill_corpus.py",)),
    Mutant("a2a ListTasks status type check", "mcp_agent_kit/a2a/listing.py",
           "elif not isinstance(state, str) or state not in STATES:", "elif state not in STATES:",
           ("tests/a2a/test_fuzz_a2a.py",)),
    # Issue 14's findings, each planted back as it was: the test named must notice.
    Mutant("14 backlog back to 5", "mcp_agent_kit/httpd/engine.py",
           "backlog: int = 1024", "backlog: int = 5",
           ("tests/httpd/test_burst_and_sigterm.py::test_320_clients_at_once_on_the_a2a_server",)),
    Mutant("14 a2a: missing Content-Type taken as JSON", "mcp_agent_kit/a2a/http.py",
           "if kind not in _JSON_TYPES:  # a missing type too",
           "if kind and kind not in _JSON_TYPES:  # a missing type too",
           ("tests/http/test_a2a_content_type.py",)),
    Mutant("14 a2a: public bind checks neither Host nor Origin", "mcp_agent_kit/a2a/http.py",
           "allowed_hosts=[*own_names(host, self.base_url), *allowed_hosts],",
           'allowed_hosts=["*"] if not is_loopback(host) else [*own_names(host, self.base_url), *allowed_hosts],',
           ("tests/http/test_a2a_content_type.py",)),
    Mutant("14 gateway calls hold request workers", "mcp_agent_kit/gateway/merged.py",
           'relayed_methods = frozenset({"tools/call", "prompts/get", "resources/read", "completion/complete"})',
           "relayed_methods = frozenset()",
           ("tests/gateway/test_isolation.py::test_calls_waiting_on_a_hung_backend_hold_no_http_request_worker",)),
    Mutant("14 gateway maxInFlight queues", "mcp_agent_kit/gateway/backend.py",
           "return self._slots.acquire(blocking=False)", "return self._slots.acquire()",
           ("tests/gateway/test_isolation.py::test_a_hung_backend_fails_its_own_calls_and_the_others_stay_fast",)),
    Mutant("14 gateway never retries a backend down at start", "mcp_agent_kit/gateway/merged.py",
           "                if backend.broken:\n                    threading.Thread(",
           "                if False:\n                    threading.Thread(",
           ("tests/gateway/test_isolation.py::test_a_backend_down_at_start_joins_when_it_comes_up",)),
    Mutant("14 gateway log unlimited", "mcp_agent_kit/client/loglimit.py",
           "            if self._tokens < 1.0:\n", "            if False:\n",
           ("tests/gateway/test_isolation.py::test_a_flooding_backend_costs_a_bounded_amount_of_log",)),
    Mutant("14 listen buffer unbounded", "mcp_agent_kit/core/listen.py",
           "self.queue: queue.Queue[dict[str, Any]] = queue.Queue(MAX_QUEUED)",
           "self.queue: queue.Queue[dict[str, Any]] = queue.Queue()",
           ("tests/http/test_streams.py::test_a_stalled_listen_is_dropped_and_memory_stays_bounded",)),
    Mutant("14 listen takes a request worker", "mcp_agent_kit/transports/http.py",
           'if b"subscriptions/listen" in body:\n            return STREAM',
           'if False:\n            return STREAM',
           ("tests/http/test_streams.py::test_listen_streams_leave_the_request_workers_free",)),
    Mutant("14 finished tasks are never evicted", "mcp_agent_kit/core/task_table.py",
           "            if len(self._tasks) >= limits.max_tasks:\n                self._evict(self._finished)\n",
           "",
           ("tests/tasks/test_task_limits.py::test_finished_tasks_of_many_principals_never_block_a_new_one",)),
    Mutant("14 read follows a swapped directory", "mcp_agent_kit/safefile.py",
           "fd = os.open(real, flags) if root is None else _open_beneath(os.path.realpath(root), real, flags)",
           "fd = os.open(real, flags)",
           ("tests/packaging/test_hostile_files.py",)),
    Mutant("14 special files read", "mcp_agent_kit/safefile.py",
           "        if not stat.S_ISREG(mode):\n            raise", "        if False:\n            raise",
           ("tests/packaging/test_hostile_files.py",)),
    Mutant("14 scaffold writes through a symlinked directory", "mcp_agent_kit/scaffold/render.py",
           "            check_parent_inside(target / rel, target)\n", "            pass\n",
           ("tests/scaffold/test_hostile_paths.py",)),
    Mutant("14 project name: match with $", "mcp_agent_kit/scaffold/names.py",
           "not _NAME.fullmatch(raw)", "not re.match(_NAME.pattern + '$', raw)",
           ("tests/scaffold/test_hostile_paths.py",)),
    Mutant("14 idle, half-sent heads and slow bodies held forever", "mcp_agent_kit/httpd/engine.py",
           "for conn in [c for c in self._conns if c.state != WORK and c.deadline <= now]:",
           "for conn in [c for c in self._conns if c.state == LINGER and c.deadline <= now]:",
           ("tests/httpd/test_engine.py::test_idle_header_and_body_timeouts_close_the_connection",)),
    Mutant("14 SIGTERM kills the call in flight", "mcp_agent_kit/httpd/lifecycle.py",
           "previous = signal.signal(signal.SIGTERM, on_sigterm)", "previous = signal.getsignal(signal.SIGTERM)",
           ("tests/httpd/test_burst_and_sigterm.py::test_sigterm_finishes_the_call_in_flight",)),
    Mutant("14 GET stream buffer unbounded", "mcp_agent_kit/transports/sse.py",
           "if self._queued_bytes + len(frame) > self._queue_limit:", "if False:",
           ("tests/http/test_streams.py::test_a_stalled_get_stream_blocks_no_one",)),
    Mutant("14 2025 tasks outlive their session", "mcp_agent_kit/core/legacy_tasks.py",
           "        dropped = self.table.drop_owner(conn)\n", "        dropped = []\n",
           ("tests/tasks/test_task_limits.py::test_deleting_a_session_cancels_its_300_running_tasks_and_frees_their_workers",)),
    # OAuth token validation (issue 18): each check, removed, must be noticed.
    Mutant("oauth: any algorithm", "mcp_agent_kit/auth/tokens.py",
           "if not isinstance(alg, str) or alg not in self.algorithms:", "if not isinstance(alg, str):", OAUTH),
    Mutant("oauth: audience unchecked", "mcp_agent_kit/auth/tokens.py",
           "if not any(isinstance(a, str) and _same_resource(a, self.audience) for a in audiences):", "if False:",
           OAUTH),
    Mutant("oauth: issuer unchecked", "mcp_agent_kit/auth/tokens.py",
           'if claims.get("iss") != self.issuer:', "if False:", OAUTH),
    Mutant("oauth: expiry unchecked", "mcp_agent_kit/auth/tokens.py",
           "if exp <= now - self.leeway:", "if False:", OAUTH),
    Mutant("oauth: signature unchecked", "mcp_agent_kit/auth/tokens.py",
           "if not any(key.verify(alg, jws.signing_input, jws.signature) for key in keys):", "if False:", OAUTH),
    Mutant("oauth: PKCS1 padding prefix ignored", "mcp_agent_kit/auth/jose.py",
           "return hmac.compare_digest(m.to_bytes(k, \"big\"), expected)",
           "return m.to_bytes(k, \"big\").endswith(t)", OAUTH),
    Mutant("oauth: EC key off the curve", "mcp_agent_kit/auth/jose.py",
           "if not p256.on_curve(x, y):", "if False:", OAUTH),
    Mutant("oauth: unknown kid refetches every time", "mcp_agent_kit/auth/jwks.py",
           "and now - self._last_try >= self.min_refresh:", ":", OAUTH),
    Mutant("oauth: scopes unchecked", "mcp_agent_kit/auth/tokens.py",
           "        if missing:\n            raise TokenError",
           "        if False:\n            raise TokenError", OAUTH),
]


def check_snippets(mutants: list[Mutant]) -> None:
    """Every snippet must occur exactly once in its file; else stop (the mutant no longer applies)."""
    problems = []
    for m in mutants:
        text = (ROOT / m.file).read_text(encoding="utf-8")
        count = text.count(m.original)
        if count != 1:
            problems.append(f"{m.name}: {m.file} has the snippet {count} times: {m.original!r}")
        for test in m.tests:
            if not (ROOT / test.split("::")[0]).is_file():
                problems.append(f"{m.name}: no test file {test}")
    if problems:
        raise SystemExit("mutants out of date:\n  " + "\n  ".join(problems))


def run_tests(scratch: Path, tests: tuple[str, ...], timeout: float) -> tuple[bool, str]:
    """(passed, tail of the output) of pytest on `tests` inside the scratch copy."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env.update(PYTHONPATH=str(scratch), PYTHONDONTWRITEBYTECODE="1", FUZZ_SEED=env.get("FUZZ_SEED", ""))
    if not env["FUZZ_SEED"]:
        del env["FUZZ_SEED"]
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "--timeout", str(int(timeout)),
               *tests]
    try:
        done = subprocess.run(command, cwd=scratch, env=env, capture_output=True, text=True, timeout=timeout + 30)
    except subprocess.TimeoutExpired:
        return False, "timed out"
    return done.returncode == 0, (done.stdout + done.stderr)[-1500:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-k", action="append", default=[], help="only mutants whose name contains this")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per test run")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument("--no-baseline", action="store_true", help="skip the unmutated run of each test set")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTANTS if not args.k or any(word.lower() in m.name.lower() for word in args.k)]
    check_snippets(chosen)
    if args.list:
        for m in chosen:
            print(f"{m.name:44} {m.file}")
        return 0
    with tempfile.TemporaryDirectory(prefix="mutants-") as tmp:
        scratch = Path(tmp) / "repo"
        shutil.copytree(ROOT, scratch, ignore=IGNORE, symlinks=True)
        probe = subprocess.run([sys.executable, "-c", "import mcp_agent_kit; print(mcp_agent_kit.__file__)"],
                               cwd=scratch, env={**os.environ, "PYTHONPATH": str(scratch)},
                               capture_output=True, text=True, check=True)
        if not Path(probe.stdout.strip()).resolve().is_relative_to(scratch.resolve()):
            raise SystemExit(f"the scratch copy does not shadow the installed package: {probe.stdout.strip()}")
        if not args.no_baseline:
            for tests in sorted({m.tests for m in chosen}):
                passed, tail = run_tests(scratch, tests, args.timeout)
                if not passed:
                    raise SystemExit(f"baseline failed for {' '.join(tests)} (fix that first):\n{tail}")
        rows = []
        for m in chosen:
            target = scratch / m.file
            original = target.read_text(encoding="utf-8")
            target.write_text(original.replace(m.original, m.replacement, 1), encoding="utf-8")
            began = time.monotonic()
            try:
                passed, _ = run_tests(scratch, m.tests, args.timeout)
            finally:
                target.write_text(original, encoding="utf-8")
            rows.append((m, "SURVIVED" if passed else "killed", time.monotonic() - began))
            print(f"  {m.name}: {rows[-1][1]} ({rows[-1][2]:.1f}s)", file=sys.stderr, flush=True)
    width = max(len(m.name) for m, _, _ in rows)
    fwidth = max(len(m.file) for m, _, _ in rows)
    print(f"| {'mutant':{width}} | {'file':{fwidth}} | tests run | result   | seconds |")
    print(f"|{'-' * (width + 2)}|{'-' * (fwidth + 2)}|-----------|----------|---------|")
    for m, verdict, seconds in rows:
        tests = ", ".join(Path(t).name for t in m.tests)
        print(f"| {m.name:{width}} | {m.file:{fwidth}} | {tests} | {verdict:8} | {seconds:7.1f} |")
    survivors = [m.name for m, verdict, _ in rows if verdict == "SURVIVED"]
    print(f"\n{len(rows) - len(survivors)} killed, {len(survivors)} survived" + (f": {survivors}" if survivors else ""))
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
