"""placement.solver.testing: the public ExactContext, the installed exact backends and the
JSON-form round trip."""

from __future__ import annotations

import ast
import time
from pathlib import Path

import pytest

from placement.models.partition import PartitionSolution
from placement.solver import CancellationToken, SolveOptions, StopReason
from placement.solver import backends as backend_registry
from placement.solver.family import ExactOutcome, get_family
from placement.solver.testing import (
    ExactContext,
    backend_id,
    exact_backends,
    instance_document,
    registered,
    round_trip,
)
from tests.optima import instance


def test_report_checks_keeps_the_best_and_records_everything() -> None:
    inst = instance("partition", "two_way_split")  # optimum [4 | 3 2 1] = 6 ms
    ctx = ExactContext(inst, SolveOptions(time_limit_s=5), bound=5.0)
    assert ctx.backend == "cpsat" and ctx.incumbent() is None and ctx.proven_bound() == 5.0
    assert ctx.report(PartitionSolution((0, 0, 1, 1)), "a", bound=6.0)  # 7 ms, kept
    assert not ctx.report(PartitionSolution((0, 1, 1, 7)), "broken")  # no device 7
    assert not ctx.report(PartitionSolution((0, 0, 0, 1)), "worse")  # 9 ms
    assert ctx.report(PartitionSolution((0, 1, 1, 1)), "b")  # 6 ms
    assert ctx.incumbent() == PartitionSolution((0, 1, 1, 1))
    assert ctx.best_source == "b" and ctx.best_report.objective == pytest.approx(6.0)
    assert [h.source for h in ctx.history] == ["a", "b"]
    assert [s for s, _ in ctx.reports] == ["a", "broken", "worse", "b"]
    assert ctx.sources == ["a", "worse", "b"]
    assert [s for s, _ in ctx.rejected] == ["broken"]
    assert ctx.bounds == [6.0]
    assert ctx.proven_bound() == 6.0  # the tightest (a lower bound: the largest)
    assert 0 < ctx.time_left() <= 5


def test_run_drives_the_family_encoding_and_keeps_the_outcome() -> None:
    inst = instance("partition", "colocated")
    ctx = ExactContext(inst, SolveOptions(backend="milp", time_limit_s=10, threads=1))
    assert ctx.backend == "milp"
    outcome = ctx.run()
    assert ctx.outcome is outcome and outcome.proven_optimal
    assert get_family("partition").check(inst, outcome.proven_solution).objective == 3.0

    class Fixed:
        def solve(self, instance, ctx):
            ctx.report(PartitionSolution((0, 1, 1, 1)), "fixed")
            return ExactOutcome(StopReason.PROVEN, bound=3.0)

    ctx = ExactContext(inst, backend="cpsat")
    assert ctx.run(Fixed()).bound == 3.0 and ctx.sources == ["fixed"]


def test_cancel_and_deadline() -> None:
    token = CancellationToken()
    ctx = ExactContext(
        instance("partition", "colocated"), SolveOptions(time_limit_s=0.05, cancel=token)
    )
    assert ctx.cancel is token
    time.sleep(0.06)
    assert ctx.time_left() == 0.0
    ctx.cancel.cancel()
    assert token.cancelled


def test_exact_backends_come_from_the_backend_registry() -> None:
    pairs = exact_backends()
    expected = [n for n in backend_registry.BACKENDS if backend_registry.available(n)]
    assert len(pairs) == len(expected)
    for (backend, milp_solver), name in zip(pairs, expected, strict=True):
        assert name in (backend, milp_solver)
    assert [backend_id(*p) for p in pairs][:1] == ["cpsat"]
    assert backend_id("milp", "cbc") == "milp-cbc"


def test_round_trip_validates_as_files_do() -> None:
    inst = instance("dag", "chain")
    back = round_trip(inst)
    assert instance_document(back) == instance_document(inst)
    assert back is not inst and back.validated


def test_it_imports_nothing_above_the_solver() -> None:
    import placement.solver.testing as module

    tree = ast.parse(Path(module.__file__).read_text())
    names = [
        alias.name if isinstance(node, ast.Import) else node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in (node.names if isinstance(node, ast.Import) else [None])
    ]
    placement = [n for n in names if n and n.startswith("placement")]
    assert placement and all(n.startswith("placement.solver") for n in placement), placement


def test_registered_leaves_the_registry_as_it_was() -> None:
    from placement.solver.family import family_names

    before = family_names()

    class Toy:
        name = "test-toy"

    with registered(Toy()) as toy:
        assert get_family("test-toy") is toy and "test-toy" in family_names()
    assert family_names() == before
    with pytest.raises(KeyError):
        get_family("test-toy")
