"""The two cases users file against topology-aware schedulers: Kueue, KAI, Volcano and ours.

Kueue TAS (``models/gpu/peers/kueue_tas.py``), KAI's topology plugin with bin-packing
(``models/gpu/peers/kai.py``) and Volcano's network-topology-aware allocation with
bin-packing (``models/gpu/peers/volcano.py``), written from their sources, admit the gangs
one at a time in their order; ours decides for all pending gangs at once (CP-SAT, proved). Every solution
goes through the family's checker.

1. *A bin-packing choice a greedy gets wrong*: racks with 19, 10 and 10 free GPUs; a 20-GPU
   gang that prefers a rack, then a 19-GPU gang that requires one. BestFit (Kueue's default
   for gangs with a level) takes the 19 and one of a 10 for the first gang, and the second
   waits; KAI (the block holds it, then the fewest racks covering 20: 19 and 10) too, and
   Volcano (soft mode: rack B's nodes first, then the fullest nodes elsewhere);
   Kueue's LeastFreeCapacity and ours take the two 10s and place both.
2. *A required-topology gang that fits only after moving one small pod*: rack A has 8 + 7 + 1
   free GPUs (16), rack B 8 + 6 + 0 (14); a 1-GPU pod arrives, then a 16-GPU gang that requires
   a rack. Every Kueue profile, KAI's and Volcano's bin-packing put the small pod on the fullest node
   that fits it (rack A's 1-free node) and the gang waits; ours puts it in rack B and places
   the gang in A. Had the small pod been running already, it would have to move: only
   ``ours-migrate`` (ours plus a re-optimization that may move running pods) places the gang
   then (:func:`test_the_pod_already_running_in_the_way_moves_only_under_ours_migrate`).
"""

from __future__ import annotations

from typing import Any

import pytest

from placement.models.gpu import check
from placement.models.gpu.instance import GpuInstance
from placement.models.gpu.peers.kai import kai_one_at_a_time
from placement.models.gpu.peers.kueue_tas import PROFILES, kueue_one_at_a_time
from placement.models.gpu.peers.volcano import volcano_one_at_a_time
from placement.models.gpu.sim.topology import OURS_MIGRATE, POLICIES, simulate
from placement.models.gpu.sim.topology_user_cases import (
    running_pod_then_gang,
    small_pod_then_gang,
    twenty_then_nineteen,
)
from placement.solver.options import SolveOptions
from placement.solver.portfolio import solve


def placed(instance: GpuInstance, solution: Any) -> set[str]:
    report = check(instance, solution)
    assert report.feasible, report.violations
    return {instance.jobs[j].name for j in solution.placements}


def racks_of(instance: GpuInstance, solution: Any, job: str) -> list[str]:
    j = instance.job_index[job]
    return sorted({instance.nodes[w.node].groups[0] for w in solution.placements[j]})


def ours(instance: GpuInstance) -> Any:
    result = solve(instance, SolveOptions(time_limit_s=20, threads=1, deterministic=True))
    assert result.status.value == "optimal", result.message
    return result.solution


def test_twenty_gpus_from_racks_with_19_10_10_free() -> None:
    inst = twenty_then_nineteen()
    mixed = kueue_one_at_a_time(inst, "mixed")
    assert placed(inst, mixed) == {"train-20"}  # BestFit: 19 + 1, then 19 fits no rack
    assert "rack-A" in racks_of(inst, mixed, "train-20")
    assert placed(inst, kueue_one_at_a_time(inst, "best-fit")) == {"train-20"}
    kai = kai_one_at_a_time(inst)  # block fits; the fewest racks covering 20: A (19) and B
    assert placed(inst, kai) == {"train-20"}
    assert racks_of(inst, kai, "train-20") == ["rack-A", "rack-B"]
    volcano = volcano_one_at_a_time(inst)  # soft: packs rack B first, then spills over
    assert placed(inst, volcano) == {"train-20"}
    lfc = kueue_one_at_a_time(inst, "least-free-capacity")
    assert placed(inst, lfc) == {"train-20", "train-19"}
    assert racks_of(inst, lfc, "train-20") == ["rack-B", "rack-C"]
    best = ours(inst)
    assert placed(inst, best) == {"train-20", "train-19"}
    assert racks_of(inst, best, "train-19") == ["rack-A"]


def test_required_gang_behind_a_small_pod() -> None:
    inst = small_pod_then_gang()
    for profile in PROFILES:
        sol = kueue_one_at_a_time(inst, profile)
        assert placed(inst, sol) == {"small"}, profile
        assert racks_of(inst, sol, "small") == ["rack-A"], profile
    kai = kai_one_at_a_time(inst)  # bin-packing: the fullest node that fits, A's last GPU
    assert placed(inst, kai) == {"small"} and racks_of(inst, kai, "small") == ["rack-A"]
    volcano = volcano_one_at_a_time(inst)  # binpack: the fullest node after placing
    assert placed(inst, volcano) == {"small"} and racks_of(inst, volcano, "small") == ["rack-A"]
    best = ours(inst)
    assert placed(inst, best) == {"small", "gang-16"}
    assert racks_of(inst, best, "small") == ["rack-B"]
    assert racks_of(inst, best, "gang-16") == ["rack-A"]


@pytest.mark.parametrize("peer", [*PROFILES, "kai", "volcano"])
def test_peers_keep_required_levels_and_gangs_whole(peer: str) -> None:
    inst = twenty_then_nineteen()
    if peer in PROFILES:
        sol = kueue_one_at_a_time(inst, peer)
    else:
        sol = kai_one_at_a_time(inst) if peer == "kai" else volcano_one_at_a_time(inst)
    for j, workers in sol.placements.items():
        assert len(workers) == inst.jobs[j].workers
        if inst.jobs[j].locality_required:
            assert len({inst.nodes[w.node].groups[0] for w in workers}) == 1


def test_unknown_profile() -> None:
    with pytest.raises(ValueError, match="profile"):
        kueue_one_at_a_time(twenty_then_nineteen(), "most-free")


def test_the_pod_already_running_in_the_way_moves_only_under_ours_migrate() -> None:
    # rack A 8 + 7 + 0 free with the 1-GPU pod on its last GPU, rack B 8 + 6 + 0: the
    # 16-GPU rack-required gang fits only if a 1-GPU pod leaves rack A
    trace = running_pod_then_gang()
    rack = [node.groups[0] for node in trace.nodes]
    for policy in POLICIES:
        stats = simulate(trace, policy, cycle_s=60.0, deadline_s=5.0)
        assert stats.invalid == 0 and stats.decisions_checked >= stats.cycles > 0
        if policy == OURS_MIGRATE:
            assert stats.placed_at == {0: 0.0} and stats.migrations == 1
            assert {rack[n] for n in stats.nodes_of[0]} == {"rack-A"}
        else:
            assert stats.placed_at == {} and stats.migrations == 0, policy
