"""REPS's provisioning LP: the expected-pair multi-commodity flow that :mod:`.reps` rounds.

Per request r and direction a of each link, f[r, a] >= 0 expected pairs. A link carries
sum_r f / success channels (at most its channels); a node holds the f / success of every
flow into or out of it (at most its qubits); flow is conserved at every node other than r's
ends; t_r, the flow out of the source, is at most demand_r. Swap losses and fidelity are
left out, as in REPS. (This LP with swaps was once our whole-instance bound; column
generation's LP, :mod:`.colgen`, replaced it: about 2x tighter on Q-CAST's setting.)
"""

from __future__ import annotations

from dataclasses import dataclass

from placement.models.entanglement.instance import EntanglementInstance
from placement.solver.backends.highs import HighsMilp
from placement.solver.cancel import CancellationToken
from placement.solver.options import SolveOptions
from placement.solver.result import StopReason


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
    cancel: CancellationToken | None = None,
    channel_penalty: float = 0.0,
) -> FlowLp:
    """Build and solve the LP (max sum_r weight_r t_r) with HiGHS (through the backend
    wrapper). ``channel_penalty`` > 0 subtracts that much per channel the flows use: it
    removes useless circulations and the degeneracy that makes the simplex slow."""
    # PuLP is imported when an LP is built, not with the family (start-up time).
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
        for v in range(len(instance.nodes)):
            out = pulp.lpSum(f[r, k] for k in outs[v])
            into = pulp.lpSum(f[r, k] for k in ins[v])
            if v == req.source:
                prob += out - into == t[r]
            elif v != req.destination:
                prob += out == into
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
    return FlowLp(run.stop_reason == StopReason.PROVEN, run.objective, arcs, flow)
