"""``placement bench partition-helix``: Helix's own setting (ASPLOS 2025 artifact, cluster24).

One case per model (LLaMA-2 70B, LLaMA-1 30B). Every placement -- ours (``placement solve``'s
engine on the partition instance ``placement import helix`` makes: the greedy, then the exact
boundary-flow MILP of :mod:`placement.models.partition.serving_milp`), Helix's (its MILP's
``ilp_sol.ini`` after Gurobi's 600 s), Petals', Swarm's and the separate pipelines per GPU
type (the artifact's, and ours under the same model) -- is scored by the family's checker
(:func:`placement.models.partition.check.check`, which runs the one flow evaluator). Separate
pipelines are scored per sub-cluster (the type's nodes and the links among them) and summed.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from placement.benchmarks.runner import load_1min
from placement.models.partition import FAMILY
from placement.models.partition.formats.helix import MODELS, load_helix, read_placement
from placement.models.partition.serving_cluster import HelixCluster, HelixNode
from placement.models.partition.serving_flow import score_placement
from placement.models.partition.serving_milp import links_never_bind, ranges_solution
from placement.models.partition.serving_plans import best_plan, plan_throughput
from placement.solver import SolutionStatus, SolveOptions, solve

DATA = "partition/helix"
TYPES = ("A100", "L4", "T4")


def cases_helix(config: Any) -> list[dict[str, Any]]:
    """One case per model (``--quick``: LLaMA-2 70B only, at the quick time limit)."""
    models = ["llama2_70b"] if config.quick else list(MODELS)
    return [{"case": model, "model": model} for model in models]


def _sub_cluster(cluster: HelixCluster, gpu: str) -> HelixCluster:
    """The nodes of type ``gpu`` as the artifact's ``<gpu>.ini`` names them
    (``compute_node_2``, ... in cluster24 order), with the links among them."""
    keep = [i for i, n in enumerate(cluster.nodes) if n.type == gpu]
    sub = cluster.restricted(keep, f"{cluster.name}-{gpu.lower()}")
    renamed = tuple(HelixNode(f"compute_node_{j + 2}", n.type) for j, n in enumerate(sub.nodes))
    return HelixCluster(sub.name, sub.num_layers, renamed, sub.throughput, sub.links, sub.notes)


def _row(model: str, method: str, **values: Any) -> dict[str, Any]:
    row = {
        "model": model,
        "method": method,
        "tokens_per_s": None,
        "tokens_per_s_partial": None,
        "feasible": True,
        "bound": None,
        "gap": None,
        "time_s": None,
        "note": "",
        "load_1min": load_1min(),
        "invalid": 0,
    }
    row.update(values)
    return row


def run_helix(case: dict[str, Any], config: Any) -> list[dict[str, Any]]:
    """Every placement of one model, scored by the one evaluator."""
    model = case["model"]
    root = Path(config.data_dir(DATA))
    cluster = load_helix(root, model)
    layout = root / "single_cluster" / MODELS[model]["layout"]
    rows: list[dict[str, Any]] = []

    instance = cluster.to_instance()
    began = time.perf_counter()
    ours = solve(instance, SolveOptions(time_limit_s=config.time_limit_s, threads=1))
    seconds = time.perf_counter() - began
    check = FAMILY.check(instance, ours.solution)  # the checker again, independently
    placement = {d: (s, k) for d, s, k in ours.solution.ranges}
    rows.append(
        _row(
            model,
            "ours: placement solve (greedy, boundary-flow MILP on HiGHS)",
            tokens_per_s=check.objective,
            tokens_per_s_partial=score_placement(cluster, placement, True).tokens_per_s,
            bound=ours.bound,
            gap=(ours.bound - check.objective) / check.objective if ours.bound else None,
            time_s=seconds,
            note=("proven" if ours.status == SolutionStatus.OPTIMAL else ours.stop_reason.value)
            + f"; {len(placement)} nodes used",
            invalid=int(not check.feasible or abs(check.objective - ours.objective) > 1e-6),
        )
    )
    for method, rel, note in (
        ("Helix's MILP placement (Gurobi, 600 s)", "ilp/ilp_sol.ini", "ilp"),
        ("Petals (artifact's placement)", "petals/petals_sol.ini", ""),
        ("Swarm (artifact's placement)", "swarm/swarm_sol.ini", ""),
    ):
        path = layout / rel
        if not path.is_file():
            continue
        placement = read_placement(path, cluster)
        score = FAMILY.check(instance, ranges_solution(placement))
        logged = MODELS[model]["logged_objective"]
        rows.append(
            _row(
                model,
                method,
                tokens_per_s=score.objective,
                tokens_per_s_partial=score_placement(cluster, placement, True).tokens_per_s,
                feasible=score.feasible,
                note=(f"Helix's log: {logged:.2f}" if note == "ilp" and logged else "")
                + ("; ".join(score.violations[:1])),
            )
        )
    # the artifact's separate pipelines, one sub-cluster per type, summed
    total = total_partial = 0.0
    errors: list[str] = []
    for gpu in TYPES:
        sub = _sub_cluster(cluster, gpu)
        path = layout / "separate" / f"{gpu.lower()}_solution_file.ini"
        placement = read_placement(path, sub)
        score = FAMILY.check(sub.to_instance(), ranges_solution(placement))
        total += score.objective
        total_partial += score_placement(sub, placement, True).tokens_per_s
        errors += [f"{gpu}: {e}" for e in score.violations[:1]]
    rows.append(
        _row(
            model,
            "separate pipelines per GPU type (artifact's placements)",
            tokens_per_s=total,
            tokens_per_s_partial=total_partial,
            feasible=not errors,
            note="; ".join(errors),
        )
    )
    # ours: the best placement of each type's sub-cluster under the same model, summed
    total = bound = seconds = 0.0
    proven = True
    for gpu in TYPES:
        sub = _sub_cluster(cluster, gpu).to_instance()
        began = time.perf_counter()
        best = solve(sub, SolveOptions(time_limit_s=config.time_limit_s / len(TYPES), threads=1))
        seconds += time.perf_counter() - began
        total += FAMILY.check(sub, best.solution).objective
        bound += best.bound if best.bound is not None else float("inf")
        proven = proven and best.status == SolutionStatus.OPTIMAL
    rows.append(
        _row(
            model,
            "separate pipelines per GPU type (ours, exact per type)",
            tokens_per_s=total,
            bound=bound,
            gap=(bound - total) / total if total else None,
            time_s=seconds,
            note="proven" if proven else "time limit",
        )
    )
    # replica plans: disjoint pipelines, exact by the DP over pipeline patterns
    for method, types in (
        ("ours: replicas (disjoint pipelines, exact DP)", None),
        ("separate pipelines per GPU type (ours: replicas, exact DP per type)", TYPES),
    ):
        began = time.perf_counter()
        total = 0.0
        errors = []
        count = 0
        for group in [None] if types is None else [(t,) for t in types]:
            plan = best_plan(cluster, group)
            value, bad = plan_throughput(cluster, plan)
            total += value
            errors += bad
            count += len(plan.pipelines)
        rows.append(
            _row(
                model,
                method,
                tokens_per_s=total,
                feasible=not errors,
                time_s=time.perf_counter() - began,
                note=f"{count} pipelines; "
                + ("proven (links never bind)" if links_never_bind(cluster) else "links bind"),
                invalid=len(errors),
            )
        )
    return rows


def _f(value: Any, digits: int = 2) -> str:
    if value is None or value == "":
        return "-"
    return f"{float(value):,.{digits}f}"


def report_helix(rows: list[dict[str, Any]], config: Any) -> str:
    """One table per model."""
    out = [
        f"""\
