"""Cooperative cancellation shared by the portfolio and the backends."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable


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
