"""When a solve stops and what it says about it (issue 17, items 3, 4, 10, 11).

Real solvers on the bundled instances and small generated ones: the one-thread R||Cmax
search hands over to HiGHS instead of stopping; ``relative_gap`` stops every family once
the proven gap on the primary objective is at most it; a fully proved entanglement instance
stops with ``proven``; each incumbent carries the bound known when it was found; phases are
named after what ran. No timing assertions: the stop reasons and bounds say it.
"""

from __future__ import annotations

from pathlib import Path

from placement.api.files import read_instance
from placement.solver import SolveOptions, StopReason, solve

REPO = Path(__file__).resolve().parent.parent


def _bundled(path: str):
    return read_instance(REPO / "instances" / path).instance


def test_one_thread_rcmax_hands_over_to_highs_and_proves() -> None:
    # The one-after-the-other path set the search's stop flag before HiGHS ran, so HiGHS
    # stopped at once and the solve ended with time_limit and a 3.7 % gap after about 1 s.
    instance = _bundled("dag/grid-64x8.json")
    result = solve(instance, SolveOptions(time_limit_s=30, threads=1))
    assert result.stop_reason == StopReason.PROVEN, (result.stop_reason, result.message)
    assert result.gap == 0.0
