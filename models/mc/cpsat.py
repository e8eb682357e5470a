"""CP-SAT encoding of mixed-criticality partitioning: the shared rows of :mod:`.encoding`
(:func:`.encoding.mc_linear`) through :class:`~placement.solver.linear_backends.CpSatLinear`,
and each core's rows of its own.

The per-core rows are CP-SAT's: exact integer arithmetic in units of ``1/S`` (the slack row in
units of ``1/S^2``, with the integers ``D`` and ``w`` of :func:`.rows.add_core_rows`), so a
proof of infeasibility is exact. The MILP writes the same rows in utilisation units with
continuous ``D`` and ``w`` instead (coefficients up to ``S^2`` would defeat its tolerances).
"""

from __future__ import annotations

from typing import Any

from placement.models.mc.encoding import McEncoding, McLinear, Tables
from placement.models.mc.rows import add_core_rows
from placement.solver.family import ExactContext
from placement.solver.linear_backends import CpSatLinear, LinearBackend


class CpSatEncoding(McEncoding):
    """The exact CP-SAT encoding (``backend='cpsat'``)."""

    source = "cpsat"
    slack_unit_squared = True

    def _backend(self, ctx: ExactContext) -> LinearBackend:
        return CpSatLinear(ctx.options)

    def _core_rows(
        self, tables: Tables, linear: McLinear, backend: LinearBackend, min_slack: bool
    ) -> int | None:
        assert isinstance(backend, CpSatLinear)
        inst, S, cpm = tables.instance, tables.scale, backend.model
        x = {p: backend.vars[var] for p, var in linear.x.items()}
        slacks: list[Any] = []
        for k in range(len(inst.cores)):
            tasks = tables.tasks_on(k)
            lo = [(x[(i, k)], tables.lo[(i, k)]) for i in tasks if not inst.tasks[i].hi]
            hi = [
                (x[(i, k)], tables.hl[(i, k)], tables.hh[(i, k)], tables.d[(i, k)])
                for i in tasks
                if inst.tasks[i].hi
            ]
            slack = add_core_rows(cpm, S, lo, hi, tables.amc)
            if slack is not None:
                slacks.append(slack)
        if not min_slack:
            return None
        t = cpm.new_int_var(0, S * S, "min_slack")
        for s in slacks:
            cpm.add(t <= s)
        return backend.native(t)
