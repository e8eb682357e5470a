"""LLM serving clusters for a request stream (issue 38).

GPU types (count, cost, memory), a performance profile per GPU type and tensor-parallel
degree, a workload of length classes with an arrival rate, TTFT and TPOT targets and an
optional GPU budget. Decisions: instances per kind (GPU type, degree, role: mixed, prefill or
decode) and the rate of each class on each deployment. Objective: with a budget the most
goodput, then the least peak load (the headroom), then the least cost, else the least cost
serving everything, under a fluid (rate) capacity model with SLO-feasible load limits; the
simulator (:mod:`.sim`) replays a trace request by request through a configuration and
measures what it really serves.

Parts: :mod:`.instance` (typed instance, kinds, solution, the message), :mod:`.fluid` (the
capacity model's integer rows), :mod:`.check` (independent checker and the solution message),
:mod:`.routing` (greedy routing onto fixed deployments), :mod:`.greedy` (the fallback and a
homogeneous cluster), :mod:`.encoding` with :mod:`.cpsat` and :mod:`.milp` (the exact model),
:mod:`.profiles` (roofline profiles from datasheets), :mod:`.explain`, :mod:`.generate`,
:mod:`.summary`, :mod:`.plot`, :mod:`.warm_start`; :mod:`.formats` (the Azure LLM traces),
:mod:`.peers` (round-robin and least-outstanding routing, Splitwise's pools, DistServe's
placement, AcceLLM's pairs, L4's stages) and :mod:`.sim` (the request-level simulator and its
checker).
"""

from __future__ import annotations

from typing import Any

from placement.models.serving import check as _check
from placement.models.serving import instance as _instance
from placement.models.serving.encoding import quick_bound
from placement.models.serving.explain import explain_unserved
from placement.models.serving.formats import IMPORTERS
from placement.models.serving.generate import GENERATORS, generate
from placement.models.serving.greedy import greedy_solutions
from placement.models.serving.instance import (
    Deployment,
    GpuType,
    LengthClass,
    Profile,
    Route,
    ServingInstance,
    ServingSolution,
    Slo,
    kinds,
)
from placement.models.serving.plot import draw
from placement.models.serving.summary import summarize
from placement.models.serving.warm_start import adapt_start
from placement.solver.family import Family
from placement.solver.options import SolveOptions
from placement.solver.portfolio import solve


class ServingFamily(Family):
    """The LLM-serving family object registered as ``serving``."""

    name = "serving"
    sense = "max"
    instance_type = ServingInstance
    encodings = {
        "cpsat": "placement.models.serving.cpsat:CpSatEncoding",
        "milp": "placement.models.serving.milp:MilpEncoding",
    }

    instance_from_message = staticmethod(_instance.instance_from_message)
    instance_to_message = staticmethod(_instance.instance_to_message)
    solution_from_message = staticmethod(_instance.solution_from_message)
    solution_to_message = staticmethod(_check.solution_to_message)
    named_solution = staticmethod(_instance.named_solution)
    adapt_start = staticmethod(adapt_start)

    greedy = staticmethod(greedy_solutions)
    check = staticmethod(_check.check)

    def objective_sense(self, instance: ServingInstance) -> str:
        """``max`` (goodput) with a GPU budget, ``min`` (cost) without."""
        return "max" if instance.maximise_goodput else "min"

    def auto_backend(self, instance: ServingInstance) -> str:
        """The MILP: its LP relaxation bounds the rate rows well."""
        del instance
        return "milp"

    def quick_bound(self, instance: ServingInstance) -> float:
        """Everything that arrives (with a budget), else 0 (see :func:`.encoding.quick_bound`)."""
        return quick_bound(instance)

    def explain_unplaced(
        self, instance: ServingInstance, solution: Any, stop: Any = None
    ) -> list[dict[str, Any]]:
        """A reason per class served below its arrival rate."""
        del stop
        return explain_unserved(instance, solution)

    def size(self, instance: ServingInstance) -> dict[str, int]:
        """Classes and kinds (the service's size limits)."""
        return {"classes": len(instance.classes), "kinds": len(kinds(instance))}

    def corrupt(self, instance: ServingInstance, solution: ServingSolution) -> ServingSolution:
        """A solution made infeasible: its first deployment given one instance more than the
        GPUs of its type (or a deployment of a kind the instance lacks when it has none)."""
        if not solution.deployments:
            return ServingSolution((Deployment(len(kinds(instance)), 1),), ())
        first = solution.deployments[0]
        gpu = instance.profiles[kinds(instance)[first.kind].profile]
        count = instance.gpu_types[instance.gpu_index[gpu.gpu_type]].count
        too_many = count // gpu.tensor_parallel + 1
        return ServingSolution(
            (Deployment(first.kind, too_many), *solution.deployments[1:]), solution.routes
        )

    def warm_up(self) -> None:
        """Run every code path of a solve once on a small generated instance."""
        solve(generate(2, 1.0, 8, budget=8), SolveOptions(time_limit_s=0.5, threads=1))

    generators = GENERATORS
    importers = IMPORTERS

    plot = staticmethod(draw)
    summarize = staticmethod(summarize)


FAMILY = ServingFamily()

__all__ = [
    "FAMILY",
    "Deployment",
    "GpuType",
    "LengthClass",
    "Profile",
    "Route",
    "ServingInstance",
    "ServingSolution",
    "Slo",
]
