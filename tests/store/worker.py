"""A store client in its own process, for the contract's cross-process races (run as `python -m tests.store.worker`).

    python -m tests.store.worker URL JOB [ARGS...]

opens the store, says it is ready and waits for its line on stdin (tests/together.py: the parent
releases every worker at once, so they race for real), then runs JOB and prints its result as
one JSON line: `insert KEY TAG` (did this worker's insert win), `cas KEY N` (N
compare-and-set increments of body["n"], retried until each lands), `append CHANNEL TAG N` (N
events {"by": TAG, "i": i}; the seqs it got), `notify CHANNEL PAYLOAD`.
"""

from __future__ import annotations

import json
import sys

from mcp_agent_kit.store import Record, open_store
from tests.together import READY


def main(argv: list[str]) -> int:
    url, job, *args = argv
    store = open_store(url)
    try:
        print(READY, flush=True)
        sys.stdin.readline()
        if job == "insert":
            result: object = store.insert(Record("race", args[0], {"winner": args[1]}))
        elif job == "cas":
            conflicts = 0
            for _ in range(int(args[1])):
                while True:
                    current = store.get("race", args[0])
                    assert current is not None
                    body = {"n": current.body["n"] + 1}
                    if store.update(current._replace(body=body), expect_version=current.version) is not None:
                        break
                    conflicts += 1
            result = conflicts
        elif job == "append":
            result = [store.append(args[0], {"by": args[1], "i": i}) for i in range(int(args[2]))]
        elif job == "notify":
            store.notify(args[0], args[1])
            result = True
        else:
            raise SystemExit(f"unknown job {job!r}")
    finally:
        store.close()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
