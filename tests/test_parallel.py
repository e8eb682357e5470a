"""The local worker pool of `placement batch` and `placement bench` (solver/parallel.py), with
real spawned processes."""

from __future__ import annotations

import signal

from placement.solver.parallel import run_tasks


def test_local_workers_end_at_once_on_sigterm() -> None:
    """pebble installs a Python SIGTERM handler in its workers, which cannot run while a
    solver is in native code; the pool puts the default action back, so a stopped (or
    orphaned) worker ends at once. The initializer still runs, after it."""
    (outcome,) = run_tasks(signal.getsignal, [(signal.SIGTERM,)], jobs=1)
    assert outcome.ok and outcome.value == signal.SIG_DFL
    # the caller's initializer runs in the worker too (here: ignore SIGINT, as the bench's)
    (outcome,) = run_tasks(
        signal.getsignal,
        [(signal.SIGINT,)],
        jobs=1,
        initializer=signal.signal,
        initargs=(signal.SIGINT, signal.SIG_IGN),
    )
    assert outcome.ok and outcome.value == signal.SIG_IGN
