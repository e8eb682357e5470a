"""HiGHS on the whole R||Cmax assignment model, exchanging assignments with the search.

:func:`run_full_milp` runs in a background thread beside the search (or after it): its
improving assignments go to the search, and the search's better ones go to HiGHS as user
solutions, through an :class:`Exchange` under one lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from placement.models.dag.rcmax.loads import REL_EPS
from placement.models.dag.rcmax.lp import assignment_model, model_assignment, model_start
from placement.solver.cancel import CancellationToken


class Exchange:
    """Assignments passed between the HiGHS thread and the search (under one lock)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.from_milp: list[np.ndarray] = []
        self.to_milp: np.ndarray | None = None
        self.stop = threading.Event()

    def from_milp_append(self, machine: np.ndarray) -> None:
        """Hand an assignment HiGHS found to the search."""
        with self.lock:
            self.from_milp.append(machine)


def run_full_milp(
    d: np.ndarray,
    start: np.ndarray,
    options: Any,
    threads: int,
    time_limit_s: float,
    cancel: CancellationToken,
    exchange: Exchange,
    out: dict[str, Any],
    on_bound: Callable[[float], None] | None = None,
    pairs: np.ndarray | None = None,
) -> None:
    """HiGHS on the whole assignment model, warm-started with ``start``: improving
    assignments go to ``exchange.from_milp``; ``exchange.to_milp`` is offered to HiGHS as a
    user solution; ``exchange.stop`` or ``cancel`` interrupt it. Writes ``bound`` (the MIP
    dual bound) and ``proven`` into ``out`` (``abandoned`` when HiGHS overran its limit).
    ``on_bound`` gets HiGHS's MIP dual bound with each improving assignment. ``pairs`` (a
    tasks x machines mask holding ``start``'s pairs) restricts the model to them: its bound
    is the instance's only when every better schedule lies within them
    (:func:`~.parametric.needed_pairs`)."""
    if time_limit_s <= 0:
        return
    model, ti, mi = assignment_model(
        d,
        integer=True,
        columns=pairs,
        threads=int(threads),
        random_seed=int(options.seed) % 2_147_483_647,
        mip_rel_gap=float(options.relative_gap),
        mip_abs_gap=1e-9,
    )

    model.set_start(model_start(d, ti, mi, start))

    def improving(x: np.ndarray, objective: float) -> None:
        del objective
        exchange.from_milp_append(model_assignment(d, ti, mi, x))

    def user_solution() -> np.ndarray | None:
        with exchange.lock:
            machine, exchange.to_milp = exchange.to_milp, None
        return None if machine is None else model_start(d, ti, mi, machine)

    run = model.run(
        float(time_limit_s),
        cancel=cancel,
        stop=exchange.stop.is_set,
        on_improving=improving,
        user_solution=user_solution,
        bounded=True,
        on_bound=on_bound,
    )
    if run.abandoned:
        out["abandoned"] = True
        return
    if run.bound is not None:
        out["bound"] = run.bound
        # Optimal only when the bound meets the solution (not a relative gap reached).
        value = run.objective
        out["proven"] = (
            run.solved and value is not None and value - run.bound <= REL_EPS * max(1.0, abs(value))
        )
