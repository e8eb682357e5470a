"""The integer program for Tarnawski et al.'s problem where the ideals are too many (CP-SAT).

It models the same splits as the DP over ideals (:mod:`.ideals`), as a chain of ideals over
``P`` positions (``P`` = number of devices), each position taking one device class:

* ``y[u, t]``: unit ``u`` is in the ideal ``I_t`` (``y[u, P-1] = 1``); ``y[u, t-1] <= y[u, t]``
  (a chain) and ``y[q, t] <= y[p, t]`` for every forward arc ``p -> q`` (each ``I_t`` is an
  ideal); ``x[u, t] = y[u, t] - y[u, t-1]``: ``u`` is on position ``t``'s device. Without
  contiguity (NONE) ``x`` is free with ``sum_t x[u, t] = 1``.
* ``k[t, c]``: position ``t`` is a device of class ``c``; ``sum_c k[t, c] = 1``,
  ``sum_t k[t, c] = m_c``.
* transfers: per item ``i`` (a layer's output, or an edge) ``out[i, t] >= x[src, t] - x[v,
  t]`` and ``in[i, t] >= x[v, t] - x[src, t]`` for its destination units ``v`` (clauses).
* if ``k[t, c]``: ``sum_u time[c, u] x[u, t] (+ sum_i tau_i (in + out)[i, t] when class c
  pays transfers) <= T``, memory ``<= capacity[c]``, and units not allowed on ``c`` absent.
* minimise ``T`` (integer nanoseconds: CP-SAT's optimum and bound are exact), or, in the
  decision form, ``T`` a constant: is there a split within it?

The authors' own IP (``throughput-ip/ip.py`` of msr-fiddle/dnn-partitioning at commit
b207b6ad27a1407d321f1e028cea96d7f2c90e3e, Gurobi) assigns nodes to machines with
``comm_in``/``comm_out`` variables as above, but enforces contiguity per machine only
(``z`` variables: each machine's forward set convex); its splits may then contract to a
cycle of devices, which the DP's chain of ideals excludes. This model keeps the DP's chain,
so DP and IP solve one problem (tests/test_partition_tarnawski.py checks them against brute
force).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from placement.models.partition.check import objective_ns
from placement.models.partition.ideals import LayerGraph
from placement.models.partition.instance import PartitionContiguity, PartitionSolution
from placement.solver.backends.base import RunStatus
from placement.solver.backends.cpsat import CpSat
from placement.solver.cancel import CancellationToken, deadline_token
from placement.solver.options import SolveOptions
from placement.solver.result import StopReason


@dataclass
class IpOutcome:
    """What the IP found: the best split (None if none), its objective and the solver's
    bound (ns), whether it is proved optimal, or proved infeasible."""

    solution: PartitionSolution | None
    objective_ns: int | None
    bound_ns: int | None
    proven: bool
    infeasible: bool
    stop: StopReason
    message: str = ""


def _chain_positions(g: LayerGraph, solution: PartitionSolution) -> list[int] | None:
    """The devices of a split in a chain order (a topological order of the devices along
    the forward arcs), or None if they form a cycle."""
    dev_of_unit = [solution.device_of[g.members[u][0]] for u in range(g.n_units)]
    used = sorted(set(dev_of_unit))
    succ: dict[int, set[int]] = {d: set() for d in used}
    for a, b in g.arcs:
        if dev_of_unit[a] != dev_of_unit[b]:
            succ[dev_of_unit[a]].add(dev_of_unit[b])
    indegree = dict.fromkeys(used, 0)
    for targets in succ.values():
        for t in targets:
            indegree[t] += 1
    ready = sorted(d for d in used if indegree[d] == 0)
    order: list[int] = []
    while ready:
        d = ready.pop(0)
        order.append(d)
        for t in sorted(succ[d]):
            indegree[t] -= 1
            if indegree[t] == 0:
                ready.append(t)
    return order if len(order) == len(used) else None


def solve_ip(
    g: LayerGraph,
    options: SolveOptions,
    cancel: CancellationToken,
    time_limit_s: float,
    incumbent: PartitionSolution | None = None,
    on_solution: Any = None,
    cap_ns: int | None = None,
) -> IpOutcome:
    """Build and solve the IP (module docstring); ``incumbent`` (a feasible split) caps ``T``
    at its value and hints the search; ``on_solution(solution, bound_ns)`` is called with
    each split CP-SAT finds (``bound_ns`` None in the decision form).

    ``cap_ns`` given: the decision form, ``T`` the constant ``cap_ns`` and no objective: is
    there a split whose max-load is at most ``cap_ns``? Infeasible is then a proof that
    every split's max-load exceeds it (with fixed right-hand sides CP-SAT propagates the
    loads directly; it refutes the incumbent's value minus 1 ns on Inception-v3 inference
    about ten times faster than it proves the minimisation)."""
    # ortools loads in 0.85 s: only when a model is built (the DP proves most workloads)
    from ortools.sat.python import cp_model

    inst = g.instance
    m = g.n_units
    counts = [len(c) for c in g.classes]
    n_cls = len(counts)
    positions = sum(counts)
    cpm = cp_model.CpModel()
    convex = inst.workload.contiguity is not PartitionContiguity.NONE
    x = [[cpm.new_bool_var("") for _ in range(positions)] for _ in range(m)]
    if convex:
        y = [[cpm.new_bool_var("") for _ in range(positions - 1)] for _ in range(m)]
        for u in range(m):
            for t in range(positions):
                prev = y[u][t - 1] if t > 0 else None
                cur = y[u][t] if t < positions - 1 else None
                # x[u,t] = cur - prev with cur = 1 at the last position and prev = 0 at t=0.
                if prev is None and cur is None:
                    cpm.add(x[u][t] == 1)
                elif prev is None:
                    cpm.add(x[u][t] == cur)
                elif cur is None:
                    cpm.add(x[u][t] + prev == 1)
                else:
                    cpm.add(x[u][t] + prev == cur)
            for t in range(1, positions - 1):
                cpm.add_implication(y[u][t - 1], y[u][t])
        for a, b in g.arcs:
            for t in range(positions - 1):
                cpm.add_implication(y[b][t], y[a][t])
    else:
        for u in range(m):
            cpm.add_exactly_one(x[u])
    k = [[cpm.new_bool_var("") for _ in range(n_cls)] for _ in range(positions)]
    for t in range(positions):
        cpm.add_exactly_one(k[t])
    for c in range(n_cls):
        cpm.add(sum(k[t][c] for t in range(positions)) == counts[c])
    comm: list[Any] = []
    for t in range(positions):
        terms = []
        for i in range(len(g.tau)):
            s = int(g.src[i])
            out_v = cpm.new_bool_var("")
            in_v = cpm.new_bool_var("")
            for v in g.dests[i]:
                cpm.add_bool_or([x[s][t].Not(), x[v][t], out_v])
                cpm.add_bool_or([x[v][t].Not(), x[s][t], in_v])
            terms.append(int(g.tau[i]) * (out_v + in_v))
        comm.append(sum(terms))
    upper = None
    if incumbent is not None:
        upper = objective_ns(inst, incumbent.device_of)
    worst = int(g.time.max(initial=0)) * m + int(g.tau.sum()) * 2 + 1
    top: Any = cap_ns
    if cap_ns is None:
        top = cpm.new_int_var(0, worst if upper is None else upper, "max_load")
    for t in range(positions):
        for c in range(n_cls):
            load = sum(int(g.time[c, u]) * x[u][t] for u in range(m))
            if g.pays_comm[c]:
                load = load + comm[t]
            cpm.add(load <= top).only_enforce_if(k[t][c])
            if int(g.memory.sum()) > g.capacity[c]:
                cpm.add(
                    sum(int(g.memory[u]) * x[u][t] for u in range(m)) <= g.capacity[c]
                ).only_enforce_if(k[t][c])
            for u in np.flatnonzero(~g.allowed[c]):
                cpm.add_implication(k[t][c], x[int(u)][t].Not())
    if cap_ns is None:
        cpm.minimize(top)

    class_of = {d: c for c, devs in enumerate(g.classes) for d in devs}
    if incumbent is not None:
        chain = _chain_positions(g, incumbent) if convex else sorted(set(incumbent.device_of))
        if chain is not None:
            # Used devices first, in chain order; then the unused ones, class by class.
            unused = [d for c in range(n_cls) for d in g.classes[c] if d not in chain]
            order = chain + unused
            pos = {d: t for t, d in enumerate(order)}
            for u in range(m):
                pu = pos[incumbent.device_of[g.members[u][0]]]
                for t in range(positions):
                    cpm.add_hint(x[u][t], t == pu)
            for t, d in enumerate(order):
                for c in range(n_cls):
                    cpm.add_hint(k[t][c], class_of[d] == c)

    def decode(value: Any) -> PartitionSolution:
        """The split of an assignment (``value(var) -> bool``)."""
        slot_of_pos: list[tuple[int, int]] = []
        used = [0] * n_cls
        for t in range(positions):
            c = next(c for c in range(n_cls) if value(k[t][c]))
            slot_of_pos.append((c, used[c]))
            used[c] += 1
        unit_slot = []
        for u in range(m):
            t = next(t for t in range(positions) if value(x[u][t]))
            unit_slot.append(slot_of_pos[t])
        return g.device_of(unit_slot)

    def report(callback: Any) -> None:
        if on_solution is not None:
            bound = None
            if cap_ns is None:
                bound = int(np.ceil(float(callback.best_objective_bound) - 1e-6))
            on_solution(decode(callback.boolean_value), bound)

    with deadline_token(cancel, time_limit_s) as token:
        run = CpSat.run(cpm, options, token, time_limit_s, report)
    if run.status == RunStatus.INFEASIBLE:
        # Minimising with an incumbent, T <= its value admits it: infeasible only without
        # one, or in the decision form (no split within cap_ns).
        return IpOutcome(None, None, None, False, True, StopReason.PROVEN, run.message)
    solution = None
    value_ns = None
    if run.has_solution:
        solver = run.solver  # type: ignore[attr-defined]
        solution = decode(solver.boolean_value)
        value_ns = objective_ns(inst, solution.device_of)
    bound = None
    if run.bound is not None and cap_ns is None:
        bound = int(np.ceil(float(run.bound) - 1e-6))
    proven = (
        cap_ns is None and run.status == RunStatus.OPTIMAL and run.stop_reason == StopReason.PROVEN
    )
    return IpOutcome(solution, value_ns, bound, proven, False, run.stop_reason, run.message)
