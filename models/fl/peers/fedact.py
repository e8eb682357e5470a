"""FedACT's device scheduling for concurrent FL jobs, written from the paper.

Md Sirajul Islam, Isabelle G. Chapman, N. I. Md Ashafuddula, Xu Yuan, Li Chen, Nian-Feng
Tzeng, Klara Nahrstedt: "FedACT: Concurrent Federated Intelligence across Heterogeneous Data
Sources", arXiv:2605.00011v1 (11 March 2026). No code is public that we could find; what the
paper's abstract and its public summaries say is: every (device, job) pair gets an
*alignment score* between the device's available resources (compute, memory, bandwidth) and
the job's resource demand; a *participation-fairness* term raises devices left out longer;
each round, devices with higher scores are given to jobs while keeping participation fair
across jobs. The exact formulas are our reading of that description, stated here:

* demand of job ``j``: (FLOPs per round, memory, model bytes down, model bytes up), each
  divided by its largest value over the jobs; resource of device ``d``: (FLOP/s, memory,
  down, up bandwidth), each divided by its largest value over the fleet;
* alignment ``a[d, j]`` = cosine(demand_j, resource_d) x |resource_d| / max |resource|
  (the direction matches the job's needs, the length is how much the device has);
* fairness ``f[d]`` = 1 - served_d / (r + 1) in round ``r`` (1 for a device never chosen);
* score = (1 - ``FAIRNESS_WEIGHT``) a / max a + ``FAIRNESS_WEIGHT`` f;
* jobs take turns (round robin, fairness across jobs), each taking its best-scored free
  eligible device until it has ``devices_per_round``.

Our additions, so that its plans are held to the same rules as ours: only devices online,
with the job's memory and with participation left are eligible, and a job whose devices
miss a data class has its worst-scored device swapped for the best-scored holder
(:func:`placement.models.fl.greedy.repair_coverage`).
"""

from __future__ import annotations

import numpy as np

from placement.models.fl.greedy import repair_coverage, spend
from placement.models.fl.instance import FlInstance, FlSolution
from placement.models.fl.timing import eligible

FAIRNESS_WEIGHT = 0.3


def alignment(instance: FlInstance) -> np.ndarray:
    """``[j, d]``: the alignment score of device ``d`` for job ``j`` (module docstring)."""
    demand = np.array(
        [
            [j.flops_per_sample * j.samples_per_round, j.memory_bytes, j.model_bytes, j.model_bytes]
            for j in instance.jobs
        ],
        dtype=float,
    )
    res = np.array(
        [
            [d.flops_per_s, d.memory_bytes, d.down_bytes_per_s, d.up_bytes_per_s]
            for d in instance.devices
        ],
        dtype=float,
    )
    demand /= np.maximum(demand.max(axis=0), 1e-300)
    res /= np.maximum(res.max(axis=0), 1e-300)
    dn = np.linalg.norm(demand, axis=1)
    rn = np.linalg.norm(res, axis=1)
    cos = (demand @ res.T) / np.maximum(dn[:, None] * rn[None, :], 1e-300)
    return cos * (rn / max(float(rn.max()), 1e-300))[None, :]


def fedact(instance: FlInstance) -> FlSolution:
    """FedACT's schedule over the horizon (module docstring)."""
    align = alignment(instance)
    align /= np.maximum(align.max(axis=1, keepdims=True), 1e-300)
    budget = np.full(len(instance.devices), instance.participation_limit, dtype=np.int64)
    served = np.zeros(len(instance.devices), dtype=np.int64)
    rows = []
    for r in range(instance.rounds):
        ok = eligible(instance, r) & (budget > 0)[None, :]
        fair = 1.0 - served / (r + 1)
        score = (1 - FAIRNESS_WEIGHT) * align + FAIRNESS_WEIGHT * fair[None, :]
        running = [j for j in range(len(instance.jobs)) if instance.active(r, j)]
        order = {
            j: list(np.argsort(-np.where(ok[j], score[j], -np.inf), kind="stable")) for j in running
        }
        pos = dict.fromkeys(running, 0)
        taken = np.zeros(len(instance.devices), dtype=bool)
        chosen: dict[int, list[int]] = {j: [] for j in running}
        progress = True
        while progress:
            progress = False
            for j in running:
                if len(chosen[j]) >= instance.jobs[j].devices_per_round:
                    continue
                while pos[j] < len(order[j]):
                    d = int(order[j][pos[j]])
                    pos[j] += 1
                    if not ok[j][d]:
                        pos[j] = len(order[j])
                        break
                    if not taken[d]:
                        chosen[j].append(d)
                        taken[d] = True
                        progress = True
                        break
        row = [() for _ in instance.jobs]
        for j in running:
            free = ok[j] & ~taken
            fixed = repair_coverage(instance, j, chosen[j], free, -score[j])
            taken[list(set(fixed) - set(chosen[j]))] = True
            row[j] = tuple(fixed)
        row_t = tuple(row)
        spend(instance, budget, row_t)
        for devs in row_t:
            served[list(devs)] += 1
        rows.append(row_t)
    return FlSolution(tuple(rows))
