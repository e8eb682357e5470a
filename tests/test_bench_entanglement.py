"""The entanglement family's benchmark suites run end to end (``placement bench NAME
--quick`` as a real process), and a broken routing is counted as invalid."""

from __future__ import annotations

import dataclasses

from placement.benchmarks.runner import Rechecker, recheck
from placement.models.entanglement import EntanglementSolution
from placement.models.entanglement.generate import generate
from placement.models.entanglement.greedy import qcast_greedy


def test_broken_routing_is_counted_invalid() -> None:
    instance = generate(nodes=20, pairs=3, seed=0, candidate_paths=2)
    good = qcast_greedy(instance)
    assert good.paths
    first = good.paths[0]
    # More channels than any link has (the generator gives 3-7 per link).
    wide = dataclasses.replace(first, width=50)
    broken = EntanglementSolution(paths=(wide, *good.paths[1:]))
    report, invalid = recheck("entanglement", instance, broken)
    assert invalid == 1 and not report.feasible
    assert recheck("entanglement", instance, good)[1] == 0
    checked = Rechecker("entanglement")
    checked(instance, good)
    checked(instance, broken)
    assert checked.columns() == {"solutions_checked": 2, "invalid": 1}
