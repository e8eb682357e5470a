"""DAG infeasibility explained: which deadline or limit no schedule can meet, and by how much
(hand-made instances whose shortfalls are worked out in the comments)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from placement.models.dag.explain import explain_infeasible
from placement.solver import SolutionStatus, SolveOptions, StopReason, solve
from placement.solver.family import instance_from_document
from placement.solver.testing import exact_backends
from tests.conftest import REPO


def dag(tasks, machines=None, edges=(), **extra):
    machines = machines or [{"name": "m0", "speed": 1.0}, {"name": "m1", "speed": 2.0}]
    doc = {"name": "hand", "dag": {"machines": machines, "tasks": tasks, "edges": list(edges)}}
    doc["dag"].update(extra)
    return instance_from_document(doc)


# a (work 4) -> b (work 6, due at 3): a ends at 2 s at the earliest (on m1, speed 2), b then
# takes 3 s on m1: 5 s, 2 s after its deadline. c (release 5, work 2, due at 5.5) ends at 6.
DEADLINES = dict(
    tasks=[
        {"name": "a", "work": 4},
        {"name": "b", "work": 6, "deadline_s": 3},
        {"name": "c", "work": 2, "release_s": 5, "deadline_s": 5.5},
    ],
    edges=[{"parent": "a", "child": "b"}],
)


def test_unreachable_deadlines_are_named_with_the_shortfall():
    shortfalls = explain_infeasible(dag(**DEADLINES))
    assert [(s["kind"], s["name"]) for s in shortfalls] == [("deadline", "b"), ("deadline", "c")]
    b, c = shortfalls
    assert (b["earliest_s"], b["limit_s"], b["excess_s"]) == (5.0, 3.0, 2.0)
    assert "after a ends at 2 s" in b["message"] and "2 s too late" in b["message"]
    assert c["excess_s"] == pytest.approx(0.5) and "release" in c["message"]


def test_makespan_limit_below_the_bound():
    # a -> b on one chain: 4 + 6 = 10 s at least on machines of speed 1; the limit is 8.
    inst = dag(
        [{"name": "a", "work": 4}, {"name": "b", "work": 6}, {"name": "c", "work": 5}],
        machines=[{"name": "m0", "speed": 1.0}, {"name": "m1", "speed": 1.0}],
        edges=[{"parent": "a", "child": "b"}],
        makespan_limit_s=8,
    )
    (short,) = explain_infeasible(inst)
    assert short["kind"] == "makespan_limit"
    assert (short["earliest_s"], short["limit_s"], short["excess_s"]) == (10.0, 8.0, 2.0)


def test_deadlines_met_alone_but_not_together():
    # One machine; x and y (3 s each) are both due at 4: alone each fits, together 6 s > 4.
    inst = dag(
        [
            {"name": "x", "work": 3, "deadline_s": 4},
            {"name": "y", "work": 3, "deadline_s": 4},
            {"name": "z", "work": 1},
        ],
        machines=[{"name": "m0", "speed": 1.0}],
    )
    (short,) = explain_infeasible(inst)
    assert short["kind"] == "deadline_load"
    assert short["excess_s"] == pytest.approx(2.0)
    assert "2 task(s) due by 4 s" in short["message"]


def test_tight_but_feasible_deadlines_are_not_reported():
    # The earliest ends exactly: b at 5 s, and x + y fill [0, 6] on one machine.
    inst = dag(
        [
            {"name": "a", "work": 4},
            {"name": "b", "work": 6, "deadline_s": 5},
            {"name": "x", "work": 3, "deadline_s": 6},
        ],
        edges=[{"parent": "a", "child": "b"}],
        makespan_limit_s=6,
    )
    assert explain_infeasible(inst) == []
    result = solve(inst, SolveOptions(time_limit_s=5))
    assert result.status == SolutionStatus.OPTIMAL


@pytest.mark.parametrize(
    ("backend", "milp_solver"), [b for b in exact_backends() if b[0] != "rcmax"]
)
def test_solve_says_why_it_is_infeasible(backend, milp_solver):
    result = solve(
        dag(**DEADLINES),
        SolveOptions(time_limit_s=5, backend=backend, milp_solver=milp_solver),
    )
    assert result.status == SolutionStatus.INFEASIBLE
    assert result.stop_reason == StopReason.PROVEN
    assert result.message.startswith("no schedule fits: task b ends at 5 s at the earliest")
    assert "its deadline_s is 3: 2 s too late" in result.message
    assert "task c ends at 6 s" in result.message


def test_cli_summary_explains(tmp_path):
    path = tmp_path / "late.json"
    doc = {"name": "late", "dag": {"machines": [{"name": "m0", "speed": 1.0}], **DEADLINES}}
    path.write_text(json.dumps(doc))
    done = subprocess.run(
        [sys.executable, "-m", "placement.api.cli", "solve", str(path), "--time-limit", "5"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "status      infeasible" in done.stdout
    # On m0 alone: a ends at 4, b at 10 (due at 3): 7 s too late.
    assert "task b ends at 10 s at the earliest" in done.stdout
    assert "7 s too late" in done.stdout
