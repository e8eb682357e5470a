"""``placement bench gpu-density``: node CPU capacity that falls with density (issue 37).

Isstaif, Kalyvianaki and Mortier, "Mitigating context switching in densely packed Linux
clusters with Latency-Aware Group Scheduling", arXiv:2508.15703, 2025, show that a node
packed with many cgroups (pods) delivers less than its nominal CPU: the cost of a context
switch and the rate of switching both grow with the number of co-located cgroups, so the
overhead grows multiplicatively, and in practice clusters are over-provisioned to hide it.

**Parameters, and what is assumed.** The per-density figures of the paper's measurements
(its plots of throughput and context-switch cost against co-located cgroups) could not be
read from the text available to us, so the curve below is *assumed*, not measured. It is
calibrated on the one number the paper states in its abstract: with its scheduler the same
effective performance needs a 28 % smaller cluster, i.e. at the densities it measured a
default-CFS node delivers about 72 % of what it could. :data:`CURVE` takes a 64-core node
to 72 % of its nominal CPU (46.08 cores) at 110 pods (Kubernetes' default pod limit per
node), losing little while sparse (1.6 % at 20 pods) and more per pod as it fills (concave,
as the model requires); beyond 110 pods it goes on along its last segment. Change it with
``--param curve=0:64000,20:63000,50:58000,110:46080`` (pods:milli-cores).

**The protocol.** Both packings keep to the kubelet's default limit of 110 pods a node
(written in the model's own terms: a last curve point at 111 pods with 0 milli-cores, a
concave drop). Per seed (1-10), a stream of 1,500 CPU-only pods (requests 250, 500, 1000, 2000
milli-cores, drawn with probabilities 0.25, 0.35, 0.25, 0.15: about 80 pods a node when
packed by nominal CPU) is packed onto identical 64-core nodes by three packers:

* ``first_fit`` -- each pod in stream order to the first node it fits (the kube-scheduler's
  ``MostAllocated`` behaves alike), a new node when none does;
* ``best_fit`` -- the family's greedy (:func:`placement.models.gpu.greedy.best_fit`) on the
  pods grouped by request (one Deployment of identical replicas per size);
* ``cpsat`` -- the exact model on the same jobs (CP-SAT through ``solve``).

Each packs twice: density-blind (nominal CPU) and density-aware (the curve). ``nodes`` is the
fewest nodes on which the packer places every pod (first fit: the nodes it opened; the others:
the smallest cluster, from the nominal lower bound up, on which it places all; for CP-SAT a
smaller cluster is *proved* too small when its solve is optimal). ``overloaded`` is the number
of nodes of the density-blind packing that the family's checker rejects under the curve
(CPU used above the effective capacity at the node's pod count); ``worst`` the highest ratio
of CPU used to effective capacity on a node of that packing.
"""

from __future__ import annotations

import json
import math
import random
import re
import time
from pathlib import Path
from typing import Any

from placement.benchmarks.runner import Rechecker, load_average
from placement.benchmarks.tables import rule
from placement.models.gpu.check import check
from placement.models.gpu.density import CpuCapacityPoint
from placement.models.gpu.greedy import best_fit
from placement.models.gpu.instance import (
    GpuInstance,
    GpuJob,
    GpuNode,
    GpuSolution,
    TopologyLevel,
    WorkerPlacement,
)
from placement.solver import SolutionStatus, SolveOptions, solve

NODE_CPU_MILLI = 64_000
MAX_PODS = 110
"""The kubelet's default ``maxPods``: both packings keep to it (a curve point that drops to 0
at 111 pods says so in the model's own terms)."""
CURVE = ((0, 64_000), (20, 63_000), (50, 58_000), (110, 46_080))
"""Assumed (pods, effective milli-cores) of a 64-core node; see the module docstring."""
BLIND = ((MAX_PODS, NODE_CPU_MILLI),)
"""The density-blind node: its nominal CPU up to :data:`MAX_PODS` pods."""
SIZES_MILLI = (250, 500, 1000, 2000)
SIZE_WEIGHTS = (0.25, 0.35, 0.25, 0.15)
FULL = {"pods": 1500, "seeds": tuple(range(1, 11))}
QUICK = {"pods": 120, "seeds": (1,)}
PACKERS = ("first_fit", "best_fit", "cpsat")
_OVERLOADED = re.compile(r"^node '([^']*)' overloaded by density")


