"""Shared fuzzing helpers: the seed (FUZZ_SEED replays a stream), random JSON values from it."""

from __future__ import annotations

import contextlib
import os
import random
from collections.abc import Iterator
from typing import Any


def fuzz_seed(default: int) -> int:
    """FUZZ_SEED from the environment, else the fuzzer's fixed default: the seed alone fixes a stream."""
    return int(os.environ.get("FUZZ_SEED", default))


@contextlib.contextmanager
def replayable(seed: int) -> Iterator[None]:
    """Any failure inside names the seed that replays it."""
    try:
        yield
    except AssertionError as exc:
        raise AssertionError(f"FUZZ_SEED={seed} replays this stream: {exc}") from exc


def random_json(rng: random.Random, depth: int = 0, *, small_ints: bool = True) -> Any:
    """Any JSON value: odd numbers (huge, negative, float), non-ASCII strings, nesting up to 4.

    Without small_ints, integers are drawn from the whole 64-bit range only, so two generated
    values (say, request ids) practically never coincide.
    """
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        wide = rng.randint(-(2**63), 2**63)
        return rng.choice([wide, rng.randint(-5, 5), 2**200]) if small_ints else wide
    if kind == 3:
        return rng.uniform(-1e9, 1e9)
    if kind in (4, 5):
        return "".join(chr(rng.randrange(0x20, 0x2FFF)) for _ in range(rng.randrange(12)))
    if kind == 6:
        return [random_json(rng, depth + 1, small_ints=small_ints) for _ in range(rng.randrange(4))]
    return {
        str(random_json(rng, 4, small_ints=small_ints)): random_json(rng, depth + 1, small_ints=small_ints)
        for _ in range(rng.randrange(4))
    }
