"""A solve that ends without a proof says which tier is open and why (issue 41: the README's
own examples ended ``search_exhausted`` with a 2.48 % gap and ``time_limit`` with ``gap
0.00%``, the first tier's, without saying so)."""

from __future__ import annotations

import subprocess
import sys

from placement import load
from placement.solver import SolveOptions, solve
from tests.conftest import REPO


def _solve_cli(path: str, *extra: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "placement.api.cli", "solve", path, "-q", *extra],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _row(text: str, label: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(label))[12:]


def test_entanglement_restricted_proof_says_why_the_gap_stays_open() -> None:
    result = solve(load(REPO / "instances/entanglement/tiny.json"), SolveOptions(time_limit_s=10))
    assert result.status.value == "feasible"
    assert result.stop_reason.value == "search_exhausted"
    assert result.gap is not None and result.gap > 0
    # The candidate model is proved; what is open is every path outside it, and why.
    assert "candidate-path model proved optimal" in result.message
    assert "the gap to the bound stays open: " in result.message
    assert "could take part in a better routing" in result.message


def test_mc_second_tier_open_is_named_with_its_bound() -> None:
    # Deterministic: one search worker and a work budget, so the search never ends early
    # (two threads once finished it inside 10 s of wall time on an idle machine).
    text = _solve_cli("instances/mc/tasks-20x4.json", "--time-limit", "2", "--deterministic")
    assert _row(text, "status") == "feasible"
    assert _row(text, "stop reason") == "time_limit"
    assert _row(text, "gap") == (
        "0.00% on dropped_cost, the first of 2 tiers; a later tier is not proved (see note)"
    )
    note = _row(text, "note")
    # With a solution of its own, CP-SAT's best and bound; else that it found none (loaded
    # machine): either way the open tier is named with why it stopped.
    assert "tier min_slack not proved: " in note
    assert "(time_limit)" in note and "dropped_cost is 0" in note


def test_the_gap_row_names_the_tier_of_a_proved_lexicographic_solve() -> None:
    text = _solve_cli("instances/gpu/tiny.json")
    assert _row(text, "status") == "optimal"
    assert (
        _row(text, "gap") == "0.00% on placed_gpu_weighted, the first of 3 tiers; every tier proved"
    )


def test_a_one_tier_gap_row_is_unchanged() -> None:
    text = _solve_cli("instances/dag/etl-small.json", "--backend", "greedy")
    assert _row(text, "gap") == "14.56%"
