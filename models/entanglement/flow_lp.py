"""The expected-pair flow LP: REPS's provisioning relaxation, and a whole-instance bound.

Per request r and direction a of each link, f[r, a] >= 0 expected pairs. A link carries
sum_r f / success channels (at most its channels); a node holds the f / success of every
flow into or out of it (at most its qubits); t_r <= demand_r. Conservation at every node
other than r's ends: with ``swaps=False`` (REPS) flow out = flow in, and t_r is the flow
out of the source; with ``swaps=True`` flow out = swap_success x flow in, and t_r is the
flow into the destination.

With swaps, the LP is a relaxation of the whole problem (every simple path, any width): a
path of width W and EXT E puts on its k-th link the flow (product of the swap probabilities
of the nodes before it) x E[min successes] <= W x success_k, so its channel and qubit use
in the LP is at most W per link and per end (2W in the middle), and E arrives at the
destination. Fidelity thresholds are left out, which only loosens it. Its optimum is
therefore an upper bound on the weighted throughput (or, with ``max_min``, on the smallest
request throughput) of every routing.
"""

from __future__ import annotations

from dataclasses import dataclass

from placement.models.entanglement.instance import EntanglementInstance
from placement.solver.backends.milp import HighsMilp
from placement.solver.cancel import CancellationToken
from placement.solver.options import SolveOptions

BOUND_MARGIN = 1e-6
"""Relative margin added to the LP optimum against the LP solver's tolerances."""


@dataclass
class FlowLp:
    """The solved LP: its status, objective, and flow per (request, arc)."""

    solved: bool
    objective: float | None
    arcs: list[tuple[int, int, int]]
    """(tail node, head node, link) per arc: arc i and i + len(links) are link i's two
    directions."""
    flow: dict[tuple[int, int], float]


def solve_flow_lp(
    instance: EntanglementInstance,
    options: SolveOptions,
    time_limit_s: float,
    swaps: bool,
    objective: str = "throughput",
    cancel: CancellationToken | None = None,
    channel_penalty: float = 0.0,
) -> FlowLp:
    """Build and solve the LP with HiGHS (through the backend wrapper).

    ``objective``: ``throughput`` (max sum_r weight_r t_r) or ``max_min`` (max z <= t_r).
    ``channel_penalty`` > 0 subtracts that much per channel the flows use: it removes
    useless circulations and the degeneracy that makes the simplex slow, but then the
    optimum is no longer a bound (the bound uses 0).
    """
    import pulp

    requests = instance.requests
    links = instance.links
    arcs = [(lk.a, lk.b, i) for i, lk in enumerate(links)]
    arcs += [(lk.b, lk.a, i) for i, lk in enumerate(links)]
    if not requests:
        return FlowLp(True, 0.0, arcs, {})
    prob = pulp.LpProblem("flow", pulp.LpMaximize)
    n_req = len(requests)
    f = {(r, k): pulp.LpVariable(f"f{r}_{k}", 0) for r in range(n_req) for k in range(len(arcs))}
    t = [pulp.LpVariable(f"t{r}", 0, req.demand) for r, req in enumerate(requests)]
    outs: list[list[int]] = [[] for _ in instance.nodes]
    ins: list[list[int]] = [[] for _ in instance.nodes]
    for k, (u, v, _) in enumerate(arcs):
        outs[u].append(k)
        ins[v].append(k)
    inverse = [1.0 / links[link].success for _, _, link in arcs]
    for r, req in enumerate(requests):
        for v, node in enumerate(instance.nodes):
            out = pulp.lpSum(f[r, k] for k in outs[v])
            into = pulp.lpSum(f[r, k] for k in ins[v])
            if v == req.source:
                if not swaps:
                    prob += out - into == t[r]
            elif v == req.destination:
                if swaps:
                    prob += into - out == t[r]
            else:
                prob += out == (node.swap_success if swaps else 1.0) * into
    n_links = len(links)
    for i, lk in enumerate(links):
        prob += (
            pulp.lpSum(inverse[k] * f[r, k] for r in range(n_req) for k in (i, i + n_links))
            <= lk.channels
        )
    for v, node in enumerate(instance.nodes):
        prob += (
            pulp.lpSum(inverse[k] * f[r, k] for r in range(n_req) for k in outs[v] + ins[v])
            <= node.qubits
        )
    if objective == "max_min":
        from placement.models.entanglement.paths import servable_requests

        z = pulp.LpVariable("z", 0)
        for r in servable_requests(instance):
            prob += z <= t[r]
        prob.setObjective(z)
    else:
        gain = pulp.lpSum(req.weight * t[r] for r, req in enumerate(requests))
        if channel_penalty > 0:
            gain -= channel_penalty * pulp.lpSum(inverse[k] * var for (_, k), var in f.items())
        prob.setObjective(gain)
    run = HighsMilp.run(prob, options, cancel or CancellationToken(), time_limit_s)
    if not run.has_solution or not run.values:
        return FlowLp(False, None, arcs, {})
    flow = {}
    for key, var in f.items():
        value = run.values.get(var, 0.0) or 0.0
        if value > 0:
            flow[key] = value
    return FlowLp(run.stop_reason.value == "proven", run.objective, arcs, flow)


def flow_bound(
    instance: EntanglementInstance,
    options: SolveOptions,
    time_limit_s: float,
    cancel: CancellationToken | None = None,
) -> float | None:
    """An upper bound on the primary objective of the whole instance, or None if the LP
    did not solve to optimality in time."""
    lp = solve_flow_lp(instance, options, time_limit_s, True, instance.objective, cancel)
    if not lp.solved or lp.objective is None:
        return None
    return lp.objective * (1 + BOUND_MARGIN) + 1e-9
