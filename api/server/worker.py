"""What runs inside a solve worker process.

Workers are started with spawn before the gRPC server (fork after gRPC threads start can
deadlock) and warmed once: the solver libraries and every family are imported by
:func:`init`. A solve gets its request as bytes, sends events to the server through the
pool's event queue, and returns the ``SolveResponse`` as bytes:

- ``("started", request_id, (pid, time_limit_s))`` when the solve starts;
- ``("incumbent", request_id, (incumbent_bytes, solution_bytes))`` for every improving
  checked incumbent, so the server can answer with it if the worker must be killed;
- ``("finished", request_id, None)`` after the last incumbent.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from dataclasses import replace
from typing import Any

from placement.api.server import messages
from placement.solver import CancellationToken
from placement.solver import solve as run
from placement.solver.family import FAMILY_MODULES, get_family
from placement.solver.schema.v1 import service_pb2

_events: Any = None
_board: Any = None
_threads = 0
"""Search threads per solve when a request leaves it to the server (0 = all cores)."""


def init(events: Any, threads: int = 0, board: Any = None) -> None:
    """Pool initializer: keep the event queue, import everything a solve needs, and warm
    every family up (``Family.warm_up``, where a family has one)."""
    global _events, _threads, _board
    _events = events
    _threads = threads
    _board = board
    # pebble stops a worker with SIGTERM and installs a Python handler for it, which cannot
    # run while a solver is inside native code; pebble then waits 3 s before SIGKILL. The
    # default action ends the process at once, so a cancelled solve stops within the second.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    logging.getLogger("placement").setLevel(logging.ERROR)
    # warm-up in the worker only: the server imports this module too (pulp alone is ~0.3 s)
    import ortools.sat.python.cp_model  # noqa: F401
    import pulp  # noqa: F401

    for name in FAMILY_MODULES:
        family = get_family(name)
        warm_up = getattr(family, "warm_up", None)
        if warm_up is not None:
            try:
                warm_up()
            except Exception:  # noqa: BLE001 - a failed warm-up only costs the first request
                logging.getLogger(__name__).exception("warm-up of %s failed", name)


def ping() -> int:
    """A no-op task: returns the worker's pid (used to start and warm every worker)."""
    return os.getpid()


def effective_time_limit(requested: float, deadline: float | None, margin: float) -> float:
    """Seconds the solver may use: ``requested``, capped by ``deadline`` (epoch seconds, the
    client's) minus ``margin``; at least 10 ms (the greedy fallback still runs)."""
    limit = requested
    if deadline is not None:
        limit = min(limit, deadline - time.time() - margin)
    return max(0.01, limit)


def _watch_board(number: int, token: Any, done: threading.Event) -> None:
    """Cancel ``token`` when ``number`` appears on the cancel board (polled every 10 ms)."""
    while not done.wait(0.01):
        if number in _board[:]:
            token.cancel()
            return


def solve(
    request_id: str,
    number: int,
    request: bytes,
    requested: float,
    deadline: float | None,
    margin: float,
) -> bytes:
    """Solve a serialized ``SolveRequest``; returns the serialized ``SolveResponse``.

    ``requested`` is the time limit decided by the server (request, default and maximum
    applied); ``deadline`` the client's deadline in epoch seconds, if any. The time spent
    waiting in the queue counts against the deadline.
    """
    req = service_pb2.SolveRequest.FromString(request)
    parsed = messages.parse_request(req)
    limit = effective_time_limit(requested, deadline, margin)
    family, instance = parsed.family, parsed.instance
    if _events is not None:
        _events.put(("started", request_id, (os.getpid(), limit)))

    def on_incumbent(inc: Any) -> None:
        if _events is None:
            return
        solution = messages.solution_message(family, instance, inc.solution)
        inc_bytes = messages.incumbent_message(inc).SerializeToString()
        _events.put(("incumbent", request_id, (inc_bytes, solution.SerializeToString())))

    token = CancellationToken()
    done = threading.Event()
    if _board is not None:
        threading.Thread(target=_watch_board, args=(number, token, done), daemon=True).start()
    options = replace(
        parsed.options,
        time_limit_s=limit,
        on_incumbent=on_incumbent,
        threads=parsed.options.threads or _threads,
        cancel=token,
    )
    try:
        result = run(instance, options, parsed.start, parsed.start_source)
        response = messages.result_message(family, instance, result, request_id, limit)
        return response.SerializeToString()
    finally:
        done.set()
        if _events is not None:
            # Tells the server that every incumbent event of this solve has been sent.
            _events.put(("finished", request_id, None))
