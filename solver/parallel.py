"""Running independent tasks in parallel: spawn-started worker processes, or Ray tasks.

What ``placement batch`` and ``placement bench`` share. :func:`run_tasks` calls a module-level
function once per argument tuple and yields each outcome as it finishes:

* **locally** (the default), in ``jobs`` worker processes started with ``spawn`` (nothing is
  inherited from the parent; a solver that crashes takes only its worker down). The pool is
  pebble's, so a running task can be cancelled for real: its worker is killed and replaced.
* **on Ray** (``ray="auto"`` starts a local Ray instance with ``jobs`` CPUs, or connects to
  the cluster named by ``RAY_ADDRESS``; ``ray="HOST:PORT"`` or ``"ray://HOST:PORT"`` connects
  to that cluster). The same function runs as one Ray task per argument tuple, so results
  are the same as the local pool's. Ray is an optional extra
  (``pip install -e '.[ray]'`` in the checkout); without it, :class:`RayUnavailable` says so.

Stopping: when ``should_stop()`` turns true, tasks not started yet are cancelled; running
tasks are left to finish (they learn of the stop by other means, e.g. the batch's stop event,
and return their best) unless ``kill_running`` is set, in which case they are killed too.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, CancelledError, wait
from dataclasses import dataclass
from typing import Any

from placement.solver.errors import InputError

__all__ = ["RAY_INSTALL", "RayUnavailable", "TaskOutcome", "ray_available", "run_tasks"]

RAY_INSTALL = "pip install -e '.[ray]' in the checkout"
"""How to get the optional Ray extra."""

POLL_S = 0.2
"""How often the stop condition is polled while waiting for tasks."""


class RayUnavailable(InputError):
    """``--ray`` was given but Ray is not installed (or the cluster cannot be reached)."""


@dataclass(frozen=True)
class TaskOutcome:
    """One finished task: its index in the argument list and its value, or why there is none.

    Exactly one of ``value`` (when ``ok``), ``error`` or ``cancelled`` describes the outcome.
    """

    index: int
    value: Any = None
    error: str | None = None
    cancelled: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None and not self.cancelled


def ray_available() -> bool:
    """Whether the optional Ray extra is installed."""
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


def run_tasks(
    fn: Callable[..., Any],
    arglist: Sequence[tuple[Any, ...]],
    *,
    jobs: int,
    ray: str | None = None,
    initializer: Callable[..., None] | None = None,
    initargs: tuple[Any, ...] = (),
    should_stop: Callable[[], bool] = lambda: False,
    kill_running: bool = False,
) -> Iterator[TaskOutcome]:
    """Run ``fn(*args)`` for every tuple of ``arglist``; yield outcomes in completion order.

    Parameters
    ----------
    fn:
        A module-level function (it is pickled by reference).
    arglist:
        One argument tuple per task; every value must be picklable.
    jobs:
        Worker processes (local), or the CPUs of a local Ray instance started for ``auto``.
    ray:
        None for the local pool; ``"auto"`` or a cluster address for Ray.
    initializer, initargs:
        Called once in every local worker before its first task. On Ray it is called with
        no arguments in every task (a worker process may run tasks of several drivers).
    should_stop:
        Polled every :data:`POLL_S` seconds; once true, no further task starts.
    kill_running:
        On stop, also kill the running tasks (each yields a cancelled outcome).

    Raises
    ------
    RayUnavailable
        ``ray`` is set and Ray is not installed or its cluster cannot be reached.
    """
    if not arglist:
        return
    if ray is not None:
        yield from _run_ray(fn, arglist, jobs, ray, initializer, should_stop, kill_running)
    else:
        yield from _run_local(fn, arglist, jobs, initializer, initargs, should_stop, kill_running)


def _run_local(
    fn: Callable[..., Any],
    arglist: Sequence[tuple[Any, ...]],
    jobs: int,
    initializer: Callable[..., None] | None,
    initargs: tuple[Any, ...],
    should_stop: Callable[[], bool],
    kill_running: bool,
) -> Iterator[TaskOutcome]:
    from pebble import ProcessPool  # start-up: ~55 ms on every `placement` command (cli imports us)

    pool = ProcessPool(
        max_workers=max(1, min(jobs, len(arglist))),
        context=multiprocessing.get_context("spawn"),
        initializer=_start_worker,
        initargs=(initializer, initargs),
    )
    try:
        futures = {pool.schedule(fn, args=args): i for i, args in enumerate(arglist)}
        pending = set(futures)
        stopped = False
        while pending:
            done, pending = wait(pending, timeout=POLL_S, return_when=FIRST_COMPLETED)
            if not stopped and should_stop():
                stopped = True
                for fut in list(pending):
                    # pebble: cancel() of a queued task drops it; of a running one kills its
                    # worker. Without kill_running, only tasks not started yet are cancelled.
                    if (kill_running or not fut.running()) and fut.cancel():
                        pending.discard(fut)
                        done.add(fut)
            for fut in done:
                yield _local_outcome(futures[fut], fut)
    finally:
        pool.stop()
        pool.join()


def _start_worker(initializer: Callable[..., None] | None, initargs: tuple[Any, ...]) -> None:
    """First thing in every local worker. pebble stops a worker with SIGTERM and installs a
    Python handler for it, which cannot run while a solver is inside native code (pebble then
    waits 3 s before SIGKILL, and a worker whose parent was killed kept solving): the default
    action ends the process at once, as in the service's workers (api/server/worker.py)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if initializer is not None:
        initializer(*initargs)


