"""A HiGHS run that does not stop at its time limit is abandoned, never waited for forever.

HiGHS 1.16 once spent minutes in presolve past a 60 s limit (Braun u_s_lolo.0, inside a RENS
sub-MIP); the solve hung with it. These tests make a real HiGHS run outlast the wait (a
market-split instance, which HiGHS does not solve in seconds) and check what the caller gets.
"""

from __future__ import annotations

import numpy as np
import pytest

from placement.solver.backends import highs
from placement.solver.backends.base import RunStatus
from placement.solver.cancel import CancellationToken
from placement.solver.options import SolveOptions
from placement.solver.result import StopReason


def _market_split(m: int = 4, n: int = 30, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Cornuejols-Dawande market split: sum_j a_ij x_j = d_i, x binary (hard for B&B)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 100, size=(m, n))
    return a, a.sum(axis=1) // 2


def _pulp_problem() -> object:
    import pulp

    a, d = _market_split()
    prob = pulp.LpProblem("market_split", pulp.LpMinimize)
    x = [pulp.LpVariable(f"x{j}", cat=pulp.LpBinary) for j in range(a.shape[1])]
    over = [pulp.LpVariable(f"o{i}", 0) for i in range(a.shape[0])]
    under = [pulp.LpVariable(f"u{i}", 0) for i in range(a.shape[0])]
    for i in range(a.shape[0]):
        prob += pulp.lpSum(int(a[i, j]) * x[j] for j in range(a.shape[1])) + under[i] - over[
            i
        ] == int(d[i])
    prob += pulp.lpSum(over) + pulp.lpSum(under)
    return prob


def test_an_overrunning_run_is_abandoned_and_its_thread_then_interrupted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import highspy

    monkeypatch.setattr(highs, "OVERRUN_GRACE_S", 0.2)
    a, d = _market_split()
    n = a.shape[1]
    h = highs.new_highs()
    h.setOptionValue("threads", 1)
    h.setOptionValue("time_limit", 120.0)  # HiGHS itself would go on for two minutes
    for _ in range(n):
        h.addVar(0, 1)
    h.changeColsIntegrality(
        n, np.arange(n, dtype=np.int32), np.array([highspy.HighsVarType.kInteger] * n)
    )
    for i in range(a.shape[0]):
        h.addRow(float(d[i]), float(d[i]), n, np.arange(n, dtype=np.int32), a[i].astype(float))
    bounded = highs.BoundedRun(h)
    h.cbMipInterrupt.subscribe(lambda e: e.interrupt() if bounded.abandoned.is_set() else None)
    delivered: list[int] = []
    bounded.deliver(delivered.append, 1)  # while the run is waited for: handed over
    assert bounded.wait(0.3) is False
    assert bounded.abandoned.is_set()
    bounded.deliver(delivered.append, 2)  # once abandoned: never
    assert delivered == [1]
    # The callbacks see the flag, so this HiGHS run does stop soon after.
    assert bounded._done.wait(60)


def test_the_milp_backend_returns_when_highs_overruns(monkeypatch: pytest.MonkeyPatch) -> None:
    # A grace below zero makes the wait end before HiGHS's own (correct) time limit: the
    # backend must return a clear "no solution, time limit" run and say why.
    monkeypatch.setattr(highs, "OVERRUN_GRACE_S", -1.5)
    found: list[float] = []
    run = highs.HighsMilp.run(
        _pulp_problem(),
        SolveOptions(threads=1),
        CancellationToken(),
        2.0,
        on_solution=lambda values, objective: found.append(objective),
    )
    assert run.status == RunStatus.NO_SOLUTION
    assert run.stop_reason == StopReason.TIME_LIMIT
    assert "abandoned" in run.message


def test_the_milp_backend_is_unchanged_when_highs_stops_in_time() -> None:
    run = highs.HighsMilp.run(_pulp_problem(), SolveOptions(threads=1), CancellationToken(), 1.0)
    assert run.stop_reason == StopReason.TIME_LIMIT
    assert run.status == RunStatus.FEASIBLE and run.objective is not None
    assert "abandoned" not in run.message


_EVERY_MODEL_RUNS = """
import numpy as np
from placement.solver.backends.highs import HighsModel

def lp(**options):
    # max x + y, x + y <= 1: optimal 1
    model = HighsModel(**options)
    model.load(np.array([1.0, 1.0]), np.zeros(2), np.ones(2), np.array([-np.inf]),
               np.array([1.0]), np.array([0, 1, 2]), np.array([0, 0]), np.array([1.0, 1.0]),
               maximize=True)
    return model.run(10.0)

for options in ({}, {"threads": 1}, {}, {"random_seed": 3}):
    run = lp(**options)
    print(run.status.name, run.objective)
"""


def test_every_model_of_a_process_runs_whatever_ran_before() -> None:
    """HiGHS sizes one thread scheduler per process at its first run and refuses to run a
    later model that asks another thread count ("Not Set"): a dag LP asking one thread after
    a GPU LP with the default returned no bound. In a fresh process, as a server worker is."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", _EVERY_MODEL_RUNS], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:4] == ["OPTIMAL 1.0"] * 4, out.stdout
    with pytest.raises(ValueError, match="threads"):
        highs.HighsModel(threads=2)
