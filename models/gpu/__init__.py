"""Topology-aware GPU allocation.

Jobs (whole, fractional or CPU-only workers, gangs, GPU types, priorities, locality) onto a
cluster whose GPUs sit in NVLink domains, nodes, racks and spines.

Parts: :mod:`.instance` (typed instance and solution, JSON form, validation), :mod:`.check`
(independent checker and objective), :mod:`.greedy` (topology-aware best fit, the fallback,
and an FGD-style policy), :mod:`.cpsat` and :mod:`.milp` (exact encodings), :mod:`.explain`
(why a job is unplaced), :mod:`.generate` (seeded synthetic clusters and job mixes),
:mod:`.plot` (the cluster's GPUs coloured by the jobs holding them), :mod:`.density` (node CPU
capacity that falls with the number of pods), :mod:`.formats` (Kubernetes
objects in and Bindings out, a Slurm cluster's nodes and topology in, the openb trace), :mod:`.peers` (Kueue TAS, KAI, Volcano, Lyra, the FGD paper's policies), :mod:`.sim` (the topology and openb replays).
"""

from __future__ import annotations

from placement.models.gpu import instance as _instance
from placement.models.gpu.bound import capacity_bound
from placement.models.gpu.check import check, solution_to_message
from placement.models.gpu.density import CpuCapacityPoint
from placement.models.gpu.explain import explain_unplaced
from placement.models.gpu.formats import EXPORTERS, IMPORTERS
from placement.models.gpu.generate import GENERATORS, generate
from placement.models.gpu.instance import (
    GpuInstance,
    GpuJob,
    GpuNode,
    GpuSolution,
    TopologyLevel,
    WorkerPlacement,
    WorkloadClass,
)
from placement.models.gpu.plot import draw
from placement.models.gpu.reading import instance_from_message
from placement.models.gpu.reopt_greedy import family_greedies
from placement.models.gpu.summary import summarize
from placement.models.gpu.warm_start import adapt_start
from placement.solver.family import Family
from placement.solver.options import SolveOptions
from placement.solver.portfolio import solve


class GpuFamily(Family):
    """The GPU-allocation family object registered as ``gpu``."""

    name = "gpu"
    sense = "max"
    instance_type = GpuInstance
    typed_paths = {"nodes": "cluster.nodes", "levels": "cluster.levels"}
    encodings = {
        "cpsat": "placement.models.gpu.cpsat:CpSatEncoding",
        "milp": "placement.models.gpu.milp:MilpEncoding",
    }

    instance_from_message = staticmethod(instance_from_message)
    instance_to_message = staticmethod(_instance.instance_to_message)
    solution_from_message = staticmethod(_instance.solution_from_message)
    named_solution = staticmethod(_instance.named_solution)
    adapt_start = staticmethod(adapt_start)
    solution_to_message = staticmethod(solution_to_message)
    validate_fields = staticmethod(_instance.validate_fields)

    greedy = staticmethod(family_greedies)
    check = staticmethod(check)
    explain_unplaced = staticmethod(explain_unplaced)
    summarize = staticmethod(summarize)
    quick_bound = staticmethod(capacity_bound)
    """Cheap upper bound on the primary objective (GPUs): see :mod:`.bound`."""

    def size(self, instance: GpuInstance) -> dict[str, int]:
        """What the service's size limits count: jobs, nodes and GPUs."""
        return {
            "jobs": len(instance.jobs),
            "nodes": len(instance.nodes),
            "gpus": sum(n.gpu_count for n in instance.nodes),
        }

    def warm_up(self) -> None:
        """Run every code path of a solve once on a small generated instance."""
        solve(generate(64, 24, seed=0), SolveOptions(time_limit_s=0.5, threads=1))

    def corrupt(self, instance: GpuInstance, solution: GpuSolution) -> GpuSolution:
        """A solution made infeasible: job 0's first worker on a node that does not exist."""
        placements = dict(solution.placements)
        placements[0] = (WorkerPlacement(len(instance.nodes), (0,)),)
        return GpuSolution(placements)

    generators = GENERATORS
    importers = IMPORTERS
    exporters = EXPORTERS
    plot = staticmethod(draw)


FAMILY = GpuFamily()

__all__ = [
    "FAMILY",
    "CpuCapacityPoint",
    "GpuInstance",
    "GpuJob",
    "GpuNode",
    "GpuSolution",
    "TopologyLevel",
    "WorkerPlacement",
    "WorkloadClass",
    "check",
]
