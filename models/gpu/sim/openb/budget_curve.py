"""What a migration budget can buy at the end of an openb replay: the best placement reachable
from a policy's end state with at most ``K`` migrations, with a proof (issue 42).

**The problem, exactly.** A replay ends (100 % arrived) in a state ``S``: the placed pods ``P``
on their nodes and GPUs, the failed pods ``F``. A *migration* takes a placed pod off its node
and GPUs and puts it on any node and GPUs where it fits (Kubernetes evicts and recreates it:
the pods that move are taken off first, then every pod is placed, so a swap needs no spare
room). Pods of ``F`` may be placed (not a migration); every pod of ``P`` stays placed. A pod
that keeps its node *and* its GPUs has not moved; every other pod of ``P`` has (a change of
GPU on the same node is a restart too). Some pods of ``P`` may be *free*: their moves do not
count (a re-packing cycle's pods migrated by an earlier cycle, when the budget counts distinct
pods); ``|P|`` in the budget row below counts the others only. Feasibility is the replay's own
(:meth:`.replay.TraceState.feasible`): CPU, memory, GPU type, ``k`` whole free GPUs or one
GPU with the milli-GPU free. Objective: the most milli-GPU allocated, that is the fewest GPUs
unallocated, with at most ``K`` pods of ``P`` moved.

**Column generation over nodes.** Pods of equal (GPUs ``k``, milli ``m``, CPU, memory,
accepted types) are interchangeable (the classes of :class:`.config_bound.ConfigBound`,
CPU-only pods included here: they hold CPU and memory and must stay placed). Nodes of equal
cluster row *and* equal end-state content (the multiset of (class, GPUs) of their pods, a free
pod told from a counted one) form a group ``g`` of ``N_g`` nodes. A *configuration* ``j`` of a
group says which of its resident pods stay where they are (``keep``, per resident slot) and
how many pods of each class come in (``y_c``, on which GPUs), within the node's capacity.
With ``kept_{j,c}`` its kept residents of class ``c``, ``|kept_j|`` the counted ones among
them, and ``d_c = k_c m_c``::

    max  sum_j d^T (kept_j + y_j) lambda_j
    s.t. P_c <= sum_j (kept_{j,c} + y_{j,c}) lambda_j <= P_c + F_c      for every class c
         sum_j |kept_j| lambda_j >= |P| - K                              (the budget)
         sum_{j in g} lambda_j = N_g                                     for every group g
         lambda >= 0 (integer in the problem itself)

An integer solution is a placement and back: the moved pods are exactly the residents not
kept, ``|P| - sum |kept|`` of them (each class's incoming slots take its moved pods first,
then its failed ones; the lower row places every pod of ``P``). **Bound**: for any
multipliers ``pi`` (one per row, signed) the Lagrangian value
``sum_r (pi_r^+ u_r - pi_r^- l_r) + sum_g N_g z_g(pi)`` bounds the integer optimum from above,
with ``z_g`` the best reduced value of a configuration of ``g`` -- the pricing problem, a small
CP-SAT model per group solved with its profits rounded *up* (so CP-SAT's proven bound on it is
a bound on ``z_g``, even when stopped by its time limit). **Witness**: the integer master over
the generated columns (HiGHS), realised pod by pod and re-checked from an empty cluster by
:func:`.batch.check_placement`, its moves counted from the two placements, not from the
model. The optimum lies between the witness and the bound; both are exact statements about
the problem above, not about a relaxation of it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from placement.models.gpu.instance import MILLI
from placement.models.gpu.sim.openb.batch import check_placement
from placement.models.gpu.sim.openb.budget_layout import lay_out
from placement.models.gpu.sim.openb.budget_round import lp_rounding
from placement.models.gpu.sim.openb.config_bound import ConfigBound
from placement.models.gpu.sim.openb.defrag_cycle import LIGHT_PRESOLVE
from placement.models.gpu.sim.openb.replay import PodSet, TraceCluster, TraceState
from placement.solver.backends.base import RunStatus
from placement.solver.backends.cpsat import CpSat
from placement.solver.backends.highs import HighsModel

PROFIT_SCALE = 1_000
"""Pricing profits are rounded up to multiples of 1 / PROFIT_SCALE milli-GPU."""
PRICING_TIME_S = 5.0
"""Time limit of one pricing run (its proven bound still enters the Lagrangian value)."""
REDUCED_TOL = 1e-6
SMOOTHING = 0.5
"""Wentges' smoothing factor (as in :mod:`.config_bound`)."""
DIVE_PRICE_ALL = 64
"""A dive prices every open group while at most this many are open (else the groups whose
last reduced value was positive)."""
CONVERGED_MILLI = 1.0
"""Stop when the Lagrangian bound is within this of the master LP (milli-GPU)."""
ROUNDING_SHARE = 0.25
"""Most of the witness time the pod-level rounding of the LP (:mod:`.budget_round`) takes."""
MASTER_SHARE = 0.5
"""The integer master's share of the witness time the rounding leaves; the dive gets the rest."""
CYCLE_MASTER_SHARE = 0.75
"""The same share with ``spare`` (a re-packing cycle)."""
FRESH_EVERY = 4
"""Keep-or-reset prices every node class's fresh packing every this many rounds; the rounds
between price only the classes whose last fresh packing entered the master (the fresh
pricing took most of a re-packing cycle's column generation)."""

Slot = tuple[int, tuple[int, ...]]
"""(pod class, GPUs)."""


@dataclass(frozen=True)
class Config:
    """One node's configuration: the resident slots it keeps (indices into the group's
    ``residents``) and the pods that come in."""

    group: int
    keep: tuple[int, ...]
    incoming: tuple[Slot, ...]


