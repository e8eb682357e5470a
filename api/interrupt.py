"""Ctrl-C (and SIGTERM, SIGHUP) that stops a solve cleanly instead of killing it.

A solve runs in a helper thread while the main thread waits, so Python's signal handler runs
at once even while the main thread would otherwise sit inside a native solver call. The first
Ctrl-C, SIGTERM or SIGHUP cancels the :class:`~placement.solver.cancel.CancellationToken`
(the solve returns its best checked solution, which the command then writes); a second one
raises :class:`KeyboardInterrupt` to give up at once.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from placement.solver.cancel import CancellationToken

T = TypeVar("T")

__all__ = ["STOP_SIGNALS", "Stopped", "install_stop_handlers", "run_cancellable", "stop_requests"]

STOP_SIGNALS: tuple[int, ...] = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)
"""The signals that stop a solve or a batch gently (the best solution kept and written)."""


def install_stop_handlers(handler: Callable[[int, Any], None]) -> Callable[[], None]:
    """Install ``handler`` for every signal of :data:`STOP_SIGNALS` (main thread only);
    returns the function that puts the previous handlers back."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = {sig: signal.signal(sig, handler) for sig in STOP_SIGNALS}

    def restore() -> None:
        for sig, old in previous.items():
            # None means the old handler was not set from Python: fall back to the default.
            signal.signal(sig, old if old is not None else signal.SIG_DFL)

    return restore


class Stopped(KeyboardInterrupt):
    """Raised by :func:`stop_requests`'s handler: a stop signal (its number in
    :attr:`signum`) ended a command that has no solve to cancel; the command line exits
    128 + the signal's number."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class stop_requests:  # noqa: N801 - used as a context manager, like a function
    """For a command that loops (``slurm schedule``, ``jobs watch``): while inside, the first
    Ctrl-C, SIGTERM or SIGHUP sets :attr:`signum` and :attr:`event` (the loop ends where it
    may: between cycles), or with ``raise_at_once`` raises :class:`Stopped` where the main
    thread is; a second one raises :class:`Stopped` at once."""

    def __init__(self, raise_at_once: bool = False) -> None:
        self.signum = 0
        self.event = threading.Event()
        self._raise_at_once = raise_at_once
        self._restore: Callable[[], None] = lambda: None

    def _handler(self, signum: int, frame: Any) -> None:
        if self.signum or self._raise_at_once:
            raise Stopped(self.signum or signum)
        self.signum = signum
        self.event.set()

    def __enter__(self) -> stop_requests:
        self._restore = install_stop_handlers(self._handler)
        return self

    def __exit__(self, *exc: object) -> None:
        self._restore()


def run_cancellable(
    work: Callable[[], T],
    token: CancellationToken,
    *,
    on_interrupt: Callable[[], None] | None = None,
    stop_when: Callable[[], bool] | None = None,
    handle_sigint: bool = True,
) -> tuple[T, int]:
    """Run ``work()`` in a thread; Ctrl-C, SIGTERM, SIGHUP (or ``stop_when()``) cancel
    ``token``.

    Parameters
    ----------
    work:
        The solve; it must honour ``token``.
    token:
        Cancelled on the first Ctrl-C.
    on_interrupt:
        Called once on the first Ctrl-C (e.g. to tell the user what happens next).
    stop_when:
        Polled while waiting; when it returns True the token is cancelled (how a batch
        worker learns that the parent was interrupted).
    handle_sigint:
        Install the handlers of :data:`STOP_SIGNALS` (only possible in the main thread).
        Batch workers pass False: they ignore SIGINT and follow the parent's decision
        through ``stop_when``.

    Returns
    -------
    tuple
        ``work()``'s value and the signal that interrupted the run (``SIGINT`` for
        ``stop_when``), or 0 when it was not interrupted.

    Raises
    ------
    KeyboardInterrupt
        On a second Ctrl-C.
    BaseException
        Whatever ``work()`` raised, re-raised in the calling thread.
    """
    box: dict[str, Any] = {}
    interrupted = 0

    def target() -> None:
        try:
            box["value"] = work()
        except BaseException as exc:  # noqa: BLE001 - handed to the calling thread
            box["error"] = exc

    def handler(signum: int, frame: Any) -> None:
        nonlocal interrupted
        if interrupted:
            raise KeyboardInterrupt
        interrupted = signum
        if on_interrupt is not None:
            on_interrupt()
        token.cancel()

    # Daemon: after a second Ctrl-C the process must be able to exit while the solver runs.
    thread = threading.Thread(target=target, name="placement-solve", daemon=True)
    restore = install_stop_handlers(handler) if handle_sigint else (lambda: None)
    try:
        thread.start()
        while thread.is_alive():
            # A timed join keeps the main thread in Python code so the handler runs promptly.
            thread.join(0.1)
            if stop_when is not None and not interrupted and stop_when():
                interrupted = signal.SIGINT
                token.cancel()
    finally:
        restore()
    if "error" in box:
        raise box["error"]
    return box["value"], interrupted
