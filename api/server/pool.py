"""The solve worker pool: warm spawn-started processes, a bounded queue and a watchdog.

Built on pebble's :class:`~pebble.ProcessPool` (a well-kept killable process pool: cancelling
a running task terminates its worker and starts a fresh one; a worker that dies is replaced
and its task fails with ``ProcessExpired``). On top of it this module adds what a deadline-
bound service needs:

- admission control: at most ``workers + max_queue`` solves in flight, :meth:`SolvePool.submit`
  returns None beyond that (the caller answers RESOURCE_EXHAUSTED at once);
- an event channel from the workers (solve started, each checked incumbent with its
  solution), so the best incumbent is known in the server at every moment;
- a watchdog: a solve that overruns its time limit by more than ``grace`` seconds, or that is
  still queued when its client's deadline passes, is killed; its ticket ends with the best
  incumbent it had, if any;
- cancellation: :meth:`Ticket.cancel` stops the solve cooperatively: the ticket's number is
  posted on a shared cancel board that every worker polls, and the solve's cancellation
  token stops the solver within milliseconds, returning its best solution; the worker stays
  warm. A worker that has not returned ``cancel_grace`` seconds later is killed (and
  replaced). Killing is the fallback, because a fresh worker costs seconds of warm-up.
"""

from __future__ import annotations

import itertools
import logging
import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import CancelledError, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any

import pebble

from placement.api.server import worker

log = logging.getLogger(__name__)

EventCallback = Callable[[str, Any], None]
"""Called (from the pool's event thread) with ``("started", (pid, limit))`` or
``("incumbent", (incumbent_bytes, solution_bytes))``."""


PEBBLE_WORKER = "pebble_pool_worker"
"""The name pebble gives its worker processes (``pebble.pool.process.WORKERS_NAME``)."""


class Stopping(Exception):
    """The warm-up was stopped (see :meth:`SolvePool.warm`)."""


@dataclass
class Outcome:
    """How a ticket ended.

    ``kind`` is ``result`` (the worker returned ``response``), ``overrun`` (killed by the
    watchdog), ``cancelled`` (``response`` is set when the solver stopped cooperatively and
    returned its best solution), ``crashed`` (the worker died) or ``error`` (the task raised).
    ``best`` is the last incumbent received, if any, as ``(incumbent_bytes, solution_bytes)``.
    """

    kind: str
    response: bytes | None = None
    best: tuple[bytes, bytes] | None = None
    error: str = ""


@dataclass(eq=False)
class Ticket:
    """One solve in the pool."""

    request_id: str
    number: int
    """Unique among the pool's tickets: what the cancel board names."""
    time_limit_s: float
    deadline: float | None
    """The client's deadline, epoch seconds."""
    on_event: EventCallback | None
    future: Any = None
    submitted: float = field(default_factory=time.monotonic)
    started: float | None = None
    pid: int | None = None
    effective_limit: float | None = None
    best: tuple[bytes, bytes] | None = None
    kill_reason: str | None = None
    cancel_requested: float | None = None
    outcome: Outcome | None = None
    args: tuple[Any, ...] = ()
    """What the worker's ``solve`` gets (kept to schedule the ticket again)."""
    _finished_events: threading.Event = field(default_factory=threading.Event)
    _done: threading.Event = field(default_factory=threading.Event)
    _pool: SolvePool | None = None

    def cancel(self, reason: str = "cancelled", kill: bool = False) -> None:
        """Stop the solve. Queued: dropped. Running: the solver is asked to stop (it returns
        its best solution); its worker is killed if it has not returned within the pool's
        ``cancel_grace``, or at once with ``kill``."""
        if self.kill_reason is None:
            self.kill_reason = reason
        if self.future is None or self.future.done():
            return
        if kill or self.started is None or self._pool is None:
            self.future.cancel()
            return
        if self.cancel_requested is None:
            self.cancel_requested = time.monotonic()
            self._pool._post_cancel(self.number)

    def wait(self, timeout: float | None = None) -> Outcome | None:
        """The outcome, once the solve has ended (None on timeout)."""
        if not self._done.wait(timeout):
            return None
        return self.outcome

    @property
    def queue_seconds(self) -> float:
        """Seconds between submission and the worker starting (or now)."""
        end = self.started if self.started is not None else time.monotonic()
        return end - self.submitted