@dataclass
class Group:
    """Nodes with the same cluster row and the same end-state content."""

    nodes: list[int]
    residents: tuple[Slot, ...]
    """(class, GPUs) of each resident pod, sorted."""
    paid: tuple[int, ...]
    """Per resident, 1 when moving it counts against the budget, 0 when it is free (a pod
    migrated before: the budget counts distinct pods)."""


@dataclass
class CurvePoint:
    """The budget ``K``'s row of the curve (milli-GPU throughout)."""

    budget: int
    bound_milli: int
    """No placement reachable with at most ``budget`` migrations allocates more."""
    witness_milli: int | None
    witness_moves: int | None
    """Pods of ``P`` whose node or GPUs differ in the witness (counted from the placements),
    the free ones (``free`` of :class:`BudgetCurve`) left out."""
    witness_placed_failed: int | None
    errors: list[str] = field(default_factory=list)
    """What the from-scratch check found wrong with the witness ([] when valid)."""
    method: str = ""
    """Where the witness comes from."""
    iterations: int = 0
    master_milli: float = math.nan
    """The last master LP's optimum (the bound meets it at convergence)."""
    columns: int = 0
    seconds: float = 0.0
    witness: dict[int, tuple[int, tuple[int, ...]]] = field(default_factory=dict)
    """arrival index -> (node, GPUs) of every pod the witness places."""

    @property
    def proved(self) -> bool:
        """The witness is optimal (bound and witness agree to the pods' granularity)."""
        return self.witness_milli is not None and self.bound_milli - self.witness_milli < 10


