"""MILP encoding of mixed-criticality partitioning (HiGHS or CBC through PuLP): the shared
rows of :mod:`.encoding` (:func:`.encoding.mc_linear`) through
:class:`~placement.solver.linear_backends.MilpLinear`, without a MIP start on HiGHS (see
there), and each core's rows of its own.

The per-core rows are the MILP's: the rows of :mod:`.encoding` in utilisation units (the
integer tables divided by ``S``), with ``D`` and ``w`` continuous (CP-SAT's exact integer rows
have coefficients up to ``S^2``, which would defeat the solver's tolerances).

The MILP solver decides within its feasibility tolerance (1e-6 or so): a solution is checked
in exact rationals and a core that fails by a hair gets the no-good cut of the protocol, so
no unschedulable assignment is returned; a proof of infeasibility is the solver's, within
that tolerance (CP-SAT's is exact integer arithmetic).
"""

from __future__ import annotations

from typing import Any

from placement.models.mc.encoding import McEncoding, McLinear, Tables, mc_linear
from placement.solver.family import ExactContext
from placement.solver.linear_backends import LinearBackend, MilpLinear
from placement.solver.options import SolveOptions


def _backend(options: SolveOptions) -> MilpLinear:
    return MilpLinear(options, "mc", warm_start_on_highs=False)


def _core_rows(
    tables: Tables, linear: McLinear, backend: MilpLinear, min_slack: bool
) -> int | None:
    """Each core's rows in utilisation units; with ``min_slack``, the index of the smallest
    slack (a continuous variable in [0, 1])."""
    import pulp  # deferred: 0.26 s to import, paid by solves only

    inst, S, prob = tables.instance, float(tables.scale), backend.problem
    x = {p: backend.vars[var] for p, var in linear.x.items()}
    t = pulp.LpVariable("min_slack", 0, 1) if min_slack else None
    for k in range(len(inst.cores)):
        tasks = tables.tasks_on(k)
        lo = [i for i in tasks if not inst.tasks[i].hi]
        hi = [i for i in tasks if inst.tasks[i].hi]
        L = pulp.lpSum(tables.lo[(i, k)] / S * x[(i, k)] for i in lo)
        HH = pulp.lpSum(tables.hh[(i, k)] / S * x[(i, k)] for i in hi)
        HL = pulp.lpSum(tables.hl[(i, k)] / S * x[(i, k)] for i in hi)
        prob += L <= 1, f"lo{k}"
        prob += HH <= 1, f"hh{k}"
        prob += L + HL <= 1, f"lomode{k}"
        if tables.amc:
            continue  # AMC-rtb: the utilisation rows above, then the no-good loop
        product = pulp.LpAffineExpression()
        if lo and hi:
            D = pulp.LpVariable(f"D{k}", 0, 1)
            prob += pulp.lpSum(tables.d[(i, k)] / S * x[(i, k)] for i in hi) >= D, f"diff{k}"
            terms = []
            for i in lo:
                w = pulp.LpVariable(f"w{i}_{k}", 0, 1)
                prob += w <= D, f"wd{i}_{k}"
                prob += w <= x[(i, k)], f"wx{i}_{k}"
                terms.append((w, tables.lo[(i, k)] / S))
            product = pulp.LpAffineExpression(terms)
        slack = 1 - L - HH + product
        prob += slack >= 0, f"edfvd{k}"
        if t is not None:
            prob += t <= slack, f"min_slack{k}"
    return None if t is None else backend.native(t)


def build_milp(
    tables: Tables, tier: str | None, drop_limit: int | None, options: SolveOptions | None = None
) -> tuple[Any, dict[tuple[int, int], Any], dict[int, Any]]:
    """The PuLP problem of a tier, as :class:`MilpEncoding` solves it (its objective is set
    when it runs): (problem, x by (task, core), drop by task)."""
    linear = mc_linear(tables, tier, drop_limit)
    backend = _backend(options or SolveOptions())
    backend.load(linear.model)
    _core_rows(tables, linear, backend, tier == "min_slack")
    x = {p: backend.vars[var] for p, var in linear.x.items()}
    drop = {i: backend.vars[var] for i, var in linear.drop.items()}
    return backend.problem, x, drop


class MilpEncoding(McEncoding):
    """The exact MILP encoding (``backend='milp'``; HiGHS by default, CBC selectable)."""

    source = "milp"

    def _backend(self, ctx: ExactContext) -> LinearBackend:
        return _backend(ctx.options)

    def _core_rows(
        self, tables: Tables, linear: McLinear, backend: LinearBackend, min_slack: bool
    ) -> int | None:
        assert isinstance(backend, MilpLinear)
        return _core_rows(tables, linear, backend, min_slack)
