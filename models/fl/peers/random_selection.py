"""Random device selection, FedAvg's default (McMahan et al., "Communication-Efficient
Learning of Deep Networks from Decentralized Data", AISTATS 2017, Algorithm 1: each round
the server samples a random set of ``max(C K, 1)`` clients), per job.

Each round, the running jobs in a random order each sample ``devices_per_round`` devices
uniformly from the free eligible ones (online, memory, participation left: our addition, so
that its plans meet the same rules as ours); a job whose sample misses a data class has a
random member swapped for a random holder (:func:`placement.models.fl.greedy.repair_coverage`
with random ranks). Seeded.
"""

from __future__ import annotations

import numpy as np

from placement.models.fl.greedy import repair_coverage, spend
from placement.models.fl.instance import FlInstance, FlSolution
from placement.models.fl.timing import eligible


def random_selection(instance: FlInstance, seed: int = 0) -> FlSolution:
    """The random schedule over the horizon (module docstring)."""
    rng = np.random.default_rng(seed)
    budget = np.full(len(instance.devices), instance.participation_limit, dtype=np.int64)
    rows = []
    for r in range(instance.rounds):
        ok = eligible(instance, r) & (budget > 0)[None, :]
        taken = np.zeros(len(instance.devices), dtype=bool)
        row = [() for _ in instance.jobs]
        running = [j for j in range(len(instance.jobs)) if instance.active(r, j)]
        for j in rng.permutation(running):
            j = int(j)
            pool = np.flatnonzero(ok[j] & ~taken)
            k = min(instance.jobs[j].devices_per_round, len(pool))
            pick = [int(d) for d in rng.choice(pool, k, replace=False)]
            rank = rng.random(len(instance.devices))
            pick = repair_coverage(instance, j, pick, ok[j] & ~taken, rank)
            taken[pick] = True
            row[j] = tuple(pick)
        row_t = tuple(row)
        spend(instance, budget, row_t)
        rows.append(row_t)
    return FlSolution(tuple(rows))
