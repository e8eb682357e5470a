"""The FGD paper's trace variants, built from the default openb pod list.

Weng et al. (USENIX ATC'23, Sec. 6) replay, besides ``openb_pod_list_default``, pod lists
that stress one workload trait: more GPU-sharing pods (``gpushare*``, Fig. 10), more
multi-GPU pods (``multigpu*``), GPU-type constraints (``gpuspec*``) and more CPU-only pods
(``cpu*``). The artifact's run script (hkust-adsl/kubernetes-scheduler-simulator,
``experiments/run_scripts/generate_run_scripts.py`` at 1ef99e4f) replays
:data:`PAPER_VARIANTS` (and ``cpu050``-``cpu250``, not built here); the data repository
(alibaba/clusterdata, ``cluster-trace-gpu-v2023/``, ``csv/`` and ``README.md`` at 0c9677bb /
b937928c) publishes the files and says only that they are "sampled from the default one"
(``gpuspec``: "augment tasks with GPU type requirements"). **No generation script is
public** (searched: both repositories, the paper, their issues), so what follows is a
*stated reconstruction*, each rule read off the published files (sampled through the
search tools; nothing of them is copied here):

* ``gpushareX`` -- the published ``gpushare40`` and ``gpushare100`` keep the default's 8,152
  pods: its 1,088 CPU-only pods unchanged, then 7,064 GPU pods resampled (names
  renumbered), the shared ones first. In ``gpushare40`` the shared pods end at pod 5088, i.e.
  4,001 shared pods, which makes the shared pods 40 % of the *GPU demand* (by count it would
  be 2,826 pods). So: keep the CPU-only pods; keep the number N of GPU pods; take the S
  for which ``S m_s / (S m_s + (N - S) m_w) = x`` (``S = round(N x m_w / ((1 - x) m_s +
  x m_w))``), with ``m_s`` the default's mean GPUs of a shared pod and ``m_w`` that of a
  whole-GPU pod (one GPU or more); draw the S shared pods uniformly with replacement from
  the default's shared pods, the other N - S from its whole-GPU pods (every published
  shared pod's CPU, memory and milli-GPU is one of the default's; their times come from the
  production trace and differ).
* ``multigpuX`` -- the published ``multigpu50`` is the default's 8,152 pods unchanged
  followed by about 900 pods (``openb-pod-8152`` on) that all ask 2, 4 or 8 whole GPUs, with
  the default's multi-GPU resource shapes. So: keep every pod; append multi-GPU pods drawn
  uniformly with replacement from the default's multi-GPU pods while multi-GPU pods hold
  less than X % of the GPU demand (the default: 7 %; 50 % takes ~880 pods).
* ``gpuspecX`` -- the published ``gpuspec33`` is the default's pods unchanged except the
  ``gpu_spec`` column, set on about a third of the GPU pods ("About 33 % of GPU tasks in our
  production cluster have GPU type constraints"). So: choose ``round(x N)`` of the N GPU
  pods uniformly without replacement and give each a constraint drawn from
  :data:`SPEC_WEIGHTS`. The weights are the frequencies of the 50 constraints of pods
  ``openb-pod-4172`` to ``-4393`` of the published ``gpuspec33`` (the only part of it read):
  a sample, not the production distribution (T4 dominates it; the cluster has 842 T4 GPUs of
  6,212).

Every variant is deterministic: its own stream, ``SeedSequence([VARIANT_SEED, index of the
name in KNOWN])``; the replay's seed does not change the pod list, as in the paper, where
each variant is one file replayed under seeds 42-51. Pods are named ``openb-pod-%04d`` in
the order built (the replay sorts by name, then shuffles). :func:`describe` gives the shares
the construction targets, to check a variant against the published file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from placement.models.gpu.instance import MILLI, GpuJob
from placement.solver.errors import InputError

PAPER_VARIANTS = (
    "gpushare40",
    "gpushare60",
    "gpushare80",
    "gpushare100",
    "multigpu20",
    "multigpu30",
    "multigpu40",
    "multigpu50",
    "gpuspec10",
    "gpuspec20",
    "gpuspec25",
    "gpuspec33",
)
"""The variants the paper replays (the artifact's run script), in its order of traits."""
KNOWN = (*PAPER_VARIANTS, "gpushare20", "gpuspec05")
"""Every variant built: the paper's and the two more files the data repository publishes."""
KINDS = ("gpushare", "multigpu", "gpuspec")
VARIANT_SEED = 2023
"""The root of every variant's random stream (with the index of its name in KNOWN)."""
SPEC_WEIGHTS = {
    "T4": 30,
    "P100": 8,
    "V100M16|V100M32": 4,
    "G2": 3,
    "P100|V100M16|V100M32": 2,
    "G3": 1,
    "V100M32": 1,
    "G2|P100|T4|V100M16|V100M32": 1,
}
"""GPU-type constraints and their counts in the sample of the published ``gpuspec33`` (one
of the four ``V100M16|V100M32`` reads ``V100M16|V100M32|V100M32`` there, the same set)."""


def parse_variant(name: str) -> tuple[str, int]:
    """(kind, percent) of a variant's name; InputError naming ``variant`` and the known
    names otherwise."""
    if name in KNOWN:
        for kind in KINDS:
            if name.startswith(kind):
                return kind, int(name[len(kind) :])
    raise InputError.single("variant", name, "one of " + ", ".join(KNOWN))


def _kind_of(job: GpuJob) -> str:
    """``cpu``, ``shared`` (a fraction of one GPU), ``whole`` (1 GPU) or ``multi`` (2+)."""
    if job.gpus >= 2:
        return "multi"
    if job.gpus == 1:
        return "whole"
    return "shared" if job.gpu_milli > 0 else "cpu"


def gpu_milli_of(job: GpuJob) -> int:
    """The job's total milli-GPU (its GPU demand)."""
    return job.gpus * MILLI if job.gpus else job.gpu_milli


def _renamed(jobs: Sequence[GpuJob], start: int = 0) -> list[GpuJob]:
    return [replace(j, name=f"openb-pod-{start + i:04d}") for i, j in enumerate(jobs)]


def _draw(pool: Sequence[GpuJob], count: int, rng: np.random.Generator) -> list[GpuJob]:
    if count and not pool:
        raise ValueError("the default trace has no pod of the kind this variant draws")
    return [pool[int(i)] for i in rng.integers(len(pool), size=count)] if count else []


def build_variant(name: str, default: Sequence[GpuJob], seed: int = VARIANT_SEED) -> list[GpuJob]:
    """The pods of variant ``name`` built from the default trace's pods ``default`` (see the
    module docstring); the same pods for the same arguments."""
    kind, percent = parse_variant(name)
    x = percent / 100
    rng = np.random.default_rng(np.random.SeedSequence([seed, KNOWN.index(name)]))
    jobs = sorted(default, key=lambda j: j.name)
    by_kind: dict[str, list[GpuJob]] = {k: [] for k in ("cpu", "shared", "whole", "multi")}
    for j in jobs:
        by_kind[_kind_of(j)].append(j)
    gpu_pods = [j for j in jobs if _kind_of(j) != "cpu"]
    if kind == "gpushare":
        shared, whole = by_kind["shared"], by_kind["whole"] + by_kind["multi"]
        m_s = np.mean([gpu_milli_of(j) for j in shared]) if shared else 0.0
        m_w = np.mean([gpu_milli_of(j) for j in whole]) if whole else 0.0
        n = len(gpu_pods)
        count = n if x >= 1 or not m_w else round(n * x * m_w / ((1 - x) * m_s + x * m_w))
        picked = _draw(shared, count, rng) + _draw(whole, n - count, rng)
        return _renamed(by_kind["cpu"] + picked)
    if kind == "multigpu":
        multi = by_kind["multi"]
        total = sum(gpu_milli_of(j) for j in gpu_pods)
        held = sum(gpu_milli_of(j) for j in multi)
        extra: list[GpuJob] = []
        while held < x * total:
            job = _draw(multi, 1, rng)[0]
            extra.append(job)
            held += gpu_milli_of(job)
            total += gpu_milli_of(job)
        return list(jobs) + _renamed(extra, start=len(jobs))
    # gpuspec: the same pods, a type constraint on round(x N) GPU pods
    specs = list(SPEC_WEIGHTS)
    weights = np.array(list(SPEC_WEIGHTS.values()), dtype=float)
    index = [i for i, j in enumerate(jobs) if _kind_of(j) != "cpu"]
    chosen = rng.choice(len(index), size=round(x * len(index)), replace=False)
    drawn = rng.choice(len(specs), size=len(chosen), p=weights / weights.sum())
    out = list(jobs)
    for c, s in zip(sorted(int(c) for c in chosen), drawn, strict=True):
        out[index[c]] = replace(out[index[c]], gpu_types=tuple(specs[int(s)].split("|")))
    return out


def describe(jobs: Sequence[GpuJob]) -> dict[str, float]:
    """The traits the variants set, to compare a built pod list with a published one: pods,
    GPU pods, the shares of the GPU demand held by shared and by multi-GPU pods (%), the
    share of GPU pods with a type constraint (%), the mean milli-GPU of a shared pod, and
    the mean CPU (milli) and memory (MiB) requests of GPU pods."""
    gpu = [j for j in jobs if _kind_of(j) != "cpu"]
    shared = [j for j in gpu if _kind_of(j) == "shared"]
    demand = sum(gpu_milli_of(j) for j in gpu) or 1

    def mean(values) -> float:
        values = list(values)
        return round(float(np.mean(values)), 1) if values else float("nan")

    return {
        "pods": len(jobs),
        "gpu_pods": len(gpu),
        "shared_pods": len(shared),
        "shared_demand_pct": round(sum(gpu_milli_of(j) for j in shared) / demand * 100, 2),
        "multi_demand_pct": round(
            sum(gpu_milli_of(j) for j in gpu if _kind_of(j) == "multi") / demand * 100, 2
        ),
        "constrained_pct": round(sum(bool(j.gpu_types) for j in gpu) / max(len(gpu), 1) * 100, 2),
        "gpu_demand": round(demand / MILLI, 1),
        "shared_milli_mean": mean(j.gpu_milli for j in shared),
        "gpu_pod_cpu_mean": mean(j.cpu_milli for j in gpu),
        "gpu_pod_memory_mean": mean(j.memory_mib for j in gpu),
    }
