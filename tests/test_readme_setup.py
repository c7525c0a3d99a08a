"""The README's two set-up lines, pasted together as one block into one bash on a fresh clone.

Both must succeed and leave the shell where it was. The second line runs the whole suite, so the
pasted copy runs only a slice of it (PYTEST_ADDOPTS names one small test file, which the suite itself
runs too): enough to prove that it installed the test tools and that `pytest -n 4` runs and passes in
the new venv, without running this test inside itself.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def setup_lines() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


def fresh_clone(target: Path) -> Path:
    """The files a clone of this checkout would have (tracked, plus new ones not ignored)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True, timeout=60).stdout.decode().split("\0")
    for rel in filter(None, listed):
        source = ROOT / rel
        if source.is_file():
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            (target / rel).write_bytes(source.read_bytes())
    return target


def test_readme_has_two_setup_lines_that_never_change_directory() -> None:
    lines = setup_lines()
    assert len(lines) == 2
    assert "pip install -e ." in lines[0] and "validate.py" in lines[0]
    assert '".[test]"' in lines[1] and "pytest" in lines[1]
    assert all(" cd " not in f" {line}" for line in lines)
    assert "python -m pytest" in (ROOT / ".ci" / "run").read_text() or ".[test]" in (ROOT / ".ci" / "run").read_text()


def test_both_lines_pasted_as_one_block_succeed(tmp_path: Path) -> None:
    clone = fresh_clone(tmp_path / "clone")
    pasted = "\n".join(setup_lines())
    script = pasted.replace("\n", "\nfirst=$?\n", 1) + '\nsecond=$?\necho "status $first $second $PWD"\n'
    env = {key: value for key, value in os.environ.items() if not key.startswith(("VIRTUAL_ENV", "PYTEST"))}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(sys.prefix))
    env.update(PYTEST_ADDOPTS="-q -p no:cacheprovider tests/wire/test_jsonrpc.py", PIP_DISABLE_PIP_VERSION_CHECK="1")
    done = subprocess.run(["bash"], input=script, cwd=clone, capture_output=True, text=True, timeout=1500, env=env)
    last = done.stdout.strip().splitlines()[-1]
    assert last == f"status 0 0 {clone}", done.stdout[-4000:] + done.stderr[-4000:]
    assert "✗" not in done.stdout and "✓ Claude Desktop entry" in done.stdout
    assert " passed" in done.stdout and (clone / "my-agent" / "validate.py").is_file()