class SolvePool:
    """Warm worker processes with admission control, events and a watchdog.

    Parameters
    ----------
    workers:
        Worker processes (each runs one solve at a time).
    max_queue:
        Solves that may wait for a worker; beyond ``workers + max_queue`` in flight,
        :meth:`submit` refuses.
    grace:
        Seconds a solve may overrun its time limit before the watchdog kills its worker.
    margin:
        Seconds kept free before a client's deadline (for the answer to travel back).
    """

    CLOSE_WAIT_S = 15.0
    """Seconds :meth:`close` waits for the pebble pool to stop before it kills the workers."""
    STOP_WARM_WAIT_S = 10.0
    """Seconds a stop during :meth:`warm` waits for the launched workers to finish starting."""
    CANCEL_BOARD_SIZE = 256
    """Slots of the shared cancel board (a ring of recently cancelled ticket numbers)."""

    def __init__(
        self,
        workers: int,
        max_queue: int,
        grace: float = 1.0,
        margin: float = 0.05,
        cancel_grace: float = 1.0,
    ):
        self.workers = workers
        self.max_queue = max_queue
        self.grace = grace
        self.margin = margin
        self.cancel_grace = cancel_grace
        self.restarts = 0
        self.on_restart: Callable[[str], None] | None = None
        ctx = multiprocessing.get_context("spawn")
        self._events = ctx.Queue()
        self._board = ctx.Array("q", self.CANCEL_BOARD_SIZE, lock=True)
        self._board_next = 0
        self._numbers = itertools.count(1)
        # The cores are shared among the workers: a request that leaves the thread count to
        # the server gets its share, so parallel solves do not oversubscribe the machine.
        threads = max(1, (os.cpu_count() or 1) // workers)
        self._make_pool = lambda: pebble.ProcessPool(
            max_workers=workers,
            initializer=worker.init,
            initargs=(self._events, threads, self._board),
            context=ctx,
        )
        self._pool = self._make_pool()
        self.rebuilds = 0
        """Times the pebble pool broke and was replaced (see :meth:`_ensure_pool`)."""
        # Reentrant: a future that is already done runs its callback (which takes the lock)
        # inside _schedule.
        self._lock = threading.RLock()
        self._tickets: dict[str, Ticket] = {}
        self._closed = threading.Event()
        self._threads = [
            threading.Thread(target=self._read_events, name="pool-events", daemon=True),
            threading.Thread(target=self._watchdog, name="pool-watchdog", daemon=True),
        ]
        for t in self._threads:
            t.start()

    # --- lifecycle ----------------------------------------------------------------------
    def warm(
        self, timeout: float = 300.0, should_stop: Callable[[], bool] = lambda: False
    ) -> list[int]:
        """Start every worker and import the solver libraries in it; returns their pids.

        ``should_stop`` is polled while waiting: once true, :class:`Stopping` is raised (a
        signal at start-up; the caller then closes the pool, which reaps every worker)."""
        futures = [self._pool.schedule(worker.ping) for _ in range(self.workers)]
        end = time.monotonic() + timeout
        pids = []
        for f in futures:
            while True:
                if should_stop():
                    # Let the workers already launched finish starting (bounded): one killed
                    # while it still reads its start-up state from this process finds the
                    # pool's semaphores gone and prints a traceback.
                    wait(futures, timeout=self.STOP_WARM_WAIT_S)
                    raise Stopping("stopped during the warm-up")
                try:
                    pids.append(f.result(timeout=max(0.0, min(0.1, end - time.monotonic()))))
                    break
                except TimeoutError:
                    if time.monotonic() >= end:
                        raise
        return pids

    def close(self) -> None:
        """Kill every worker and stop the pool's threads."""
        self._closed.set()
        with self._lock:
            tickets = list(self._tickets.values())
        for t in tickets:
            t.cancel("shutdown", kill=True)
        # Stop the event thread before the queue goes away under it.
        self._events.put(("close", "", None))
        self._threads[0].join(timeout=5)
        stopper = threading.Thread(
            target=_stop_pool, args=(self._pool,), name="pool-stop", daemon=True
        )
        stopper.start()
        stopper.join(self.CLOSE_WAIT_S)
        if stopper.is_alive():
            # pebble's stop can wait on a channel lock that a killed worker held (pebble
            # issues #147 and #163): a shutdown must not. What is left is killed here.
            left = [p for p in multiprocessing.active_children() if p.name == PEBBLE_WORKER]
            log.warning(
                "worker pool did not stop within %g s; killing %d workers",
                self.CLOSE_WAIT_S,
                len(left),
            )
            for proc in left:
                proc.kill()
                proc.join(5)

    @property
    def in_flight(self) -> int:
        """Solves queued or running."""
        with self._lock:
            return len(self._tickets)

    @property
    def running(self) -> int:
        """Solves a worker has started."""
        with self._lock:
            return sum(1 for t in self._tickets.values() if t.started is not None)

    # --- solving ------------------------------------------------------------------------
    def submit(
        self,
        request_id: str,
        request: bytes,
        time_limit_s: float,
        deadline: float | None = None,
        on_event: EventCallback | None = None,
        limit: int | None = None,
        margin: float | None = None,
    ) -> Ticket | None:
        """Queue a solve, or return None when ``limit`` (default ``workers + max_queue``)
        solves are already in flight.

        ``request_id`` must be unique among solves in flight. ``margin`` (default the pool's)
        is kept free before ``deadline`` when the worker sets the solver's time limit.
        """
        cap = self.workers + self.max_queue if limit is None else limit
        ticket = Ticket(
            request_id, next(self._numbers), time_limit_s, deadline, on_event, _pool=self
        )
        with self._lock:
            if self._closed.is_set() or len(self._tickets) >= cap:
                return None
            if request_id in self._tickets:
                raise ValueError(f"request id {request_id!r} is already in flight")
            self._tickets[request_id] = ticket
            args = (
                request_id,
                ticket.number,
                request,
                time_limit_s,
                deadline,
                self.margin if margin is None else margin,
            )
            ticket.args = args
            self._schedule(ticket)
        return ticket

    def _schedule(self, ticket: Ticket) -> None:
        """Give the ticket to the pebble pool (call with ``self._lock`` held)."""
        try:
            ticket.future = self._pool.schedule(worker.solve, args=ticket.args)
        except RuntimeError:  # the pebble pool broke since the watchdog last looked
            self._ensure_pool()
            ticket.future = self._pool.schedule(worker.solve, args=ticket.args)
        ticket.future.add_done_callback(lambda f, t=ticket: self._finished(t, f))

    def _finished(self, ticket: Ticket, future: Any) -> None:
        # Let the incumbents the worker sent before returning arrive first (the result and
        # the events travel on different pipes). A solve that returned has sent its
        # "finished" event, even when its "started" event has not been read yet (a quick
        # solve on a loaded machine); one that was cancelled or died may not have.
        if not future.cancelled() and future.exception() is None:
            ticket._finished_events.wait(2.0)
        try:
            response = future.result()
            if ticket.kill_reason is not None:
                # Stopped cooperatively: the solver returned its best solution.
                outcome = Outcome(
                    "cancelled", response=response, best=ticket.best, error=ticket.kill_reason
                )
            else:
                outcome = Outcome("result", response=response)
        except CancelledError:
            reason = ticket.kill_reason or "cancelled"
            kind = "overrun" if reason in ("overrun", "deadline") else "cancelled"
            outcome = Outcome(kind, best=ticket.best, error=reason)
            if ticket.started is not None:
                self._restarted(reason)
        except pebble.ProcessExpired as exc:
            outcome = Outcome("crashed", best=ticket.best, error=f"worker died ({exc})")
            self._restarted("crash")
        except BrokenProcessPool as exc:
            # pebble gave up on its pool (see _ensure_pool). A solve that had not started
            # waits for the new pool's workers; one that had started crashed.
            if ticket.started is None and ticket.kill_reason is None:
                with self._lock:
                    if not self._closed.is_set():
                        self._ensure_pool()
                        self._schedule(ticket)
                        return
            outcome = Outcome("crashed", best=ticket.best, error=f"worker pool broke ({exc})")
        except Exception as exc:  # noqa: BLE001 - a bug in a solve must not stop the server
            outcome = Outcome("error", best=ticket.best, error=f"{type(exc).__name__}: {exc}")
        ticket.outcome = outcome
        with self._lock:
            self._tickets.pop(ticket.request_id, None)
        ticket._done.set()

    def _ensure_pool(self) -> None:
        """Replace the pebble pool if it has broken.

        pebble marks its whole pool broken ("All workers expired") when a worker dies while
        no task is running (e.g. kill -9 of an idle or warming worker); every later
        ``schedule`` then raises. A broken pool is replaced by a fresh one (its workers warm
        up again); its running tasks have already failed with ``BrokenProcessPool``, which
        their tickets report as crashes (jobs run again). Call with ``self._lock`` held or
        from the watchdog."""
        if self._closed.is_set() or self._pool.active:
            return
        old, self._pool = self._pool, self._make_pool()
        self.rebuilds += 1
        log.warning("the worker pool broke (a worker died while idle): replaced it")
        self._restarted("pool")
        threading.Thread(target=_stop_pool, args=(old,), name="pool-stop", daemon=True).start()

    def _post_cancel(self, number: int) -> None:
        """Put a ticket number on the cancel board the workers poll."""
        with self._board.get_lock():
            self._board[self._board_next] = number
            self._board_next = (self._board_next + 1) % self.CANCEL_BOARD_SIZE

    def _restarted(self, why: str) -> None:
        self.restarts += 1
        if self.on_restart is not None:
            try:
                self.on_restart(why)
            except Exception:  # noqa: BLE001
                log.exception("restart hook failed")

    # --- threads ------------------------------------------------------------------------
    def _read_events(self) -> None:
        while True:
            try:
                kind, request_id, payload = self._events.get()
            except Exception:  # noqa: BLE001 - the queue is gone (shutdown) or broken
                if not self._closed.is_set():
                    log.exception("the worker event queue failed")
                return
            if kind == "close":
                return
            with self._lock:
                ticket = self._tickets.get(request_id)
            if ticket is None:
                continue
            if kind == "started":
                ticket.started = time.monotonic()
                ticket.pid, ticket.effective_limit = payload
            elif kind == "incumbent":
                ticket.best = payload
            elif kind == "finished":
                ticket._finished_events.set()
                continue
            if ticket.on_event is not None:
                try:
                    ticket.on_event(kind, payload)
                except Exception:  # noqa: BLE001 - a listener must not stop the events
                    log.exception("event listener failed")

    def _watchdog(self) -> None:
        while not self._closed.wait(0.05):
            try:
                if not self._pool.active:
                    with self._lock:
                        self._ensure_pool()
            except Exception:  # noqa: BLE001 - the watchdog must go on
                log.exception("replacing the worker pool failed")
            now, wall = time.monotonic(), time.time()
            with self._lock:
                tickets = list(self._tickets.values())
            for t in tickets:
                if t.cancel_requested is not None:
                    if now > t.cancel_requested + self.cancel_grace:
                        log.warning(
                            "request %s did not stop within %.1f s of its cancellation: "
                            "killing worker %s",
                            t.request_id,
                            self.cancel_grace,
                            t.pid,
                        )
                        t.future.cancel()
                    continue
                if t.kill_reason is not None:
                    continue
                if t.started is not None and t.effective_limit is not None:
                    if now > t.started + t.effective_limit + self.grace:
                        log.warning(
                            "request %s overran its %.3f s limit by more than %.1f s: "
                            "killing worker %s",
                            t.request_id,
                            t.effective_limit,
                            self.grace,
                            t.pid,
                        )
                        t.cancel("overrun", kill=True)
                elif t.deadline is not None and wall > t.deadline + self.grace:
                    t.cancel("deadline", kill=True)


def _stop_pool(pool: Any) -> None:
    try:
        pool.stop()
        pool.join()  # (pebble ignores a timeout once stopped: callers bound the wait)
    except Exception:  # noqa: BLE001 - it is broken already
        log.exception("stopping a broken worker pool failed")