def _local_outcome(index: int, fut: Any) -> TaskOutcome:
    if fut.cancelled():
        return TaskOutcome(index, cancelled=True)
    try:
        return TaskOutcome(index, value=fut.result())
    except CancelledError:
        return TaskOutcome(index, cancelled=True)
    except BaseException as exc:  # noqa: BLE001 - the task's failure becomes its outcome
        # A worker that died (killed, out of memory, a crash in native code) or a task that
        # raised: the others go on.
        return TaskOutcome(index, error=f"{type(exc).__name__}: {exc}")


def _ray_task(
    fn: Callable[..., Any], initializer: Callable[..., None] | None, args: tuple[Any, ...]
) -> Any:
    """The body of every Ray task."""
    if initializer is not None:
        initializer()
    return fn(*args)


def connect_ray(address: str, jobs: int) -> Any:
    """Import Ray and connect to (or, for ``auto`` without ``RAY_ADDRESS``, start) a cluster."""
    try:
        import ray  # optional dependency (the `ray` extra)
    except ImportError:
        raise RayUnavailable.single(
            "--ray", address, f"Ray installed: {RAY_INSTALL} (or run without --ray)"
        ) from None
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {
            "log_to_driver": False,
            "include_dashboard": False,
            "logging_level": logging.WARNING,
        }
        if address == "auto" and not os.environ.get("RAY_ADDRESS"):
            kwargs["num_cpus"] = max(1, jobs)
        else:
            kwargs["address"] = address
        try:
            ray.init(**kwargs)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise RayUnavailable.single(
                "--ray", address, f"a reachable Ray cluster ('auto' or HOST:PORT): {exc}"
            ) from None
    return ray


def _run_ray(
    fn: Callable[..., Any],
    arglist: Sequence[tuple[Any, ...]],
    jobs: int,
    address: str,
    initializer: Callable[..., None] | None,
    should_stop: Callable[[], bool],
    kill_running: bool,
) -> Iterator[TaskOutcome]:
    ray = connect_ray(address, jobs)
    from ray.exceptions import RayError, TaskCancelledError  # optional dependency (the `ray` extra)

    remote = ray.remote(num_cpus=1, max_retries=0)(_ray_task)
    refs = {remote.remote(fn, initializer, args): i for i, args in enumerate(arglist)}
    pending = list(refs)
    stopped = False
    while pending:
        done, pending = ray.wait(pending, num_returns=1, timeout=POLL_S)
        if not stopped and should_stop():
            stopped = True
            # Ray cannot tell queued from running tasks cheaply; without kill_running, a
            # non-forced cancel interrupts each task (KeyboardInterrupt in it) and its
            # outcome is reported as cancelled.
            for ref in pending:
                ray.cancel(ref, force=kill_running)
        for ref in done:
            index = refs[ref]
            try:
                yield TaskOutcome(index, value=ray.get(ref))
            except TaskCancelledError:
                yield TaskOutcome(index, cancelled=True)
            except RayError as exc:
                yield TaskOutcome(index, error=f"{type(exc).__name__}: {exc}")