class BudgetCurve:
    """The problem above for one end state; :meth:`at` solves it for one budget, and keeps
    its columns for the next (they do not depend on the budget)."""

    def __init__(
        self,
        cluster: TraceCluster,
        pods: PodSet,
        arrived: Sequence[int] | np.ndarray,
        node: np.ndarray,
        gpus: Sequence[tuple[int, ...]],
        classes: ConfigBound | None = None,
        free: np.ndarray | None = None,
    ) -> None:
        """``arrived``: pod indices in arrival order; ``node`` / ``gpus``: where each arrival
        is at the end (-1 / () for a failed one), as :class:`.replay.Curve` gives them.
        ``free``: per arrival, whether moving it costs no budget (a pod migrated before, when
        the budget counts distinct pods ever migrated); none: every move counts."""
        self.cluster, self.pods = cluster, pods
        self.arrived = np.asarray(arrived, dtype=np.int64)
        self.node = np.asarray(node, dtype=np.int64)
        self.gpus = [tuple(int(g) for g in x) for x in gpus]
        self.cb = classes if classes is not None else ConfigBound(cluster, pods)
        cb = self.cb
        self.cls = cb.pod_class[self.arrived]
        self.n_classes = cb.n_classes
        self.value = cb.value
        placed = self.node >= 0
        self.paid = np.ones(len(self.arrived), dtype=bool)
        """Per arrival, whether migrating it counts against the budget."""
        if free is not None:
            self.paid &= ~np.asarray(free, dtype=bool)
        self.n_paid = int((placed & self.paid).sum())
        """Placed pods whose migration counts: the budget row's ``|P|``."""
        self.P = np.bincount(self.cls[placed], minlength=self.n_classes)
        self.F = np.bincount(self.cls[~placed], minlength=self.n_classes)
        self.start_milli = int(self.value @ self.P)
        content: list[list[tuple[int, tuple[int, ...], int]]] = [[] for _ in range(cluster.n)]
        for a in np.flatnonzero(placed):
            content[int(self.node[a])].append(
                (int(self.cls[a]), self.gpus[a], int(self.paid[a]), int(a))
            )
        self.residents_of: list[list[int]] = []
        """Per node, the arrivals on it in the order of its group's ``residents``."""
        by_key: dict[tuple, int] = {}
        self.groups: list[Group] = []
        for n in range(cluster.n):
            items = sorted(content[n])
            self.residents_of.append([a for *_, a in items])
            slots = tuple((c, g) for c, g, _, _ in items)
            paid = tuple(f for _, _, f, _ in items)
            key = (
                int(cluster.type_of[n]),
                int(cluster.gpu_count[n]),
                int(cluster.cpu_milli[n]),
                int(cluster.memory_mib[n]),
                slots,
                paid,
            )
            if key not in by_key:
                by_key[key] = len(self.groups)
                self.groups.append(Group([], slots, paid))
            self.groups[by_key[key]].nodes.append(n)
        self.lines: list[tuple[float, float]] = []
        """Every full pricing round's Lagrangian line (:meth:`bound_at`)."""
        self.last_reduced = [math.inf] * len(self.groups)
        self.columns: list[Config] = []
        self._index: dict[tuple, int] = {}
        """Column index by (group, keep, sorted incoming slots)."""
        self._rooms: dict[int, np.ndarray] = {}
        self._lp_x: np.ndarray | None = None
        self._entries: list[tuple[float, np.ndarray, np.ndarray]] = []
        """Per column, its (objective, rows, coefficients) in the master."""
        self._lp: tuple[int, HighsModel, np.ndarray] | None = None
        """The master LP kept between solves (:meth:`_lp_run`): (budget, model, the lower
        bounds of its columns)."""
        for g in range(len(self.groups)):
            self._add(Config(g, tuple(range(len(self.groups[g].residents))), ()))

    # -- columns ---------------------------------------------------------------------------

    def _counts(self, col: Config) -> tuple[np.ndarray, int]:
        """(pods of each class the column holds, residents it keeps whose move would count
        against the budget)."""
        y = np.zeros(self.n_classes, dtype=np.int64)
        group = self.groups[col.group]
        for i in col.keep:
            y[group.residents[i][0]] += 1
        for c, _ in col.incoming:
            y[c] += 1
        return y, sum(group.paid[i] for i in col.keep)

    def _add(self, col: Config) -> bool:
        key = (col.group, col.keep, tuple(sorted(col.incoming)))
        if key in self._index:
            return False
        self._index[key] = len(self.columns)
        self.columns.append(col)
        y, kept = self._counts(col)
        nz = np.flatnonzero(y)
        C = self.n_classes
        rows = np.concatenate([nz, [C, C + 1 + col.group]]).astype(np.int64)
        coefficients = np.concatenate([y[nz], [kept, 1]]).astype(float)
        self._entries.append((float(self.value @ y), rows, coefficients))
        return True

    # -- pricing ---------------------------------------------------------------------------

    def price(
        self,
        g: int,
        profit: np.ndarray,
        keep_bonus: float,
        time_limit_s: float,
        keep_all: bool = False,
    ) -> tuple[float, Config | None]:
        """The pricing problem of group ``g``: (upper bound on the best reduced value before
        the group's own dual, the best configuration found). ``profit[c]``: what a pod of class
        ``c`` on the node is worth; ``keep_bonus``: what keeping a resident adds. ``keep_all``:
        only configurations that keep every resident (pods come in around them)."""
        # OR-Tools loads a large native library: imported on first use.
        from ortools.sat.python import cp_model

        cb, group = self.cb, self.groups[g]
        n = group.nodes[0]
        t, G = int(self.cluster.type_of[n]), int(self.cluster.gpu_count[n])
        ncpu, nmem = int(self.cluster.cpu_milli[n]), int(self.cluster.memory_mib[n])
        avail = self.P + self.F
        classes = [
            int(c)
            for c in np.flatnonzero(avail > 0)
            if profit[c] > REDUCED_TOL
            and cb.cpu[c] <= ncpu
            and cb.mem[c] <= nmem
            and (cb.k[c] == 0 or (cb.k[c] <= G and cb.type_ok[c, t]))
        ]
        res = group.residents
        kp = [profit[c] + keep_bonus * f for (c, _), f in zip(res, group.paid, strict=True)]
        if keep_all:
            room = self._room(g)
            classes = [c for c in classes if room[c]]
            if not classes:  # nothing fits beside the residents: keeping them is the best
                value = sum(int(math.ceil(v * PROFIT_SCALE)) for v in kp) / PROFIT_SCALE
                return value, Config(g, tuple(range(len(res))), ())
        model = cp_model.CpModel()
        keep = [model.new_bool_var(f"k{i}") for i in range(len(res))]
        if keep_all:
            for v in keep:
                model.add(v == 1)
        y = {}
        for c in classes:
            cap = int(avail[c])
            if cb.cpu[c]:
                cap = min(cap, ncpu // int(cb.cpu[c]))
            if cb.mem[c]:
                cap = min(cap, nmem // int(cb.mem[c]))
            if cb.k[c]:
                cap = min(
                    cap, G // int(cb.k[c]) if cb.m[c] >= MILLI else G * (MILLI // int(cb.m[c]))
                )
            if cap > 0:
                y[c] = model.new_int_var(0, cap, f"y{c}")
        whole = [c for c in y if cb.k[c] and cb.m[c] >= MILLI]
        sizes = sorted({int(cb.m[c]) for c in y if cb.k[c] and cb.m[c] < MILLI})
        w = [model.new_bool_var(f"w{i}") for i in range(G)] if whole else []
        x = {(s, i): model.new_int_var(0, MILLI // s, f"x{s}_{i}") for s in sizes for i in range(G)}
        model.add(
            sum(int(cb.cpu[c]) * keep[i] for i, (c, _) in enumerate(res))
            + sum(int(cb.cpu[c]) * v for c, v in y.items())
            <= ncpu
        )
        model.add(
            sum(int(cb.mem[c]) * keep[i] for i, (c, _) in enumerate(res))
            + sum(int(cb.mem[c]) * v for c, v in y.items())
            <= nmem
        )
        if whole:
            model.add(sum(int(cb.k[c]) * y[c] for c in whole) == sum(w))
        for s in sizes:
            model.add(
                sum(v for c, v in y.items() if cb.m[c] == s) == sum(x[s, i] for i in range(G))
            )
        for i in range(G):
            kept_load = sum(int(cb.m[c]) * keep[r] for r, (c, gs) in enumerate(res) if i in gs)
            load = kept_load + sum(s * x[s, i] for s in sizes) + (MILLI * w[i] if whole else 0)
            model.add(load <= MILLI)
        obj = sum(int(math.ceil(kp[i] * PROFIT_SCALE)) * keep[i] for i in range(len(res)))
        obj += sum(int(math.ceil(profit[c] * PROFIT_SCALE)) * v for c, v in y.items())
        model.maximize(obj)
        run = CpSat.run_subproblem(model, time_limit_s, workers=1, parameters=LIGHT_PRESOLVE)
        if not run.has_solution:
            if run.status == RunStatus.NO_SOLUTION and run.bound is not None:
                return run.bound / PROFIT_SCALE, None
            raise RuntimeError(f"pricing model of group {g}: {run.message or run.status}")
        solver = run.solver  # type: ignore[attr-defined]
        kept = tuple(i for i in range(len(res)) if solver.value(keep[i]))
        incoming: list[Slot] = []
        free_whole = [i for i in range(len(w)) if solver.value(w[i])]
        for c in whole:
            k = int(cb.k[c])
            for _ in range(int(solver.value(y[c]))):
                incoming.append((c, tuple(free_whole[:k])))
                free_whole = free_whole[k:]
        for s in sizes:
            gpu_slots = [i for i in range(G) for _ in range(int(solver.value(x[s, i])))]
            for c, v in y.items():
                if cb.k[c] and cb.m[c] == s:
                    for _ in range(int(solver.value(v))):
                        incoming.append((c, (gpu_slots.pop(),)))
        for c, v in y.items():
            if cb.k[c] == 0:
                incoming.extend((c, ()) for _ in range(int(solver.value(v))))
        return float(run.bound) / PROFIT_SCALE, Config(g, kept, tuple(incoming))  # type: ignore[arg-type]

    def _room(self, g: int) -> np.ndarray:
        """Per class, whether one pod of it fits a node of group ``g`` beside all its
        residents (CPU, memory, type, ``k`` whole free GPUs or one GPU with the milli-GPU)."""
        if g not in self._rooms:
            cb, group = self.cb, self.groups[g]
            n = group.nodes[0]
            t, G = int(self.cluster.type_of[n]), int(self.cluster.gpu_count[n])
            load = np.zeros(G, dtype=np.int64)
            cpu, mem = int(self.cluster.cpu_milli[n]), int(self.cluster.memory_mib[n])
            for c, gs in group.residents:
                cpu -= int(cb.cpu[c])
                mem -= int(cb.mem[c])
                for i in gs:
                    load[i] += int(cb.m[c])
            whole_free = int((load == 0).sum())
            most_free = int(MILLI - load.min()) if G else 0
            gpu_ok = cb.type_ok[:, t] & np.where(
                cb.m >= MILLI, cb.k <= whole_free, cb.m <= most_free
            )
            self._rooms[g] = (cb.cpu <= cpu) & (cb.mem <= mem) & ((cb.k == 0) | gpu_ok)
        return self._rooms[g]

    # -- the master ------------------------------------------------------------------------

    def _rows(self, budget: int) -> tuple[np.ndarray, np.ndarray]:
        total_p = self.n_paid
        sizes = np.array([len(g.nodes) for g in self.groups], dtype=float)
        lower = np.concatenate([self.P.astype(float), [float(total_p - budget)], sizes])
        upper = np.concatenate([(self.P + self.F).astype(float), [float(total_p)], sizes])
        return lower, upper

    def _matrix(self, first: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(objectives, column starts, rows, coefficients) of the columns from ``first`` on,
        column-wise (the rows: the classes, the budget, the groups)."""
        entries = self._entries[first:]
        cost = np.array([e[0] for e in entries], dtype=float)
        lengths = [len(e[1]) for e in entries]
        starts = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        if not entries:
            return cost, starts, np.zeros(0, np.int64), np.zeros(0)
        index = np.concatenate([e[1] for e in entries])
        values = np.concatenate([e[2] for e in entries])
        return cost, starts, index, values

    def _master_model(
        self, budget: int, integer: bool, objective: np.ndarray | None = None
    ) -> tuple[HighsModel, np.ndarray]:
        """(the master over the columns so far as a HiGHS model -- integer columns when
        ``integer``, maximising ``objective``, by default the milli-GPU held --, the columns'
        milli-GPU)."""
        lower, upper = self._rows(budget)
        cost, starts, index, values = self._matrix()
        n = len(cost)
        model = HighsModel(mip_rel_gap=1e-9) if integer else HighsModel()
        model.load(
            cost if objective is None else objective,
            np.zeros(n),
            np.full(n, math.inf),
            lower,
            upper,
            starts,
            index,
            values,
            integer=np.ones(n, dtype=bool) if integer else None,
            maximize=True,
        )
        return model, cost

    def _solve_master(
        self,
        budget: int,
        time_limit_s: float | None,
        floor_milli: int | None = None,
        start: np.ndarray | None = None,
    ):
        """The integer master over the columns so far (the LP: :meth:`_lp_run`). With
        ``floor_milli`` the objective is the kept residents (the fewest migrations) among
        the solutions that hold at least that many milli-GPU; ``start``: a MIP start."""
        objective = None
        if floor_milli is not None:
            objective = np.array([float(self._kept(j)) for j in range(len(self.columns))])
        model, cost = self._master_model(budget, True, objective)
        if floor_milli is not None:
            nz = np.flatnonzero(cost)
            model.add_row(float(floor_milli), math.inf, nz, cost[nz])
        if start is not None:
            model.set_start(np.concatenate([start, np.zeros(len(cost) - len(start))]))
        return model.run(time_limit_s)

    def _lagrangian_round(
        self,
        dual: np.ndarray,
        dual_lp: np.ndarray,
        groups,
        pricing_time_s: float,
        deadline: float,
        for_bound: bool = True,
    ) -> tuple[tuple[float, float] | None, int]:
        """Price ``groups`` at the multipliers ``dual``; add the columns that price positive
        at the master's ``dual_lp``. Returns (the Lagrangian line ``(a, rho)`` when every group
        was priced -- the bound at budget ``K`` is ``a + min(rho, 0) * (|P| - K)`` -- and the
        columns added). Past ``deadline`` each pricing gets 0.2 s; a round that is not
        ``for_bound`` (only its columns are wanted) stops there instead, so a thousand groups
        cannot hold a cycle 200 s past its wall time."""
        C = self.n_classes
        total_p = self.n_paid
        pi, rho = dual[:C], float(dual[C])
        profit, bonus = self.value - pi, -rho
        line = float(
            np.maximum(pi, 0) @ (self.P + self.F)
            + np.minimum(pi, 0) @ self.P
            + max(rho, 0.0) * total_p
        )
        full = len(groups) == len(self.groups)
        added = 0
        for g in groups:
            left = deadline - time.perf_counter()
            if left <= 0 and not for_bound:
                return None, added
            zg, col = self.price(g, profit, bonus, max(0.2, min(pricing_time_s, left)))
            self.last_reduced[g] = zg - float(dual_lp[C + 1 + g])
            line += len(self.groups[g].nodes) * zg
            if col is None:
                continue
            y, kept = self._counts(col)
            reduced = float((self.value - dual_lp[:C]) @ y - dual_lp[C] * kept)
            if reduced > dual_lp[C + 1 + g] + REDUCED_TOL and self._add(col):
                added += 1
        return ((line, rho) if full else None), added

    def bound_at(self, budget: int) -> float:
        """The smallest Lagrangian value at ``budget`` over every full pricing round so far
        (each round's multipliers give a bound for every budget at once)."""
        total_p = self.n_paid
        return min(
            (a + min(rho, 0.0) * (total_p - budget) for a, rho in self.lines), default=math.inf
        )

    def _lp_run(
        self, budget: int, fixed: np.ndarray | None = None, time_limit_s: float | None = None
    ):
        """The master LP over the columns so far, the columns' counts at least ``fixed``
        (a dive's fixings; none: 0). One model per budget is kept between calls: a call adds
        the columns generated since and changes the lower bounds that differ, and HiGHS
        re-solves from the last basis (a from-scratch solve per round took most of a cycle's
        time at 30,000 columns)."""
        if self._lp is None or self._lp[0] != budget:
            model, cost = self._master_model(budget, False)
            self._lp = (budget, model, np.zeros(len(cost)))
        _, model, bounds = self._lp
        if len(bounds) < len(self.columns):
            cost, starts, index, values = self._matrix(len(bounds))
            model.add_columns_with_entries(cost, starts, index, values)
            bounds = np.concatenate([bounds, np.zeros(len(self.columns) - len(bounds))])
        want = np.zeros(len(bounds))
        if fixed is not None:
            want[: len(fixed)] = fixed
        changed = np.flatnonzero(want != bounds)
        if len(changed):
            model.set_column_bounds(changed, want[changed], np.full(len(changed), math.inf))
        self._lp = (budget, model, want)
        return model.run(time_limit_s)

    def _master_lp(self, budget: int) -> tuple[float, np.ndarray]:
        """The master LP's optimum and its row duals (:meth:`_lp_run`)."""
        run = self._lp_run(budget)
        if run.status != RunStatus.OPTIMAL or run.row_dual is None:
            self._lp = None
            raise RuntimeError(f"budget master LP not solved: {run.message}")
        self._lp_x = None if run.x is None else np.asarray(run.x, dtype=float)
        return float(run.objective), np.asarray(run.row_dual, dtype=float)

    def _node_key(self, g: int) -> tuple[int, int, int, int]:
        """(GPU type, GPUs, CPU, memory) of group ``g``'s nodes."""
        return tuple(int(v) for v in self.cb.node_keys[self.cb.node_class[self.groups[g].nodes[0]]])

    def packings(self) -> dict[tuple[int, int, int, int], set[tuple[Slot, ...]]]:
        """The fresh packings (configurations that keep no resident) the last master LP
        uses, by node key (GPU type, GPUs, CPU, memory): a packing fits every node of its
        key, whatever its residents, so a later problem on the same pods may start from them
        (:meth:`add_packings`)."""
        out: dict[tuple[int, int, int, int], set[tuple[Slot, ...]]] = {}
        if self._lp_x is None:
            return out
        for j in np.flatnonzero(self._lp_x > 1e-9):
            col = self.columns[int(j)]
            if not col.keep and col.incoming:
                out.setdefault(self._node_key(col.group), set()).add(tuple(sorted(col.incoming)))
        return out

    def add_packings(self, packings: dict[tuple[int, int, int, int], set[tuple[Slot, ...]]]) -> int:
        """Add, for every group, the packings of its node key as fresh configurations
        (columns); returns how many were new."""
        added = 0
        for g in range(len(self.groups)):
            for slots in packings.get(self._node_key(g), ()):
                added += self._add(Config(g, (), slots))
        return added

    def _floored(self, budget: int) -> int:
        """:meth:`bound_at` made a valid integer bound: at most what all the pods hold, plus a
        slack for floating point, floored to the pods' granularity."""
        hold = self.P + self.F
        best = min(self.bound_at(budget), float(self.value @ hold))
        total = self.cluster.total_gpu_milli
        step = math.gcd(*(int(v) for v in self.value[hold > 0] if v)) or 1
        return int(math.floor((best + 1e-7 * total) / step)) * step

    def at(
        self,
        budget: int,
        time_limit_s: float = 600.0,
        pricing_time_s: float = PRICING_TIME_S,
        witness_time_s: float = 120.0,
        full_every: int = 4,
        progress: Callable[[int, float, float, int], None] | None = None,
    ) -> CurvePoint:
        """The curve's point at ``budget`` migrations: column generation until the
        Lagrangian bound meets the master LP (or ``time_limit_s``), then the witness. Every
        ``full_every``-th round prices every group (a Lagrangian bound); the rounds between
        price only the groups whose last reduced value was positive (partial pricing)."""
        t0 = time.perf_counter()
        if budget == 0:
            point = self._unmoved()
            if point is not None:
                point.seconds = round(time.perf_counter() - t0, 2)
                return point
        deadline = t0 + time_limit_s
        center: np.ndarray | None = None
        center_value = math.inf
        iterations = 0
        master_value = -math.inf
        while time.perf_counter() < deadline:
            iterations += 1
            master_value, dual_lp = self._master_lp(budget)
            active = [g for g, r in enumerate(self.last_reduced) if r > REDUCED_TOL]
            full = (iterations - 1) % full_every == 0 or not active
            if not full:
                _, added = self._lagrangian_round(
                    dual_lp, dual_lp, active, pricing_time_s, deadline, for_bound=False
                )
                if added:
                    if progress is not None:
                        progress(iterations, master_value, self.bound_at(budget), added)
                    continue
            alpha = SMOOTHING if center is not None else 0.0
            while True:
                dual = dual_lp if center is None else alpha * center + (1 - alpha) * dual_lp
                line, added = self._lagrangian_round(
                    dual, dual_lp, range(len(self.groups)), pricing_time_s, deadline
                )
                assert line is not None
                self.lines.append(line)
                value = line[0] + min(line[1], 0.0) * (self.n_paid - budget)
                if value < center_value:
                    center, center_value = dual.copy(), value
                if added or alpha == 0.0 or time.perf_counter() > deadline:
                    break
                alpha = 0.0
            best = self.bound_at(budget)
            if progress is not None:
                progress(iterations, master_value, best, added)
            if best - master_value <= CONVERGED_MILLI or (alpha == 0.0 and not added):
                break
        point = CurvePoint(budget, self._floored(budget), None, None, None, iterations=iterations)
        point.method = "column generation"
        point.master_milli = master_value
        self._witness(point, budget, witness_time_s)
        point.columns = len(self.columns)
        point.seconds = round(time.perf_counter() - t0, 2)
        return point

    def _unmoved(self) -> CurvePoint | None:
        """Budget 0 when no failed pod fits the end state alone: nothing can be added (the
        first pod added would have to fit alone), so the end state is optimal. None when some
        failed pod fits or some pod moves free of the budget (then the column generation
        decides)."""
        if self.n_paid < int((self.node >= 0).sum()):
            return None
        state = TraceState(self.cluster)
        where = {}
        for a in np.flatnonzero(self.node >= 0):
            state.place(self.pods, int(self.arrived[a]), int(self.node[a]), self.gpus[a])
            where[int(a)] = (int(self.node[a]), self.gpus[a])
        if any(
            len(state.feasible(self.pods, int(self.arrived[a])))
            for a in np.flatnonzero(self.node < 0)
        ):
            return None
        return CurvePoint(
            0, self.start_milli, self.start_milli, 0, 0, witness=where, method="end state (proved)"
        )

    # -- a restriction: every node either keeps all its pods or is packed anew -------------

    def keep_or_reset(
        self,
        budget: int,
        time_limit_s: float = 600.0,
        pricing_time_s: float = 1.0,
        witness_time_s: float = 120.0,
        progress: Callable[[int, float, int], None] | None = None,
        tidy_time_s: float = 0.0,
        spare: bool = False,
    ) -> CurvePoint:
        """A witness for ``budget`` from a restriction of the problem: each node keeps every
        resident (and may take pods into its free room) or gives up all of them and is packed
        anew, its residents counting as migrations. Pricing a fresh packing depends on the
        node class only (:meth:`.config_bound.ConfigBound.price`, one CP-SAT model per class),
        pricing additions on a kept node has the residents fixed: both cheap, against the
        full pricing of :meth:`at`. The witness is checked as every witness is; its bound is
        *not* a bound on the problem (the restriction may miss better placements), so the
        point's ``bound_milli`` is the smallest valid one known (:meth:`bound_at`, the
        start's value when K = 0). A node class's fresh packing is priced every
        :data:`FRESH_EVERY` rounds, and in the rounds between while its packings enter the
        master; the generation stops when a round that priced them all adds no column.

        ``spare`` (a re-packing cycle's wall time): the witness and the tidy-up also get what
        the generation left of ``time_limit_s``, in proportion, and the integer master
        :data:`CYCLE_MASTER_SHARE` of the witness's time (the dive, which prices the full problem, seldom ends
        in time on a whole cluster; on a small one it finds what no keep-or-reset column
        holds)."""
        t0 = time.perf_counter()
        deadline = t0 + time_limit_s
        C = self.n_classes
        counts = self.P + self.F
        iterations = 0
        master_value = -math.inf
        wanted = set(range(len(self.cb.node_keys)))  # classes a partial round prices
        full = True
        while time.perf_counter() < deadline:
            iterations += 1
            master_value, dual = self._master_lp(budget)
            profit = self.value - dual[:C]
            mu = dual[C + 1 :]
            added = 0
            fresh: dict[int, tuple[float, object]] = {}
            for q in range(len(self.cb.node_keys)) if full else sorted(wanted):
                left = deadline - time.perf_counter()
                _bound, value, packing = self.cb.price(
                    q, profit, counts, max(0.2, min(pricing_time_s, left))
                )
                fresh[q] = (value, packing)
            entered = set()
            for g, group in enumerate(self.groups):
                q = int(self.cb.node_class[group.nodes[0]])
                value, packing = fresh.get(q, (0.0, None))
                if packing is not None and value > mu[g] + REDUCED_TOL:
                    col = Config(g, (), tuple(packing.slots))  # type: ignore[attr-defined]
                    if self._add(col):
                        added += 1
                        entered.add(q)
                if time.perf_counter() > deadline:
                    break
                _zg, col = self.price(
                    g,
                    profit,
                    -float(dual[C]),
                    max(0.2, min(pricing_time_s, deadline - time.perf_counter())),
                    keep_all=True,
                )
                if col is not None:
                    y, kept = self._counts(col)
                    reduced = float(profit @ y - dual[C] * kept)
                    if reduced > mu[g] + REDUCED_TOL:
                        added += self._add(col)
            if progress is not None:
                progress(iterations, master_value, added)
            if not added and full:
                break
            wanted = (wanted - set(fresh)) | entered
            full = not added or iterations % FRESH_EVERY == 0
        point = CurvePoint(budget, self._floored(budget), None, None, None)
        point.iterations, point.master_milli = iterations, master_value
        point.method = "keep-or-reset column generation"
        if spare and witness_time_s + tidy_time_s > 0:
            scale = 1 + max(deadline - time.perf_counter(), 0.0) / (witness_time_s + tidy_time_s)
            witness_time_s, tidy_time_s = scale * witness_time_s, scale * tidy_time_s
        share = CYCLE_MASTER_SHARE if spare else MASTER_SHARE
        self._witness(point, budget, witness_time_s, tidy_time_s, share)
        point.columns = len(self.columns)
        point.seconds = round(time.perf_counter() - t0, 2)
        return point

    # -- unlimited budget: the configuration bound, realised with the fewest moves -----------

    def unlimited(self, time_limit_s: float = 900.0) -> CurvePoint:
        """The curve's point with no budget, by the configuration bound of
        :mod:`.config_bound` over the packings that hold every pod of ``P`` (``forced``; its
        CPU-only pods are relaxed there, so the bound stays valid), and its witness packing
        laid onto the cluster with the fewest migrations :func:`.budget_layout.lay_out` finds. The
        migrations counted are what reaching that packing takes (so any budget at least
        that large reaches it too), not the least over all packings of its value."""
        t0 = time.perf_counter()
        placed = np.flatnonzero(self.node >= 0)
        start = [(int(self.arrived[a]), int(self.node[a]), self.gpus[a]) for a in placed]
        result = self.cb.at(
            self.arrived,
            time_limit_s=time_limit_s,
            start=[start],
            stop_gap_milli=CONVERGED_MILLI,
            forced=self.arrived[placed],
        )
        point = CurvePoint(len(placed), result.bound_milli, None, None, None)
        point.iterations, point.columns = result.iterations, result.columns
        point.master_milli = result.master_milli
        if result.witness_milli is not None and not result.witness_errors:
            self._check_layout(point, len(placed), lay_out(self, result.witness))
            point.method = "configuration packing laid out"
        if point.witness_milli is None or point.errors:
            # no packing, or its layout left a CPU-only pod out (the bound relaxes them)
            fallback = self.keep_or_reset(len(placed), time_limit_s=time_limit_s)
            point.witness, point.witness_milli = fallback.witness, fallback.witness_milli
            point.witness_moves = fallback.witness_moves
            point.witness_placed_failed = fallback.witness_placed_failed
            point.errors, point.method = fallback.errors, fallback.method
        point.seconds = round(time.perf_counter() - t0, 2)
        return point

    def _check_layout(
        self, point: CurvePoint, budget: int, where: dict[int, tuple[int, tuple[int, ...]]]
    ) -> None:
        """Check a placement of the arrivals from scratch and count its migrations."""
        errors: list[str] = []
        items = list(where)
        errors += check_placement(
            TraceState(self.cluster),
            self.pods,
            [int(self.arrived[a]) for a in items],
            [(i, where[a][0], where[a][1]) for i, a in enumerate(items)],
        )
        lost = [int(a) for a in np.flatnonzero(self.node >= 0) if int(a) not in where]
        if lost:
            errors.append(f"{len(lost)} pods placed at the start are not placed: {lost[:5]}")
        moves = sum(
            1
            for a in np.flatnonzero((self.node >= 0) & self.paid)
            if int(a) in where and where[int(a)] != (int(self.node[a]), self.gpus[a])
        )
        if moves > budget:
            errors.append(f"{moves} migrations > budget {budget}")
        point.witness = where
        point.witness_milli = int(sum(int(self.pods.demand[self.arrived[a]]) for a in where))
        point.witness_moves = moves
        point.witness_placed_failed = sum(1 for a in where if self.node[a] < 0)
        point.errors = errors

    # -- the witness -----------------------------------------------------------------------

    def _witness(
        self,
        point: CurvePoint,
        budget: int,
        time_limit_s: float,
        tidy_time_s: float = 0.0,
        master_share: float = MASTER_SHARE,
    ) -> None:
        """The best of the integer solutions, realised and checked: the integer master over
        the columns (HiGHS, ``master_share`` of the time the rounding left), a dive
        (:meth:`_dive`, the rest) that prices new columns as it fixes, and the end state
        itself (every node keeps all: the first column of each group), which is feasible at
        every budget. Then, given ``tidy_time_s``, the fewest migrations at that value (the
        integer master keeping the most residents among the solutions worth at least as
        much, started from the best); the realised placement's needless migrations are
        undone in any case (:meth:`_realise`)."""
        t0 = time.perf_counter()
        start = np.zeros(len(self.columns), dtype=np.int64)
        start[: len(self.groups)] = [len(g.nodes) for g in self.groups]
        best = (self.start_milli, start)
        if self._lp_x is not None:
            contents = lp_rounding(self, budget, self._lp_x, time_limit_s * ROUNDING_SHARE)
            if contents is not None:
                rounded = self._lam_of(contents)
                best = max(best, (self._value_of(rounded), rounded), key=lambda b: b[0])
        left = time_limit_s - (time.perf_counter() - t0)
        run = self._solve_master(budget, max(left * master_share, 1.0), start=best[1])
        if run.x is not None:
            lam = np.rint(run.x).astype(np.int64)
            if self._value_of(lam) > best[0]:
                best = (self._value_of(lam), lam)
        left = time_limit_s - (time.perf_counter() - t0)
        dived = self._dive(budget, max(left, 1.0))
        if dived is not None and self._value_of(dived) > best[0]:
            best = (self._value_of(dived), dived)
        value, lam = best
        if value > self.start_milli and tidy_time_s > 0:
            run = self._solve_master(budget, tidy_time_s, floor_milli=value, start=lam)
            if run.x is not None:
                tidy = np.rint(run.x).astype(np.int64)
                if self._value_of(tidy) >= value and self._kept_of(tidy) > self._kept_of(lam):
                    lam = tidy
        self._realise(point, budget, lam)

    def _lam_of(self, contents: dict[tuple, int]) -> np.ndarray:
        """Column counts of configurations given as ``{(group, keep, incoming): nodes}``
        (adding the columns not generated yet)."""
        for g, keep, incoming in contents:
            self._add(Config(g, keep, tuple(incoming)))
        lam = np.zeros(len(self.columns), dtype=np.int64)
        for (g, keep, incoming), times in contents.items():
            lam[self._index[g, keep, tuple(sorted(incoming))]] = times
        return lam

    def _kept_of(self, lam: np.ndarray) -> int:
        """The residents the column counts ``lam`` keep whose moves count."""
        return int(sum(self._kept(j) * int(t) for j, t in enumerate(lam) if t))

    def _kept(self, j: int) -> int:
        """Column ``j``'s kept residents whose moves count: its entry in the budget row."""
        return int(self._entries[j][2][-2])

    def _value_of(self, lam: np.ndarray) -> int:
        """The milli-GPU the column counts ``lam`` hold."""
        return int(sum(int(self._entries[j][0]) * int(t) for j, t in enumerate(lam) if t))

    def _dive(self, budget: int, time_limit_s: float) -> np.ndarray | None:
        """Price-and-dive: solve the master LP, fix every column's integer part (or, when
        none has one, round up the most fractional-heavy column), price the groups not yet
        fully fixed at the new duals, repeat until every node has a configuration. None if
        the master becomes infeasible or time runs out."""
        deadline = time.perf_counter() + time_limit_s
        sizes = np.array([len(g.nodes) for g in self.groups])
        fixed = np.zeros(len(self.columns), dtype=np.int64)
        while time.perf_counter() < deadline:
            if len(fixed) < len(self.columns):
                fixed = np.concatenate([fixed, np.zeros(len(self.columns) - len(fixed), np.int64)])
            run = self._lp_run(budget, fixed, self._left(deadline))
            if run.status != RunStatus.OPTIMAL or run.x is None or run.row_dual is None:
                return None
            x = np.asarray(run.x)
            if np.all(np.abs(x - np.rint(x)) < 1e-6):
                return np.rint(x).astype(np.int64)
            floor = np.floor(x + 1e-6).astype(np.int64)
            if np.any(floor > fixed):
                fixed = np.maximum(fixed, floor)
            else:
                frac = np.where(x - fixed > 1e-6, x - fixed, -1.0)
                j = int(np.argmax(frac))
                fixed[j] += 1
            used = np.zeros(len(self.groups), dtype=np.int64)
            for j in np.flatnonzero(fixed):
                used[self.columns[j].group] += fixed[j]
            open_groups = [g for g in range(len(self.groups)) if used[g] < sizes[g]]
            if not open_groups:
                continue
            run = self._lp_run(budget, fixed, self._left(deadline))
            if run.status != RunStatus.OPTIMAL or run.row_dual is None:
                return None
            dual = np.asarray(run.row_dual, dtype=float)
            active = (
                open_groups
                if len(open_groups) <= DIVE_PRICE_ALL
                else [g for g in open_groups if self.last_reduced[g] > REDUCED_TOL]
            )
            if active:
                self._lagrangian_round(dual, dual, active, 1.0, deadline, for_bound=False)
        return None

    @staticmethod
    def _left(deadline: float) -> float:
        """Seconds to ``deadline``, at least one (a dive's LP gets what is left)."""
        return max(deadline - time.perf_counter(), 1.0)

    def _realise(self, point: CurvePoint, budget: int, lam: np.ndarray) -> None:
        """Turn column counts into a placement, pod by pod, and check it from scratch."""
        lam = np.concatenate([lam, np.zeros(len(self.columns) - len(lam), dtype=np.int64)])
        free = [list(g.nodes) for g in self.groups]
        plan: list[tuple[int, Config]] = []
        for col, times in zip(self.columns, lam, strict=True):
            for _ in range(int(times)):
                plan.append((free[col.group].pop(), col))
        # A resident not kept takes an incoming slot of its own class on its own node and
        # GPUs when there is one (it then has not moved); the other incoming slots take the
        # residents not kept elsewhere first, then failed pods.
        where: dict[int, tuple[int, tuple[int, ...]]] = {}
        open_slots: list[tuple[int, int, tuple[int, ...]]] = []
        for node, col in plan:
            kept = set(col.keep)
            mine: dict[tuple[int, tuple[int, ...]], list[int]] = {}
            for i, a in enumerate(self.residents_of[node]):
                if i in kept:
                    where[a] = (node, self.gpus[a])
                else:
                    mine.setdefault((int(self.cls[a]), self.gpus[a]), []).append(a)
            for c, gs in col.incoming:
                if mine.get((c, gs)):
                    where[mine[(c, gs)].pop()] = (node, gs)
                else:
                    open_slots.append((node, c, gs))
        pool: dict[int, list[int]] = {}
        for a in np.flatnonzero(self.node < 0):
            pool.setdefault(int(self.cls[a]), []).append(int(a))
        for a in np.flatnonzero(self.node >= 0):
            if int(a) not in where:
                pool.setdefault(int(self.cls[a]), []).append(int(a))  # popped first
        errors: list[str] = []
        for node, c, gs in open_slots:
            if not pool.get(c):
                errors.append(f"class {c}: more incoming slots than pods")
                continue
            where[pool[c].pop()] = (node, gs)
        self._check_layout(point, budget, self._undo_needless(where))
        point.errors = errors + point.errors

    def _undo_needless(
        self, where: dict[int, tuple[int, tuple[int, ...]]]
    ) -> dict[int, tuple[int, tuple[int, ...]]]:
        """``where`` with every migrated pod whose own node and GPUs still have room for it
        in the new placement put back there (same milli-GPU, one migration fewer), until
        none can be."""
        state = TraceState(self.cluster)
        for a, (n, gs) in where.items():
            state.place(self.pods, int(self.arrived[a]), n, list(gs))
        where = dict(where)
        moved = [
            int(a)
            for a in np.flatnonzero(self.node >= 0)
            if int(a) in where and where[int(a)] != (int(self.node[a]), self.gpus[a])
        ]
        changed = True
        while changed:
            changed = False
            for a in list(moved):
                p, (n, gs) = int(self.arrived[a]), where[a]
                home, home_gpus = int(self.node[a]), self.gpus[a]
                state.remove(self.pods, p, n, list(gs))
                if state.fits(self.pods, p, home, home_gpus):
                    state.place(self.pods, p, home, list(home_gpus))
                    where[a] = (home, home_gpus)
                    moved.remove(a)
                    changed = True
                else:
                    state.place(self.pods, p, n, list(gs))
        return where
