"""An upper bound on Helix's max flow from covering every layer: a configuration LP.

Under Helix's edge rule (the only one it is used for), a flow of value ``F`` passes every
layer ``p`` through the nodes holding ``p``, each carrying at most ``min(T(k), F)`` (its throughput at its layer count,
and never more than the whole flow). So, for a placement serving ``F``, every layer gets a
*pattern*, the multiset of (type, k) of the nodes holding it, whose capacities add up to at
least ``F``, and a node holding ``k`` layers appears in exactly ``k`` layers' patterns. Relax
positions away: with ``n[t, k]`` nodes of type ``t`` holding ``k`` layers
(``sum_k n[t, k] <= N_t``) and ``z[q]`` layers of pattern ``q``,

    sum_q z[q] >= L,    sum_q a[q, (t, k)] z[q] <= k n[t, k]    (slots of each kind)

must be feasible. Its LP (continuous ``z`` and ``n``) is the configuration LP of bin covering
(Gilmore and Gomory 1961 for cutting stock; Assmann, Johnson, Kleitman and Leung 1984 for bin
covering), solved by column generation: the pricing problem (the cheapest pattern at the
slots' duals) is an unbounded covering knapsack, solved exactly by a DP over capacity.
Capacities are rounded up, and ``F`` down, to a unit ``u``; that only admits more patterns, so
the relaxation stays a relaxation. Where its LP optimum is below ``L`` no placement serves
``F`` (a placement serving more could be scaled down to ``F``): ``F`` is an upper bound.

Unlike the per-layer supply bound (:func:`.serving_milp.relaxation_bound`, which the
boundary-flow MILP's LP relaxation equals) it sees that a layer covered by a node below ``F``
needs a second node whose capacity mostly goes unused: on LLaMA-1 30B on cluster24 it gives
1,944 against the supply bound's 2,050.06 (our placement: 1,942.71).
"""

from __future__ import annotations

import math
import time

import numpy as np

from placement.models.partition.serving_cluster import HelixCluster
from placement.solver.backends.base import RunStatus
from placement.solver.backends.highs import HighsModel

MAX_STATES = 5000
"""Capacity units of the pricing DP (the unit is ``F / MAX_STATES``)."""
MAX_ROUNDS = 400
"""Column-generation rounds before giving up on a value of ``F`` (no conclusion)."""


def covers(cluster: HelixCluster, value: float, deadline: float) -> bool | None:
    """Whether the configuration LP admits a flow of ``value``: False proves no placement
    serves ``value``; None: no conclusion (deadline, rounds, numerics)."""
    kinds = [
        (t, k) for t in sorted(cluster.throughput) for k in range(1, len(cluster.throughput[t]) + 1)
    ]
    counts: dict[str, int] = {}
    for node in cluster.nodes:
        counts[node.type] = counts.get(node.type, 0) + 1
    kinds = [(t, k) for t, k in kinds if t in counts]
    unit = max(value / MAX_STATES, 1e-9)
    need = math.floor(value / unit)
    cap = [math.ceil(min(cluster.throughput[t][k - 1], value) / unit - 1e-12) for t, k in kinds]
    if need <= 0:
        return True
    patterns = [{j: math.ceil(need / cap[j])} for j in range(len(kinds)) if cap[j] > 0]
    if not patterns:
        return False
    inf = math.inf
    n_k = len(kinds)
    types = sorted(counts)
    for _ in range(MAX_ROUNDS):
        if time.monotonic() > deadline:
            return None
        lp = HighsModel()
        n_q = len(patterns)
        lp.add_columns(
            np.array([0.0] * n_k + [1.0] * n_q), np.zeros(n_k + n_q), np.full(n_k + n_q, inf)
        )
        lp.maximize()
        for t in types:
            idx = [j for j, (u, _) in enumerate(kinds) if u == t]
            lp.add_row(-inf, float(counts[t]), idx, [1.0] * len(idx))
        for j, (_, k) in enumerate(kinds):
            users = [q for q, pat in enumerate(patterns) if j in pat]
            idx = [j] + [n_k + q for q in users]
            val = [-float(k)] + [float(patterns[q][j]) for q in users]
            lp.add_row(-inf, 0.0, idx, val)
        run = lp.run()
        if run.status != RunStatus.OPTIMAL or run.objective is None or run.row_dual is None:
            return None
        covered = run.objective
        if covered >= cluster.num_layers - 1e-7:
            return True
        duals = list(run.row_dual)[len(types) :]
        price = [abs(d) for d in duals]
        # The cheapest pattern reaching `need` units: an unbounded covering knapsack, item by
        # item (each with any multiplicity), exact over multisets.
        best = [0.0] + [math.inf] * need
        last = [-1] * (need + 1)
        for j in range(n_k):
            c, p = cap[j], price[j]
            if c <= 0:
                continue
            for v in range(1, need + 1):
                alt = best[max(0, v - c)] + p
                if alt < best[v]:
                    best[v], last[v] = alt, j
        if best[need] >= 1 - 1e-9:
            # No pattern improves: the LP optimum is `covered` < L (with a margin for the
            # LP's tolerances) -- no placement serves `value`.
            return False if covered < cluster.num_layers - 1e-6 else None
        pattern: dict[int, int] = {}
        v = need
        while v > 0:
            j = last[v]
            pattern[j] = pattern.get(j, 0) + 1
            v = max(0, v - cap[j])
        if pattern in patterns:
            return None  # numerics: the LP does not take the column it was priced for
        patterns.append(pattern)
    return None


def cover_bound(
    cluster: HelixCluster, lower: float, upper: float, time_limit_s: float = 20.0
) -> float | None:
    """The smallest value in ``(lower, upper]`` the configuration LP refutes, found by
    bisection to a relative 1e-4 (each refuted value is a bound by itself); None when it
    refutes nothing in the time."""
    deadline = time.monotonic() + time_limit_s
    refuted = None
    if covers(cluster, upper, deadline) is False:
        refuted = upper
    else:
        return None
    lo = max(lower, 0.0)
    while refuted - lo > 1e-4 * refuted:
        mid = (lo + refuted) / 2
        verdict = covers(cluster, mid, deadline)
        if verdict is None and time.monotonic() > deadline:
            break
        if verdict is False:
            refuted = mid
        else:
            lo = mid
    return refuted