def cases_density(config: Any) -> list[dict[str, Any]]:
    """One case per seed; ``--param pods=N``, ``--param seeds=1,2`` and ``--param curve=...``
    change the protocol (defaults: the full one, or ``--quick``)."""
    plan = QUICK if config.quick else FULL
    pods = int(config.params.get("pods") or plan["pods"])
    seeds = [int(s) for s in config.params.get("seeds") or plan["seeds"]]
    curve = _curve(config.params.get("curve"))
    return [
        {
            "case": f"{pods} pods seed {seed}",
            "pods": pods,
            "seed": seed,
            "curve": curve,
            "time_limit_s": config.time_limit_s,
        }
        for seed in seeds
    ]


def _curve(text: Any) -> tuple[tuple[int, int], ...]:
    """``0:64000,20:63000`` as points; :data:`CURVE` when not given."""
    if not text:
        return CURVE
    parts = text if isinstance(text, list | tuple) else str(text).split(",")
    return tuple((int(p.split(":")[0]), int(p.split(":")[1])) for p in parts)


def stream(pods: int, seed: int) -> list[int]:
    """The pods' CPU requests in arrival order (milli-cores)."""
    rng = random.Random(seed)
    return rng.choices(SIZES_MILLI, weights=SIZE_WEIGHTS, k=pods)


