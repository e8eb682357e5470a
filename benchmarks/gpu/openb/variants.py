"""The FGD paper's trace variants: ``--trace variant:NAME`` and the paired table.

``--trace variant:NAME`` replays the variant NAME built from the default trace under the
data (:mod:`placement.models.gpu.sim.openb.variants`), ``--trace variant:paper`` every variant
the paper replays. :func:`variants_section` is the report's part on them: each trace's traits
(:func:`~placement.models.gpu.sim.openb.variants.describe`) and, per trace and seed, the
unallocated GPUs at 100 % arrived of FGD beside ours (and of the other peers run), paired by
seed (the same workload and node order).
"""

from __future__ import annotations

import statistics
from pathlib import Path

from placement.benchmarks.gpu.openb.shared import (
    OURS,
    TRACES,
    VARIANT,
    variant_jobs,
    variant_of,
)
from placement.benchmarks.tables import rule
from placement.solver import InputError

PAPER = "paper"
"""``--trace variant:paper``: every variant the paper replays."""


def variant_traces(text: str, data: Path) -> list[str]:
    """The traces (``variant:NAME``) of one ``--trace variant:...`` word; InputError naming
    ``--trace`` for an unknown name or a data folder without the default trace."""
    # On use: the models load only when cases are made, not for placement bench --list.
    from placement.models.gpu.sim.openb.variants import KNOWN, PAPER_VARIANTS

    name = text[len(VARIANT) :]
    if name != PAPER and name not in KNOWN:
        raise InputError.single(
            "--trace", text, f"variant:NAME with NAME {PAPER} or one of " + ", ".join(KNOWN)
        )
    if not (data / TRACES["default"]).is_file():
        raise InputError.single(
            "--trace", text, f"a data folder holding {TRACES['default']} (variants build on it)"
        )
    return [f"{VARIANT}{n}" for n in (PAPER_VARIANTS if name == PAPER else (name,))]


def variants_section(rows: list[dict], data: Path) -> list[str]:
    """The traits of the variants run and FGD against ours per trace, paired by seed (no
    lines when no variant was run)."""
    traces = list(dict.fromkeys(r["trace"] for r in rows))
    if not any(variant_of(t) for t in traces):
        return []
    return [
        "## The paper's trace variants",
        "",
        "Built from the default trace (`models/gpu/sim/openb/variants.py`: a stated "
        "reconstruction, the generation scripts are not public): `gpushareX`, shared pods "
        "hold X % of the GPU demand (GPU pods resampled, CPU-only pods kept); `multigpuX`, "
        "multi-GPU pods appended until they hold X % of it; `gpuspecX`, X % of the GPU pods "
        "constrained to GPU types.",
        "",
        *_traits_table(traces, data),
        "",
        *_paired_table(rows, traces),
        "",
    ]


def _traits_table(traces: list[str], data: Path) -> list[str]:
    # On use: the models load only for the report.
    from placement.models.gpu.formats.openb import read_openb_pods
    from placement.models.gpu.sim.openb.variants import describe

    lines = [
        "| trace | pods | GPU pods | shared pods | shared % of GPU demand | multi-GPU % "
        "| constrained % of GPU pods | GPU demand (GPUs) | shared pod milli-GPU mean "
        "| GPU pod CPU mean (milli) | GPU pod memory mean (MiB) |",
        rule("l" + "r" * 10),
    ]
    for trace in traces:
        name = variant_of(trace)
        if name:
            jobs = variant_jobs(data, name)
        elif trace in TRACES and (data / TRACES[trace]).is_file():
            jobs = read_openb_pods(data / TRACES[trace])
        else:
            continue
        d = describe(jobs)
        lines.append(
            f"| `{trace}` | {d['pods']} | {d['gpu_pods']} | {d['shared_pods']} "
            f"| {d['shared_demand_pct']:.2f} | {d['multi_demand_pct']:.2f} "
            f"| {d['constrained_pct']:.2f} | {d['gpu_demand']:.1f} | {d['shared_milli_mean']} "
            f"| {d['gpu_pod_cpu_mean']} | {d['gpu_pod_memory_mean']} |"
        )
    return lines


def _paired_table(rows: list[dict], traces: list[str]) -> list[str]:
    """Per trace and policy of ours: FGD's and its unallocated GPUs at 100 % per seed, the
    mean difference (ours - FGD: negative is better) and the seeds where ours leaves more."""
    # On use: the models load only for the report.
    from placement.models.gpu.sim.openb.online import OURS as OUR_POLICIES

    online = [r for r in rows if r.get("mode") == "online" and not r.get("ablation")]
    run = list(dict.fromkeys(r["policy"] for r in online))
    ours = [p for p in run if p in OUR_POLICIES]
    peers = [p for p in run if p != "FGD" and p not in OUR_POLICIES]
    lines = [
        "Unallocated GPUs at 100 % arrived, per seed `FGD / ours`; difference = ours - FGD "
        "(negative: ours leaves fewer unallocated); `worse` counts the seeds where ours "
        f"leaves more. `{OURS}` is the policy the issue measured. Other peers: mean over the "
        "seeds.",
        "",
        "| trace | ours | seeds | FGD / ours per seed | FGD mean | ours mean | difference "
        "mean | worse | " + "".join(f"{p} mean | " for p in peers),
        rule("lll" + "l" + "r" * 4 + "r" * len(peers)),
    ]
    for trace in traces:
        mine = [r for r in online if r["trace"] == trace]
        fgd = {r["seed"]: r["unalloc_gpus_at_100"] for r in mine if r["policy"] == "FGD"}
        others = ""
        for p in peers:
            values = [r["unalloc_gpus_at_100"] for r in mine if r["policy"] == p]
            others += f"{statistics.fmean(values):.1f} | " if values else "| "
        for policy in ours:
            got = {r["seed"]: r["unalloc_gpus_at_100"] for r in mine if r["policy"] == policy}
            seeds = sorted(set(fgd) & set(got))
            if not seeds:
                continue
            diff = [got[s] - fgd[s] for s in seeds]
            per_seed = ", ".join(f"{s}: {fgd[s]:.1f} / {got[s]:.1f}" for s in seeds)
            lines.append(
                f"| `{trace}` | {policy} | {len(seeds)} | {per_seed} "
                f"| {statistics.fmean(fgd[s] for s in seeds):.1f} "
                f"| {statistics.fmean(got[s] for s in seeds):.1f} "
                f"| {statistics.fmean(diff):+.1f} | {sum(d > 0 for d in diff)} of {len(seeds)} "
                f"| {others}"
            )
    return lines if len(lines) > 4 else []