Helix's single-cluster setting (Mei et al., ASPLOS 2025; the artifact's data in
`{DATA}`): 24 nodes (4 A100-40GB, 8 L4-24GB, 12 T4-16GB), every pair linked at 1 Gb/s, read
with `placement import helix DIR --model M`. Each node holds one contiguous layer range
within its type's limit; a node holding k layers serves at most T(type, k) tokens/s (Helix's
table, read from its MILP); the value of a placement is the max flow from source to sink
(Helix's MILP objective). Every placement below is scored by the same evaluator
(`models/partition/serving_flow.py`): "tokens/s" with Helix's rule (an edge u -> v only where
v starts where u ends, the artifact's setting), "partial" with its partial-inference rule
(v may start at or before u's end). Ours: `placement solve` on the imported instance (the greedy, then the boundary-flow MILP
of `models/partition/serving_milp.py` on HiGHS, then, while its bound stays above, the
cover bound of `models/partition/serving_cover_bound.py`; 1 thread, time limit
{config.time_limit_s:g} s); `bound` is the solve's proven upper bound on every placement,
`gap` = (bound - ours) / ours.
Separate pipelines: one sub-cluster per GPU type, scored per sub-cluster and summed. The
artifact's separate placements are hand made (its `step2_gen_layout.py`, Thesys-lab/Helix-ASPLOS25
as mirrored in xogusrns123/Helix-ASPLOS25 at 34655ff9: "We manually create model placement
for the separate pipelines baseline"): for LLaMA-2 70B they split the 80 layers evenly over
each type's nodes (A100 20, L4 10, T4 6-7 layers), beyond the half-VRAM limits of Helix's
planner (12, 7, 4), hence infeasible here; the LLaMA-1 30B ones stay within the limits.
Replicas: plans of disjoint pipelines (`models/partition/serving_plans.py`; each node in at
most one pipeline, a pipeline serves its slowest stage or link, the plan the sum), the best
one by an exact DP over pipeline patterns, scored by the plan evaluator of the same module
(a plan is also a flow, so it never beats the max-flow optimum).
`load avg`: 1-minute load when the row finished.
"""
    ]
    header = [
        "placement",
        "tokens/s",
        "partial",
        "feasible",
        "bound",
        "gap",
        "time (s)",
        "note",
        "load avg",
        "invalid",
    ]
    for model in MODELS:
        mine = [r for r in rows if r["model"] == model]
        if not mine:
            continue
        out += [f"## {model}", ""]
        out.append("| " + " | ".join(header) + " |")
        out.append("|" + "---|" * len(header))
        for r in mine:
            gap = r["gap"]
            cells = [
                r["method"],
                _f(r["tokens_per_s"]),
                _f(r["tokens_per_s_partial"]),
                "yes" if r["feasible"] in (True, "True") else "no",
                _f(r["bound"]),
                "-" if gap in (None, "") else f"{100 * float(gap):.2f} %",
                _f(r["time_s"]),
                str(r["note"]).replace("|", "/"),
                _f(r["load_1min"]),
                str(r["invalid"]),
            ]
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)