def with_pod_limit(curve: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    """``curve`` up to :data:`MAX_PODS` pods (its value there added as a point), then 0."""
    points = [p for p in curve if p[0] <= MAX_PODS]
    if points[-1][0] < MAX_PODS:
        node = cluster(1, tuple(points), [], grouped=False).nodes[0]
        points.append((MAX_PODS, int(node.effective_cpu_milli(MAX_PODS))))
    return (*points, (MAX_PODS + 1, 0))


def cluster(
    nodes: int, curve: tuple[tuple[int, int], ...], requests: list[int], grouped: bool
) -> GpuInstance:
    """``nodes`` identical nodes with the capacity ``curve`` and the pods: one job per pod,
    or with ``grouped`` one job per request size (its pods as identical workers)."""
    points = tuple(CpuCapacityPoint(k, y) for k, y in curve)
    cluster_nodes = [
        GpuNode(
            name=f"n{i:03d}",
            gpu_type="",
            gpu_count=0,
            gpu_memory_mib=0,
            nvlink_domain_size=0,
            cpu_milli=NODE_CPU_MILLI,
            memory_mib=1_000_000,
            cpu_capacity_curve=points,
        )
        for i in range(nodes)
    ]
    if grouped:
        jobs = [
            GpuJob(name=f"cpu-{size}m", workers=requests.count(size), cpu_milli=size)
            for size in SIZES_MILLI
            if size in requests
        ]
    else:
        jobs = [GpuJob(name=f"pod-{k}", cpu_milli=c) for k, c in enumerate(requests)]
    levels = [TopologyLevel("nvlink", 600.0), TopologyLevel("node", 64.0)]
    return GpuInstance(levels=levels, nodes=cluster_nodes, jobs=jobs, name="density")


def first_fit(requests: list[int], curve: tuple[tuple[int, int], ...]) -> GpuSolution:
    """Each pod to the first node it fits (a new node when none does): within the effective
    capacity of ``curve`` at the node's pod count."""
    probe = cluster(1, curve, [], grouped=False).nodes[0]
    used: list[int] = []
    pods: list[int] = []
    placements: dict[int, tuple[WorkerPlacement, ...]] = {}
    for k, c in enumerate(requests):
        n = next(
            (i for i in range(len(used)) if probe.cpu_fits(used[i] + c, pods[i] + 1)),
            len(used),
        )
        if n == len(used):
            used.append(0)
            pods.append(0)
        used[n] += c
        pods[n] += 1
        placements[k] = (WorkerPlacement(n),)
    return GpuSolution(placements)


def _nodes_used(solution: GpuSolution) -> int:
    return len({w.node for ws in solution.placements.values() for w in ws})


def _fewest_nodes(
    packer: str,
    requests: list[int],
    curve: tuple[tuple[int, int], ...],
    time_limit_s: float,
    checker: Rechecker,
) -> tuple[int, GpuSolution, GpuInstance, bool]:
    """The fewest nodes on which ``packer`` places every pod, its packing there, the instance,
    and whether fewer nodes are proved too small (CP-SAT) or the count is the packer's own."""
    if packer == "first_fit":
        solution = first_fit(requests, curve)
        m = _nodes_used(solution)
        instance = cluster(m, curve, requests, grouped=False)
        checker(instance, solution)
        return m, solution, instance, True
    m = math.ceil(sum(requests) / NODE_CPU_MILLI)
    proved_below = True
    while True:
        instance = cluster(m, curve, requests, grouped=True)
        if packer == "best_fit":
            solution = best_fit(instance)
            proven_short = False
        else:
            result = solve(
                instance, SolveOptions(backend="cpsat", time_limit_s=time_limit_s, threads=1)
            )
            checker.dropped(result.rejected_candidates)
            solution = result.solution
            proven_short = result.status == SolutionStatus.OPTIMAL
        checker(instance, solution)
        if len(solution.placements) == len(instance.jobs):
            return m, solution, instance, proved_below
        proved_below = proved_below and proven_short
        m += 1


def _overload(
    instance: GpuInstance, solution: GpuSolution
) -> tuple[int, float, int, list[tuple[int, int]]]:
    """Nodes the checker finds overloaded by density, the highest CPU used / effective
    capacity, the most pods on one node, and (pods, milli-cores used) per node."""
    report = check(instance, solution)
    overloaded = {m.group(1) for v in report.violations if (m := _OVERLOADED.match(v))}
    used = [0] * len(instance.nodes)
    pods = [0] * len(instance.nodes)
    for j, workers in solution.placements.items():
        for w in workers:
            used[w.node] += instance.jobs[j].cpu_milli
            pods[w.node] += 1
    worst = max(
        (
            u / max(node.effective_cpu_milli(k), 1.0)
            for u, k, node in zip(used, pods, instance.nodes, strict=True)
        ),
        default=0.0,
    )
    return len(overloaded), worst, max(pods, default=0), list(zip(pods, used, strict=True))


def run_density(case: dict[str, Any], config: Any) -> list[dict[str, Any]]:
    """The three packers on one seed, one row each."""
    del config
    requests = stream(case["pods"], case["seed"])
    rows = []
    for packer in PACKERS:
        checker = Rechecker("gpu")
        started = time.monotonic()
        aware_curve = with_pod_limit(case["curve"])
        blind_m, blind, blind_inst, blind_proved = _fewest_nodes(
            packer, requests, BLIND + ((MAX_PODS + 1, 0),), case["time_limit_s"], checker
        )
        aware_m, aware, aware_inst, aware_proved = _fewest_nodes(
            packer, requests, aware_curve, case["time_limit_s"], checker
        )
        # The density-blind packing on the same nodes, judged under the curve.
        under_curve = cluster(blind_m, aware_curve, requests, grouped=packer != "first_fit")
        overloaded, worst, most_pods, blind_load = _overload(under_curve, blind)
        _, aware_worst, aware_pods, aware_load = _overload(aware_inst, aware)
        rows.append(
            {
                "pods": case["pods"],
                "seed": case["seed"],
                "packer": packer,
                "cpu_cores": sum(requests) / 1000,
                "blind_nodes": blind_m,
                "aware_nodes": aware_m,
                "extra_nodes_pct": round(100 * (aware_m / blind_m - 1), 1),
                "blind_overloaded": overloaded,
                "blind_worst_load": round(worst, 3),
                "blind_most_pods": most_pods,
                "aware_worst_load": round(aware_worst, 3),
                "aware_most_pods": aware_pods,
                "blind_node_load": json.dumps(blind_load),
                "aware_node_load": json.dumps(aware_load),
                "proved": ("yes" if blind_proved and aware_proved else "no")
                if packer == "cpsat"
                else "",
                "wall_s": round(time.monotonic() - started, 3),
                "load": load_average(),
                **checker.columns(),
            }
        )
    return rows


def report_density(rows: list[dict[str, Any]], config: Any) -> str:
    """One line per seed and packer, then the means per packer."""
    curve = _curve(config.params.get("curve"))
    points = ", ".join(f"{k} pods: {y / 1000:g} cores" for k, y in curve)
    lines = [
        "Node CPU capacity that falls with density. Every node has 64 cores nominal and takes",
        f"at most {MAX_PODS} pods (the kubelet's default maxPods); the assumed curve (calibrated",
        f"on Isstaif et al. 2025's 28 %, see the suite) is {points}.",
        "`blind` / `aware`: fewest nodes on which the packer places every pod with the nominal",
        "CPU / with the curve (both within the pod limit). `overloaded`: nodes of the blind packing whose CPU used exceeds",
        "the effective capacity at their pod count (the checker's verdict under the curve);",
        "`worst`: highest CPU used / effective capacity there; `pods`: most pods on a node.",
        "`proved`: CP-SAT proved every smaller cluster too small (both packings).",
        "",
        "| pods | seed | packer | cores asked | blind nodes | overloaded | worst | pods "
        "| aware nodes | extra | aware worst | aware pods | proved | wall s | invalid |",
        rule("rrlrrrrrrrrrlrr"),
    ]
    for r in rows:
        lines.append(
            f"| {r['pods']} | {r['seed']} | {r['packer']} | {float(r['cpu_cores']):.1f} "
            f"| {r['blind_nodes']} | {r['blind_overloaded']} | {float(r['blind_worst_load']):.2f} "
            f"| {r['blind_most_pods']} | {r['aware_nodes']} | {float(r['extra_nodes_pct']):.1f} % "
            f"| {float(r['aware_worst_load']):.2f} | {r['aware_most_pods']} "
            f"| {r.get('proved') or '-'} | {float(r['wall_s']):.2f} "
            f"| {r['invalid']} |"
        )
    lines += [
        "",
        "Means over seeds:",
        "",
        "| packer | blind nodes | overloaded (of blind) | worst load | aware nodes | extra |",
        rule("lrrrrr"),
    ]
    for packer in PACKERS:
        sel = [r for r in rows if r["packer"] == packer]
        if not sel:
            continue

        def mean(key: str, sel: list[dict[str, Any]] = sel) -> float:
            return sum(float(r[key]) for r in sel) / len(sel)

        lines.append(
            f"| {packer} | {mean('blind_nodes'):.1f} | {mean('blind_overloaded'):.1f} "
            f"| {mean('blind_worst_load'):.2f} | {mean('aware_nodes'):.1f} "
            f"| {mean('extra_nodes_pct'):.1f} % |"
        )
    cpsat = [r for r in rows if r["packer"] == "cpsat"]
    if cpsat:
        plot(cpsat, curve, Path(config.out) / "gpu-density.png")
        lines += [
            "",
            "Every node of CP-SAT's packings, all seeds: pods and CPU asked, against the",
            "nominal CPU and the effective capacity (the curve, then the pod limit).",
            "",
            "![CP-SAT's nodes against the capacity curve](gpu-density.png)",
        ]
    return "\n".join(lines) + "\n"


def plot(rows: list[dict[str, Any]], curve: tuple[tuple[int, int], ...], path: Path) -> None:
    """The nodes of the blind and the aware packings of ``rows`` as (pods, cores asked)
    points, under the nominal CPU and the curve."""
    import matplotlib  # plots only: matplotlib is slow to import and only the report draws

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after use("Agg"): no display on a server

    fig, ax = plt.subplots(figsize=(7, 4.5))
    probe = cluster(1, with_pod_limit(curve), [], grouped=False).nodes[0]
    ks = list(range(0, MAX_PODS + 1))
    ax.plot(ks, [probe.effective_cpu_milli(k) / 1000 for k in ks], "k-", label="effective CPU")
    ax.axhline(NODE_CPU_MILLI / 1000, color="grey", ls="--", lw=1, label="nominal CPU")
    for key, style, label in (
        ("blind_node_load", "rx", "density-blind packing"),
        ("aware_node_load", "b.", "density-aware packing"),
    ):
        points = [p for r in rows for p in json.loads(r[key])]
        ax.plot([p[0] for p in points], [p[1] / 1000 for p in points], style, label=label)
    ax.set(xlabel="pods on the node", ylabel="cores", title="CP-SAT's nodes, all seeds")
    ax.set_xlim(0, MAX_PODS + 5)
    ax.set_ylim(0, NODE_CPU_MILLI / 1000 * 1.08)
    ax.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
