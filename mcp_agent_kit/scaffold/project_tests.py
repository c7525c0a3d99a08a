"""project_tests: validate.py's "project tests" check: run the project's tests and name each failure.

The tests run as `python -m unittest discover -s tests -p "test_*.py"` would run them, from the
project root, in a child process of this interpreter with a time limit. The child (this module's
`main`) reports one JSON line per event into a file: each test as it starts, each failure or
error (subtests too) with its first `file:line` inside the project, and a final count. So a test
that fails is a ✗ line with its name, one that hangs is named when the time is up, and the tests'
own output never mixes with the report. Rules: reads the project, writes only in a temporary
directory; the child is killed (its whole process group) at the time limit.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import traceback
import unittest
from pathlib import Path
from types import TracebackType
from typing import IO, Any

Finding = tuple[bool, str]
COMMAND = '`python -m unittest discover -s tests -p "test_*.py"`'
DETAIL_CHARS = 300
ErrInfo = tuple[type[BaseException], BaseException, TracebackType] | tuple[None, None, None]  # unittest's


def check_tests(root: Path, seconds: float) -> list[Finding]:
    """Run the tests under root/tests; one ✓ with the count, or one ✗ per failing test."""
    if not (root / "tests").is_dir():
        return [(False, "no tests/ directory: add tests/test_*.py with unittest.TestCase classes")]
    with tempfile.TemporaryDirectory(prefix="validate-tests-") as tmp:
        report, log = Path(tmp, "report.jsonl"), Path(tmp, "stderr.txt")
        timed_out = _run_child(root, report, log, seconds)
        rows = [json.loads(line) for line in report.read_text(encoding="utf-8").splitlines() if line.strip()]
        said = [line.strip() for line in log.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
    return _findings(rows, timed_out, seconds, said)


def _run_child(root: Path, report: Path, log: Path, seconds: float) -> bool:
    """Run this module's main in a child; True when it ran out of time (and was killed)."""
    command = [sys.executable, "-m", __name__, str(report)]
    with open(log, "w", encoding="utf-8") as errors:
        child = subprocess.Popen(command, cwd=root, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=errors, start_new_session=os.name == "posix")
        try:
            child.wait(seconds)
            return False
        except subprocess.TimeoutExpired:
            _kill(child)
            return True


def _kill(child: subprocess.Popen[bytes]) -> None:
    if os.name == "posix":
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)  # the tests' own children too
    else:
        child.kill()
    child.wait()


def _findings(rows: list[dict[str, Any]], timed_out: bool, seconds: float, said: list[str]) -> list[Finding]:
    failed: list[Finding] = [(False, f"{row['failed']}: {row['detail']}") for row in rows if "failed" in row]
    done = next((row for row in rows if "done" in row), None)
    if timed_out:
        started = [row["start"] for row in rows if "start" in row]
        running = f" (still running: {started[-1]})" if started else ""
        return [*failed, (False, f"the tests did not finish within {seconds:g} s{running}; a test waits forever?")]
    if done is None:
        why = said[-1] if said else "no report"
        return [*failed, (False, f"the test run stopped before it finished: {why}")]
    if failed:
        return failed
    if done["done"] == 0:
        return [(False, "tests/ has no tests to run: write unittest.TestCase classes in tests/test_*.py"
                        " (plain pytest functions are invisible to `python -m unittest`)")]
    skipped = f", {done['skipped']} skipped" if done.get("skipped") else ""
    return [(True, f"{done['done']} test(s) passed{skipped} under {COMMAND}")]


class Reporter(unittest.TestResult):
    """A TestResult that writes each start and each failure as a JSON line, as it happens."""

    def __init__(self, out: IO[str], root: Path) -> None:
        super().__init__()
        self.out, self.root = out, root

    def emit(self, **row: Any) -> None:
        self.out.write(json.dumps(row) + "\n")
        self.out.flush()

    def startTest(self, test: unittest.TestCase) -> None:
        super().startTest(test)
        self.emit(start=test.id())

    def addError(self, test: unittest.TestCase, err: ErrInfo) -> None:
        super().addError(test, err)
        self.failed(test, err, "ERROR")

    def addFailure(self, test: unittest.TestCase, err: ErrInfo) -> None:
        super().addFailure(test, err)
        self.failed(test, err, "FAIL")

    def addSubTest(self, test: unittest.TestCase, subtest: unittest.TestCase,
                   err: ErrInfo | None) -> None:
        super().addSubTest(test, subtest, err)
        if err is not None and err[0] is not None:
            self.failed(subtest, err, "FAIL" if issubclass(err[0], test.failureException) else "ERROR")

    def addUnexpectedSuccess(self, test: unittest.TestCase) -> None:
        super().addUnexpectedSuccess(test)
        self.emit(failed=f"FAIL {test.id()}", detail="passed, but it is marked expectedFailure")

    def failed(self, test: unittest.TestCase, err: ErrInfo, kind: str) -> None:
        if err[0] is None:
            return
        if type(test).__name__ == "_FailedTest":  # a module discovery could not import
            module = test._testMethodName.replace(".", "/")
            lines = [line for line in str(err[1]).splitlines() if line.strip()]
            self.emit(failed=f"tests/{module}.py cannot be imported", detail=_clip(lines[-1] if lines else kind))
            return
        first = (str(err[1]).strip().splitlines() or [""])[0]
        message = f"{err[0].__name__}: {first}" if first else err[0].__name__
        where = _where(err[2], self.root)
        self.emit(failed=f"{kind} {test.id()}", detail=_clip(f"{where}: {message}" if where else message))


def _where(tb: TracebackType | None, root: Path) -> str:
    """`tests/test_x.py:12`: the innermost frame inside the project (not the kit, not unittest)."""
    for frame in reversed(traceback.extract_tb(tb)):
        try:
            rel = Path(frame.filename).resolve().relative_to(root)
        except ValueError:
            continue
        if not rel.parts[0].startswith(".") and "site-packages" not in rel.parts:  # not a venv inside it
            return f"{rel.as_posix()}:{frame.lineno}"
    return ""


def _clip(text: str) -> str:
    return text if len(text) <= DETAIL_CHARS else text[: DETAIL_CHARS - 3] + "..."


def main(argv: list[str]) -> int:
    """The child: discover tests/ from the current directory and report into argv[0]."""
    root = Path.cwd().resolve()
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    with open(argv[0], "a", encoding="utf-8") as out:
        result = Reporter(out, root)
        suite = unittest.defaultTestLoader.discover("tests", pattern="test_*.py")
        suite.run(result)
        result.emit(done=result.testsRun, skipped=len(result.skipped))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
