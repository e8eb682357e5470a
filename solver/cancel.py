"""Cooperative cancellation: the token the portfolio, the encodings and the backends share, a
token linked to a parent with a deadline (:func:`deadline_token`), and the one timer thread
behind every deadline."""

from __future__ import annotations

import contextlib
import heapq
import itertools
import threading
import time
from collections.abc import Callable, Iterator

from placement.solver.result import StopReason


class CancellationToken:
    """A flag that, once set, asks every running phase of a solve to stop.

    Backends register a stop function (``add_callback``) so that a running search is
    interrupted at once; a backend that has not started yet checks :attr:`cancelled`
    before it starts (CP-SAT's ``stop_search`` does nothing before the search begins).
    """

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []

    @property
    def cancelled(self) -> bool:
        """True once :meth:`cancel` has been called."""
        return self._event.is_set()

    def cancel(self) -> None:
        """Ask the solve to stop; runs every registered stop function once."""
        with self._lock:
            if self._event.is_set():
                return
            self._event.set()
            callbacks = list(self._callbacks)
        for callback in callbacks:
            with contextlib.suppress(Exception):  # one failing stop hook must not block the others
                callback()

    def add_callback(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Run ``callback`` on cancellation (at once if already cancelled).

        Returns a function that unregisters it.
        """
        with self._lock:
            already = self._event.is_set()
            if not already:
                self._callbacks.append(callback)
        if already:
            callback()

        def remove() -> None:
            with self._lock:
                if callback in self._callbacks:
                    self._callbacks.remove(callback)

        return remove

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until cancelled or ``timeout_s`` passed; return whether cancelled."""
        return self._event.wait(timeout_s)

    def cancel_after(self, seconds: float) -> Callable[[], None]:
        """Cancel this token ``seconds`` from now (a guard for solvers that may overrun their
        own limit). Returns a function that disarms it. One shared timer thread serves every
        token, so arming a guard costs no thread start."""
        return _ALARMS.add(time.monotonic() + seconds, self.cancel)


@contextlib.contextmanager
def deadline_token(parent: CancellationToken, seconds: float) -> Iterator[CancellationToken]:
    """A token cancelled by ``parent`` or ``seconds`` from now, whichever comes first; both
    links are undone on exit.

    Solvers do not always honour their own time limit (HiGHS overran it several-fold on
    80,000-stage models); their interrupt hooks do stop them.
    """
    token = CancellationToken()
    unhook = parent.add_callback(token.cancel)
    disarm = token.cancel_after(max(0.0, seconds))
    try:
        yield token
    finally:
        disarm()
        unhook()


class _Alarms:
    """One daemon thread that runs callbacks at their times (a heap of deadlines)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._ids = itertools.count()
        self._live: set[int] = set()
        self._thread: threading.Thread | None = None

    def add(self, at: float, callback: Callable[[], None]) -> Callable[[], None]:
        """Run ``callback`` at monotonic time ``at``; returns a function that disarms it."""
        with self._cond:
            key = next(self._ids)
            earliest = not self._heap or at < self._heap[0][0]
            heapq.heappush(self._heap, (at, key, callback))
            self._live.add(key)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="alarms", daemon=True)
                self._thread.start()
            elif earliest:
                # Wake the thread only when it must wait less than it does now (a wake-up
                # costs a GIL hand-over, which a solver's hot path should not pay).
                self._cond.notify()

        def disarm() -> None:
            with self._cond:
                self._live.discard(key)

        return disarm

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._heap and self._heap[0][1] not in self._live:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cond.wait()
                    continue
                at, key, callback = self._heap[0]
                delay = at - time.monotonic()
                if delay > 0:
                    self._cond.wait(delay)
                    continue
                heapq.heappop(self._heap)
                self._live.discard(key)
            with contextlib.suppress(Exception):
                callback()


_ALARMS = _Alarms()


def deadline_stop(stop: StopReason, parent: CancellationToken) -> StopReason:
    """Why a run under :func:`deadline_token` stopped, as the caller sees it: a cancellation
    that did not come from ``parent`` was the run's own deadline, so a time limit."""
    if stop is StopReason.CANCELLED and not parent.cancelled:
        return StopReason.TIME_LIMIT
    return stop
