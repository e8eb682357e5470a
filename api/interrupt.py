"""Ctrl-C that stops a solve cleanly instead of killing it.

A solve runs in a helper thread while the main thread waits, so Python's SIGINT handler runs
at once even while the main thread would otherwise sit inside a native solver call. The first
Ctrl-C cancels the :class:`~placement.solver.cancel.CancellationToken` (the solve returns its
best checked solution); a second one raises :class:`KeyboardInterrupt` to give up at once.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from placement.solver.cancel import CancellationToken

T = TypeVar("T")

__all__ = ["run_cancellable"]


def run_cancellable(
    work: Callable[[], T],
    token: CancellationToken,
    *,
    on_interrupt: Callable[[], None] | None = None,
    stop_when: Callable[[], bool] | None = None,
    handle_sigint: bool = True,
) -> tuple[T, bool]:
    """Run ``work()`` in a thread; Ctrl-C (or ``stop_when()``) cancels ``token``.

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
        Install the Ctrl-C handler (only possible in the main thread). Batch workers pass
        False: they ignore SIGINT and follow the parent's decision through ``stop_when``.

    Returns
    -------
    tuple
        ``work()``'s value and whether the run was interrupted (Ctrl-C or ``stop_when``).

    Raises
    ------
    KeyboardInterrupt
        On a second Ctrl-C.
    BaseException
        Whatever ``work()`` raised, re-raised in the calling thread.
    """
    box: dict[str, Any] = {}
    interrupted = False

    def target() -> None:
        try:
            box["value"] = work()
        except BaseException as exc:  # noqa: BLE001 - handed to the calling thread
            box["error"] = exc

    def handler(signum: int, frame: Any) -> None:
        nonlocal interrupted
        if interrupted:
            raise KeyboardInterrupt
        interrupted = True
        if on_interrupt is not None:
            on_interrupt()
        token.cancel()

    # Daemon: after a second Ctrl-C the process must be able to exit while the solver runs.
    thread = threading.Thread(target=target, name="placement-solve", daemon=True)
    install = handle_sigint and threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, handler) if install else None
    try:
        thread.start()
        while thread.is_alive():
            # A timed join keeps the main thread in Python code so the handler runs promptly.
            thread.join(0.1)
            if stop_when is not None and not interrupted and stop_when():
                interrupted = True
                token.cancel()
    finally:
        if install:
            # None means the old handler was not set from Python: fall back to the default.
            signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)
    if "error" in box:
        raise box["error"]
    return box["value"], interrupted
