"""Property-based fuzzing of every entry point (the CI-fast part of the fuzzing campaign).

Each target of ``benchmarks/reliability/targets.py`` (instance files of every family, the
public-format loaders, the server's request validation) gets structurally mutated seeds and
raw bytes; an input must be accepted, or rejected with an :class:`InputError` that names the
file, the field and what was expected (INVALID_ARGUMENT naming the field, for the service).
Anything else, or an input running over the time cap, fails. The long campaign is
``python benchmarks/reliability/fuzz.py`` (see docs/reliability.md).
"""

from __future__ import annotations

import importlib.util
import random
import signal
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.reliability import targets as T
from placement.solver.family import family_names

TIME_CAP_S = 10
"""Per-input time cap: an input that takes longer is a hang."""

FUZZ = settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)


class Hang(Exception):
    pass


@contextmanager
def time_cap(seconds: float) -> Iterator[None]:
    def alarm(signum: int, frame: object) -> None:
        raise Hang(f"an input ran over {seconds} s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def feed(target: T.Target, data: bytes) -> str:
    with time_cap(TIME_CAP_S):
        try:
            return target.run(data)
        except T.Crash as exc:
            if isinstance(exc.__cause__, Hang):
                raise exc.__cause__ from None
            raise


NAMES = sorted(T.TARGETS)
_SEEDS: dict[str, list[bytes]] = {}


def seeds(name: str) -> list[bytes]:
    if name not in _SEEDS:
        _SEEDS[name] = T.TARGETS[name].seeds()
    return _SEEDS[name]


def test_every_registered_family_is_fuzzed() -> None:
    """The targets come from the family registry: every registered family has an instance
    file target with a seed (its smallest bundled instance) and a request seed; every target
    that names a family names a registered one, and the loader module it feeds exists."""
    families = family_names()
    for family in families:
        target = T.TARGETS.get(f"instance-{family}")
        assert target is not None and target.family == family, family
        assert seeds(target.name), f"no instances/{family}/*.json to seed its fuzzing"
        assert T._request_seed(family)
    for target in T.TARGETS.values():
        assert not target.family or target.family in families, target.name
        if target.module:
            assert importlib.util.find_spec(target.module) is not None, target.module


@pytest.mark.parametrize("name", NAMES)
def test_seeds_are_accepted(name: str) -> None:
    for data in seeds(name):
        assert feed(T.TARGETS[name], data) == "accepted"


@pytest.mark.parametrize("name", NAMES)
@FUZZ
@given(rnd=st.randoms(use_true_random=False), steps=st.integers(1, 3), which=st.integers(0, 9))
def test_mutated_inputs_are_accepted_or_rejected_clearly(
    name: str, rnd: random.Random, steps: int, which: int
) -> None:
    target = T.TARGETS[name]
    pool = seeds(name)
    data = pool[which % len(pool)]
    for _ in range(steps):
        data = T.mutate(target, data, rnd)
    assert feed(target, data) in ("accepted", "rejected")


@pytest.mark.parametrize("name", NAMES)
@settings(FUZZ, max_examples=10)
@given(data=st.binary(max_size=512))
def test_arbitrary_bytes_are_rejected_clearly(name: str, data: bytes) -> None:
    assert feed(T.TARGETS[name], data) in ("accepted", "rejected")


@pytest.mark.parametrize("name", [n for n in NAMES if T.TARGETS[n].json_input])
@settings(FUZZ, max_examples=10)
@given(
    doc=st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False)
        | st.text(max_size=8),
        lambda kids: (
            st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4)
        ),
        max_leaves=20,
    )
)
def test_arbitrary_json_is_rejected_clearly(name: str, doc: object) -> None:
    import json

    assert feed(T.TARGETS[name], json.dumps(doc).encode()) in ("accepted", "rejected")
