"""CP-SAT encoding of DAG scheduling (``backend='cpsat'``).

Times are scaled to integers by the smallest power of ten that makes every running time,
release, transfer and deadline integral (at most 10^6). When no such scale exists:

- makespan without deadlines or a makespan limit: a relaxation on a grid of 10^-12 s (or
  coarser when the times are large), every time rounded down, so its proven bound holds for
  the real times; each of its schedules is re-timed on the real times (same machines, same
  order: ``greedy.semi_active``), and the answer is optimal when the best re-timed makespan is
  within :data:`REAL_TOLERANCE` of the relaxation's proven optimum (formulation 5.1.1);
- otherwise times are rounded outward (running times and delays up, deadlines down): every
  decoded schedule is still feasible for the real times, but the model is a restriction and
  no optimality claim is reported. The cost terms are scaled the same way.

Two models (see ``docs/formulations/dag.md``):

- the scheduling model: per task a start and an end; per eligible machine a presence literal
  and an optional interval; NoOverlap (one slot) or Cumulative (several slots) per machine;
  precedence with the transfer delay of the two tasks' zones, enforced when they are not on
  the same machine;
- the assignment model (R||Cmax) for independent tasks without release times, dataset
  delays or deadlines, on one-slot machines: only the machine loads matter.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from placement.models.dag.bound import (
    MAX_INT,
    coarse_scale,
    integer_scale,
    makespan_grid_bound,
    proven_by_bound,
)
from placement.models.dag.check import check, evaluate
from placement.models.dag.greedy import back_to_back, pure_assignment, semi_active
from placement.models.dag.instance import DagInstance, DagSolution
from placement.solver.backends.base import RunStatus
from placement.solver.backends.cpsat import CpSat
from placement.solver.family import ExactContext, ExactOutcome
from placement.solver.result import StopReason

MAX_FULL_PAIRS = 20_000
"""Eligible task-machine pairs above which the model keeps only candidate machines."""
CANDIDATE_MACHINES = 4
"""Machines per task in a restricted model (the fastest; plus the incumbent's)."""
FINE_SCALE_EXPONENT = 12
"""The relaxation of real-valued times uses a grid of 10^-k s, k <= this (and coarser when
the scaled times would pass 2^50 / tasks)."""
REAL_TOLERANCE = 1e-9
"""Relative (at least this many seconds absolute): a re-timed schedule within this of the
relaxation's proven bound is claimed optimal. It is the portfolio's test of a proof
(``solver.result.relative_gap`` is 0 within 10^-9): seven orders of magnitude above a
double's precision, three below the checker's tolerance."""


RELAXED_FUZZ = 1e-12
"""Relative: in the relaxation every time scales to ``floor(x S (1 - this))`` (and the
horizon to ``ceil(x S (1 + this))``), safely past float noise."""


def relaxable(instance: DagInstance) -> bool:
    """Whether real-valued times are solved as a rounded-down relaxation: the makespan
    objective without deadlines or a makespan limit (which a re-timed schedule could miss)."""
    return (
        instance.objective == "makespan"
        and instance.makespan_limit_s == 0
        and all(t.deadline_s == 0 for t in instance.tasks)
    )


def fine_scale(values: np.ndarray, max_int: int) -> float:
    """The largest 10^k (k <= :data:`FINE_SCALE_EXPONENT`) keeping every value times it
    below ``max_int``; below 1 (a grid of whole 10^j s) when only that does."""
    v = np.abs(values[np.isfinite(values)])
    top = float(v.max()) if len(v) else 0.0
    best = coarse_scale(top, max_int)  # 1, or coarser when even whole seconds overflow
    for k in range(FINE_SCALE_EXPONENT + 1):
        if top * 10.0**k > max_int:
            break
        best = 10.0**k
    return best


def real_tolerance(bound: float | None) -> float:
    """:data:`REAL_TOLERANCE` at ``bound``."""
    return REAL_TOLERANCE * max(1.0, abs(bound or 0.0))


def identical_machine_classes(instance: DagInstance) -> list[list[int]]:
    """Groups of interchangeable machines (same attributes and zone, no dataset lives on
    them): relabelling machines inside a group maps schedules to schedules."""
    homes = {t.data_machine for t in instance.tasks if t.data_machine}
    groups: dict[tuple[Any, ...], list[int]] = {}
    for m, mach in enumerate(instance.machines):
        if mach.name in homes:
            continue
        key = (mach.type, mach.speed, mach.slots, mach.memory_mib, mach.cost_per_hour, mach.zone)
        groups.setdefault(key, []).append(m)
    return [g for g in groups.values() if len(g) > 1]


def canonical_machines(machine: np.ndarray, groups: list[list[int]]) -> np.ndarray:
    """Relabel machines inside each interchangeable group so that the i-th task (by index)
    on the group sits on one of its first i + 1 machines (the symmetry the model imposes)."""
    out = machine.copy()
    for group in groups:
        members = set(group)
        mapping: dict[int, int] = {}
        for t in range(len(machine)):
            m = int(machine[t])
            if m in members and m not in mapping:
                mapping[m] = group[len(mapping)]
        for t in range(len(machine)):
            m = int(machine[t])
            if m in mapping:
                out[t] = mapping[m]
    return out


class CpSatEncoding:
    """The exact CP-SAT encoding of the DAG family."""

    source = "cpsat"

    def solve(self, instance: DagInstance, ctx: ExactContext) -> ExactOutcome:
        """Build, hint with the incumbent, search, report every improving schedule."""
        # OR-Tools loads a large native library: only when a CP-SAT model is built.
        from ortools.sat.python import cp_model

        n, k = len(instance.tasks), len(instance.machines)
        d = instance.duration
        eligible = np.isfinite(d)
        est = instance.earliest_start
        latency, per_byte = instance.network
        parent, child, data = instance.edge_arrays
        # Every transfer delay the model may use, per edge and zone pair.
        delays = latency[None, :, :] + data[:, None, None] * per_byte[None, :, :]
        deadlines = np.array([t.deadline_s for t in instance.tasks])
        times = np.concatenate(
            [d[eligible], est.ravel(), delays.ravel(), deadlines, [instance.makespan_limit_s]]
        )
        incumbent: DagSolution | None = ctx.incumbent()
        early = proof_by_bound(instance, incumbent)
        if early is not None:
            return early
        horizon_s = schedule_horizon(instance, incumbent)
        scale, exact = integer_scale(np.append(times, horizon_s), MAX_INT // max(n, 1), coarse=True)
        # Real-valued times (no decimal scale up to 10^6) under the makespan objective:
        # a relaxation on the finest grid that fits, every time rounded down (section 5.1.1 of the
        # formulation). Its bound holds for the real times; each of its schedules is
        # re-timed on the real times with the same machines and order.
        relaxed = not exact and relaxable(instance)
        if relaxed:
            scale = fine_scale(np.append(times, horizon_s), MAX_INT // max(n, 1))

        # On a decimal grid the fuzz snaps float noise to the grid point it stands for; in
        # the relaxation, rounding must never cross a grid point the wrong way, so the fuzz
        # (which float noise of 10^-16 relative never reaches) pushes outward instead.
        fuzz = -RELAXED_FUZZ if relaxed else 1e-9

        def up(x: float) -> int:
            return int(math.ceil(x * scale - fuzz * max(1.0, x * scale)))

        def down(x: float) -> int:
            return int(math.floor(x * scale + fuzz * max(1.0, x * scale)))

        # Durations, delays and earliest starts: rounded down in the relaxation, else up.
        rt = down if relaxed else up
        horizon = up(horizon_s)
        if not exact and not relaxed:
            # Room for the incumbent's rounded image (each of its chains grows by at most
            # 2n + 1 grid steps), so that the rounded model stays feasible.
            horizon += 2 * n + 1
        allowed = eligible
        restricted = incumbent is not None and int(eligible.sum()) > MAX_FULL_PAIRS
        if restricted:
            # A large instance: each task may use only its CANDIDATE_MACHINES fastest machines
            # and the incumbent's. A restriction: no bound and no optimality claim from it.
            allowed = np.zeros_like(eligible)
            fastest = np.argsort(np.where(eligible, d, np.inf), axis=1, kind="stable")
            rows = np.arange(n)[:, None]
            allowed[rows, fastest[:, :CANDIDATE_MACHINES]] = True
            allowed[np.arange(n), incumbent.machine] = True
            allowed &= eligible
        dur = {(t, m): rt(d[t, m]) for t in range(n) for m in range(k) if allowed[t, m]}
        model = cp_model.CpModel()
        # Identical one-core lanes without transfers (P|prec|Cmax): one cumulative over all
        # lanes is the exact problem (interval graphs colour with as many lanes as the peak
        # overlap), so no assignment variables are needed.
        assignment = pure_assignment(instance)
        lanes = (
            instance.objective == "makespan"
            and not assignment
            and identical_lanes(instance, delays)
        )
        x: dict[tuple[int, int], Any] = {}
        for t, m in dur:
            if not lanes:
                x[t, m] = model.new_bool_var(f"x{t}_{m}")
        for t in range(n):
            if not lanes:
                model.add_exactly_one([x[t, m] for m in range(k) if (t, m) in x])
        # Symmetry: in a group of interchangeable machines, the i-th task (in index order) that
        # may use the group is on one of the group's first i + 1 machines.
        # Relabelling machines is no symmetry of a restricted model.
        groups = [] if restricted else identical_machine_classes(instance)
        for group in groups if not lanes else []:
            users = [t for t in range(n) if all(eligible[t, m] for m in group)]
            for i, t in enumerate(users[: len(group)]):
                for m in group[i + 1 :]:
                    model.add(x[t, m] == 0)

        # The cheap bound as the makespan's floor: a schedule meeting it is proved at once.
        # (Rounded down in the relaxation: the real optimum's image ends by floor(S * C).)
        floor = min(rt(makespan_grid_bound(instance)), horizon)
        makespan = model.new_int_var(floor, horizon, "makespan")
        starts: list[Any] = []
        if assignment:
            for m in range(k):
                terms = [(x[t, m], dur[t, m]) for t in range(n) if (t, m) in x]
                if terms:
                    model.add(
                        cp_model.LinearExpr.weighted_sum(
                            [v for v, _ in terms], [c for _, c in terms]
                        )
                        <= makespan
                    )
        else:
            ends: list[Any] = []
            per_machine: list[list[tuple[Any, int]]] = [[] for _ in range(k)]
            for t, task in enumerate(instance.tasks):
                limit = horizon
                if task.deadline_s > 0:
                    limit = min(limit, down(task.deadline_s))
                s = model.new_int_var(0, limit, f"s{t}")
                e = model.new_int_var(0, limit, f"e{t}")
                starts.append(s)
                ends.append(e)
                low = min(rt(est[t, m]) for m in range(k) if (t, m) in dur)
                model.add(s >= low)
                if lanes:
                    model.add(e == s + dur[t, 0])
                for m in range(k):
                    if (t, m) not in x:
                        continue
                    lit = x[t, m]
                    interval = model.new_optional_fixed_size_interval_var(s, dur[t, m], lit, "")
                    per_machine[m].append((interval, task.cores))
                    model.add(e == s + dur[t, m]).only_enforce_if(lit)
                    if rt(est[t, m]) > low:
                        model.add(s >= rt(est[t, m])).only_enforce_if(lit)
                model.add(makespan >= e)
            for m, items in enumerate(per_machine):
                if not items:
                    continue
                if instance.machines[m].slots == 1 or sum(c for _, c in items) <= 1:
                    model.add_no_overlap([iv for iv, _ in items])
                else:
                    model.add_cumulative(
                        [iv for iv, _ in items], [c for _, c in items], instance.machines[m].slots
                    )
            if k > 1 or lanes:
                # Redundant (exact in lanes mode): each task holds its cores for at least its
                # shortest running time somewhere; all machines together have sum(slots) cores.
                shortest = [min(dur[t, m] for m in range(k) if (t, m) in dur) for t in range(n)]
                model.add_cumulative(
                    [
                        model.new_fixed_size_interval_var(starts[t], shortest[t], "")
                        for t in range(n)
                    ],
                    [task.cores for task in instance.tasks],
                    sum(m.slots for m in instance.machines),
                )
            hint_machine = None
            if incumbent is not None and not lanes:
                hint_machine = canonical_machines(incumbent.machine, groups)
            _precedence(model, instance, x, starts, ends, delays, rt, hint_machine)
            if incumbent is not None:
                # A complete hint (ends and makespan too) lets CP-SAT start from a solution.
                # In the relaxation the image of a schedule is its starts rounded down.
                if relaxed:
                    hint_ends = np.array(
                        [
                            down(float(incumbent.start_s[t]))
                            + dur.get((t, int(incumbent.machine[t])), 0)
                            for t in range(n)
                        ],
                        dtype=float,
                    )
                else:
                    hint_ends = np.array(
                        [
                            up(float(v))
                            for v in incumbent.start_s + d[np.arange(n), incumbent.machine]
                        ],
                        dtype=float,
                    )
                for t, e in enumerate(ends):
                    model.add_hint(e, int(hint_ends[t]))
                model.add_hint(makespan, int(min(horizon, max(floor, hint_ends.max()))))
        if instance.makespan_limit_s > 0:
            model.add(makespan <= down(instance.makespan_limit_s))

        # Objective, in integer units: makespan * a + sum x * b.
        cost = instance.cost_rate * np.where(eligible, d, 0.0)
        wm = {"makespan": 1.0, "cost": 0.0}.get(instance.objective, instance.makespan_weight)
        wc = {"makespan": 0.0, "cost": 1.0}.get(instance.objective, instance.cost_weight)
        coefs = np.array([wm / scale] + ([wc * cost[t, m] for (t, m) in x] if wc else []))
        q, q_exact = integer_scale(coefs, 2**40 // max(n + horizon, 1))
        if wm == 1.0 and wc == 0.0:
            q, q_exact = float(scale), True  # makespan: the objective is the scaled makespan
        exact = exact and q_exact
        obj_terms = [(makespan, round(wm / scale * q))] if wm else []
        if wc:
            obj_terms += [(x[t, m], round(wc * cost[t, m] * q)) for (t, m) in x]
        model.minimize(
            cp_model.LinearExpr.weighted_sum([v for v, _ in obj_terms], [c for _, c in obj_terms])
        )

        if incumbent is not None:
            hinted = canonical_machines(incumbent.machine, groups)
            for (t, m), lit in x.items():
                model.add_hint(lit, int(hinted[t]) == m)
            if starts:
                for t, s in enumerate(starts):
                    model.add_hint(s, (down if relaxed else up)(float(incumbent.start_s[t])))
        index_x = [(t, m, lit.index) for (t, m), lit in x.items()]
        index_s = [s.index for s in starts]

        def decode(values: Any) -> DagSolution:
            if relaxed:
                return retime(values)
            if lanes:
                return lanes_to_machines(
                    instance, np.array([values[i] for i in index_s], dtype=float) / scale
                )
            sol = DagSolution.empty(n)
            for t, m, i in index_x:
                if values[i]:
                    sol.machine[t] = m
            if index_s:
                sol.start_s[:] = [values[i] / scale for i in index_s]
            else:
                sol = back_to_back(instance, sol.machine)
            return sol

        def retime(values: Any) -> DagSolution:
            """The relaxation's machines and order, re-timed on the real times."""
            key = np.array([values[i] for i in index_s], dtype=float) if index_s else None
            if lanes:
                machine = lanes_to_machines(instance, key / scale).machine
            else:
                machine = np.full(n, -1, dtype=np.int64)
                for t, m, i in index_x:
                    if values[i]:
                        machine[t] = m
            if key is None:
                return back_to_back(instance, machine)
            return semi_active(instance, machine, key)

        # Outward rounding moves a schedule's makespan by less than one grid step per running
        # time and per transfer on its critical chain, plus one for its earliest start: the
        # rounded model's bound minus (2n + 1) steps still bounds the real makespan (not
        # with deadlines or a makespan limit, which rounding tightens).
        slack = None
        if restricted:
            slack = None
        elif exact or relaxed:
            slack = 0.0
        elif (
            instance.objective == "makespan"
            and instance.makespan_limit_s == 0
            and all(t.deadline_s == 0 for t in instance.tasks)
        ):
            slack = (2 * n + 1) / scale

        def real_bound(value: float | None) -> float | None:
            if value is None or slack is None:
                return None
            if instance.objective == "makespan":
                value = min(value, horizon)
            return max(0.0, value / q - slack)

        # The best real-valued schedule decoded (the relaxation's best is not always the best
        # once re-timed).
        best: list[tuple[float, DagSolution]] = []

        def keep(solution: DagSolution) -> None:
            if relaxed:
                value = evaluate(instance, solution)[0]
                if not best or value < best[0][0]:
                    best[:] = [(value, solution)]

        def on_solution(callback: Any) -> None:
            values = callback.response_proto.solution
            if len(values):
                solution = decode(values)
                keep(solution)
                ctx.report(solution, self.source, real_bound(callback.best_objective_bound))

        if relaxed:
            ctx.update_bound(floor / scale)
        run = CpSat.run(model, ctx.options, ctx.cancel, ctx.time_left(), on_solution)
        final = None
        if run.has_solution:
            final = decode(run.solver.response_proto.solution)  # type: ignore[attr-defined]
            keep(final)
            ctx.report(final, self.source)
        notes = []
        bound = real_bound(run.bound)
        whole = (exact or relaxed) and not restricted
        if relaxed:
            final = best[0][1] if best else None
            gap = None if not best or bound is None else best[0][0] - bound
            closed = gap is not None and gap <= real_tolerance(bound)
            notes.append(
                f"times are not integral at any scale up to 10^6: CP-SAT solved a relaxation "
                f"with every time rounded down to 1/{scale:.0e} s, its schedules re-timed on "
                "the real times"
                + (
                    f"; re-timed makespan {best[0][0]:.9g} s vs the relaxation's bound "
                    f"{bound:.9g} s"
                    if gap is not None
                    else ""
                )
            )
            if run.stop_reason == StopReason.PROVEN and not closed:
                # The relaxation is solved but its optimum, re-timed, is above its bound by
                # more than the tolerance: the real optimum lies between the two.
                whole = False
        elif not exact:
            notes.append(
                "times or costs are not integral at any scale up to 10^6: CP-SAT solved an "
                "outward-rounded model, so it claims no optimum"
                + (
                    f" and its bound is lowered by {slack:.3g} s of rounding"
                    if slack is not None
                    else " and reports no bound"
                )
            )
        if restricted:
            notes.append(
                f"{int(eligible.sum()):,} task-machine pairs: CP-SAT searched each task's "
                f"{CANDIDATE_MACHINES} fastest machines and the incumbent's (no bound, no "
                "optimality claim)"
            )
        proven = whole and run.stop_reason == StopReason.PROVEN and final is not None
        if run.status == RunStatus.INFEASIBLE and not whole:
            return ExactOutcome(
                StopReason.SEARCH_EXHAUSTED,
                bound=real_bound(horizon) if not restricted else None,
                message="; ".join(notes),
            )
        return ExactOutcome(
            stop_reason=run.stop_reason if whole else _restricted(run.stop_reason),
            bound=bound,
            proven_optimal=proven,
            proven_solution=final if proven else None,
            proven_infeasible=whole and run.status == RunStatus.INFEASIBLE,
            message="; ".join(notes + ([run.message] if run.message else [])),
        )


def proof_by_bound(instance: DagInstance, incumbent: DagSolution | None) -> ExactOutcome | None:
    """Optimality of the incumbent when it meets the cheap lower bound (no search needed)."""
    if incumbent is None:
        return None
    report = check(instance, incumbent)
    if not report.feasible:
        return None
    bound = proven_by_bound(instance, report.objective)
    if bound is None:
        return None
    return ExactOutcome(
        stop_reason=StopReason.PROVEN,
        bound=bound,
        proven_optimal=True,
        proven_solution=incumbent,
        message="the heuristic schedule meets the lower bound (critical path / area)",
    )


def identical_lanes(instance: DagInstance, delays: np.ndarray) -> bool:
    """Interchangeable machines, one core per task, the same running time and earliest start
    everywhere, and no transfer delays: P|prec|Cmax on sum(slots) identical lanes."""
    d, est = instance.duration, instance.earliest_start
    groups = identical_machine_classes(instance)
    return (
        len(instance.machines) >= 1
        and (
            len(instance.machines) == 1
            or (len(groups) == 1 and len(groups[0]) == len(instance.machines))
        )
        and all(t.cores == 1 for t in instance.tasks)
        and bool(np.all(np.isfinite(d)))
        and bool(np.all(d == d[:, :1]))
        and bool(np.all(est == est[:, :1]))
        and not np.any(delays > 0)
    )


def lanes_to_machines(instance: DagInstance, starts: np.ndarray) -> DagSolution:
    """Machines for a lane schedule: tasks in start order, each on a machine with a free slot
    (one exists while at most sum(slots) tasks overlap)."""
    d = instance.duration[:, 0]
    sol = DagSolution.empty(len(instance.tasks))
    running: list[list[float]] = [[] for _ in instance.machines]
    for t in sorted(range(len(instance.tasks)), key=lambda t: (starts[t], t)):
        for ends in running:
            ends[:] = [e for e in ends if e > starts[t] + 1e-9]
        free = [m for m, mach in enumerate(instance.machines) if len(running[m]) < mach.slots]
        m = free[0] if free else 0
        if d[t] > 0:
            running[m].append(starts[t] + d[t])
        sol.machine[t], sol.start_s[t] = m, starts[t]
    return sol


def _restricted(stop: StopReason) -> StopReason:
    """A finished search of a restricted model proves nothing for the instance."""
    return StopReason.SEARCH_EXHAUSTED if stop == StopReason.PROVEN else stop


def schedule_horizon(instance: DagInstance, incumbent: DagSolution | None) -> float:
    """Seconds by which an optimal schedule ends (the incumbent's makespan for the makespan
    objective; otherwise a serial schedule's length)."""
    if incumbent is not None and instance.objective == "makespan":
        return evaluate(instance, incumbent)[0]
    d = np.where(np.isfinite(instance.duration), instance.duration, 0.0)
    latency, per_byte = instance.network
    _, _, data = instance.edge_arrays
    comm = float(latency.max() * len(data) + data.sum() * per_byte.max()) if len(data) else 0.0
    serial = float(instance.earliest_start.max() + d.max(axis=1).sum() + comm)
    if instance.makespan_limit_s > 0:
        return min(serial, instance.makespan_limit_s)
    return serial


def _precedence(
    model: Any,
    instance: DagInstance,
    x: dict[tuple[int, int], Any],
    starts: list[Any],
    ends: list[Any],
    delays: np.ndarray,
    up: Any,
    hint_machine: np.ndarray | None = None,
) -> None:
    """Child start >= parent end, plus the zone-pair delay unless on the same machine.

    ``hint_machine`` (an incumbent's machines) also hints every auxiliary literal.
    """
    k = len(instance.machines)
    zone = instance.machine_zone
    n_zones = len(instance.zones)
    zone_lit: dict[tuple[int, int], Any] = {}

    def in_zone(t: int, z: int) -> Any:
        if (t, z) not in zone_lit:
            lits = [x[t, m] for m in range(k) if zone[m] == z and (t, m) in x]
            if n_zones == 1:
                zone_lit[t, z] = model.new_constant(1) if lits else model.new_constant(0)
            elif not lits:
                zone_lit[t, z] = model.new_constant(0)
            else:
                lit = model.new_bool_var("")
                model.add(sum(lits) == lit)
                zone_lit[t, z] = lit
                if hint_machine is not None:
                    model.add_hint(lit, int(zone[int(hint_machine[t])]) == z)
        return zone_lit[t, z]

    parent, child, _ = instance.edge_arrays
    for e in range(len(parent)):
        u, v = int(parent[e]), int(child[e])
        model.add(starts[v] >= ends[u])
        delay = delays[e]
        if not np.any(delay > 0):
            continue
        common = [m for m in range(k) if (u, m) in x and (v, m) in x]
        same = model.new_bool_var("")
        together = hint_machine is not None and hint_machine[u] == hint_machine[v]
        if hint_machine is not None:
            model.add_hint(same, bool(together))
        if common:
            ys = []
            for m in common:
                y = model.new_bool_var("")
                if hint_machine is not None:
                    model.add_hint(y, bool(together and int(hint_machine[u]) == m))
                model.add_implication(y, x[u, m])
                model.add_implication(y, x[v, m])
                ys.append(y)
            model.add(sum(ys) == same)
        else:
            model.add(same == 0)
        for a in range(n_zones):
            for b in range(n_zones):
                c = up(float(delay[a, b]))
                if c <= 0:
                    continue
                lits = [in_zone(u, a), in_zone(v, b)]
                if a == b:
                    lits.append(same.Not())
                model.add(starts[v] >= ends[u] + c).only_enforce_if(lits)
