"""Branch and price on the configuration LP of :mod:`.colgen`: the exact answer where the LP
alone cannot give one (its optimum is at most the number of cores, yet no heuristic and no
integer master over its columns finds a schedule).

Identical cores, no droppable task (the configuration LP's *cores mode*: the benchmark's
case). A node is a set of **Ryan-Foster rules** (Ryan and Foster, "An integer programming
approach to scheduling", Computer Scheduling of Public Transport, 1981; for bin packing
e.g. Vance, Barnhart, Johnson and Nemhauser, "Solving binary cutting stock problems by
column generation and branch-and-bound", Computational Optimization and Applications 3(2),
1994): pairs of tasks that share a core (*together*) or do not (*apart*). The together pairs
merge tasks into groups; a node's columns are the passing task sets that hold every group
whole or not at all and no apart pair. Every schedule (a partition of the tasks into at most
``m`` passing sets) obeys the rules of exactly one child of each node, so the search is
complete, and a node whose rules leave only pairs already decided has only its groups as
columns.

**The node's bound.** Column generation on the node's master (the cover rows of
:mod:`.colgen`, only the node's columns); after an exact pricing with the multipliers
``pi >= 0`` (the duals rounded down to multiples of ``1/PRICE_SCALE``) and any proven upper
bound ``z`` on ``max pi(S)`` over the node's columns, every schedule of the node uses at
least ``sum_i pi_i / z`` cores (the Farkas bound of :mod:`.colgen`: the node's cores
partition the tasks, and each is one of the node's columns). The node is pruned when that
exceeds ``m`` (exact rationals). ``z`` comes from the unconstrained pricing of
:class:`.colgen.Pricer` (the node's columns are among its sets, so its bound holds), and
when that one finds only columns that break the rules, from the same CP-SAT pricing with the
rules as constraints.

**Schedules.** At every node the LP solution is rounded: its columns in decreasing value,
each keeping the tasks not yet placed (a subset of a passing set passes: the tests are
monotone), the tasks left over placed first-fit; at most ``m`` cores is a schedule. An
integral LP solution of value at most ``m`` is one such rounding. Before the search, a
**dive** (a heuristic, within :data:`DIVE_SHARE` of the time) gives the LP's largest column a
core of its own and solves the LP of the rest on the cores left, until a rounding succeeds;
then once more with one discrepancy at each depth (limited discrepancy search).

**Branching.** The pair of groups that share the largest fractional total ``f_ij = sum of
lambda_S over S holding both`` (in ``(0, 1)``), *together* first (diving towards the LP's
choice); when no pair is fractional, a pair in one of the LP's columns, else any pair not yet
apart. Depth first.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from placement.models.mc.colgen import (
    COLUMNS_PER_PRICING,
    FLOAT_MARGIN,
    IMPROVEMENT_TOLERANCE,
    PRICE_SCALE,
    PRICING_TIME_S,
    CoreType,
    Priced,
    Pricer,
    first_fit_columns,
    passes,
)
from placement.models.mc.instance import EDF_VD, McInstance
from placement.solver.backends.base import RunStatus
from placement.solver.backends.highs import HighsModel
from placement.solver.cancel import CancellationToken
from placement.solver.options import SolveOptions

DIVE_SHARE = 0.5
"""Share of the time the dive (a heuristic, first) may use; the search has the rest."""
FRACTIONAL = 1e-6
"""A column value or pair total within this of an integer counts as that integer."""


@dataclass(frozen=True)
class Rules:
    """A node's Ryan-Foster rules: task pairs on one core, task pairs on different cores."""

    together: tuple[tuple[int, int], ...] = ()
    apart: tuple[tuple[int, int], ...] = ()


class Groups:
    """The tasks merged by a node's together pairs, and its apart pairs between groups."""

    def __init__(self, n: int, rules: Rules) -> None:
        parent = list(range(n))

        def find(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        for i, j in rules.together:
            a, b = find(i), find(j)
            if a != b:
                parent[max(a, b)] = min(a, b)
        self.rep = [find(i) for i in range(n)]
        members: dict[int, list[int]] = {}
        for i in range(n):
            members.setdefault(self.rep[i], []).append(i)
        self.members = {r: tuple(ts) for r, ts in members.items()}
        self.apart = {
            (min(self.rep[i], self.rep[j]), max(self.rep[i], self.rep[j])) for i, j in rules.apart
        }
        self.contradictory = any(a == b for a, b in self.apart)
        """An apart pair inside one group: the node has no schedule."""

    def allows(self, column: frozenset[int]) -> bool:
        """Whether ``column`` holds each group whole or not at all and no apart pair."""
        reps = {self.rep[i] for i in column}
        if sum(len(self.members[r]) for r in reps) != len(column):
            return False
        return not any(a in reps and b in reps for a, b in self.apart)


@dataclass
class BranchPriceResult:
    """What branch and price found."""

    core_of: tuple[int, ...] | None = None
    """A schedule (every task on a core), or None."""
    proven_infeasible: bool = False
    """Every node was pruned by its bound: no schedule exists."""
    nodes: int = 0
    pricing_solves: int = 0
    seconds: float = 0.0
    columns: int = 0


@dataclass
class _Node:
    value: float | None = None
    bound: Fraction | None = None
    pruned: bool = False
    columns: list[frozenset[int]] | None = None
    x: np.ndarray | None = None
    bins: list[list[int]] | None = None


class BranchAndPrice:
    """Depth-first branch and price over one core type (see the module docstring)."""

    def __init__(
        self,
        instance: McInstance,
        ctype: CoreType,
        seed_columns: list[frozenset[int]],
        deadline: float,
        cancel: CancellationToken,
        options: SolveOptions,
        heuristics: bool = True,
    ) -> None:
        self.instance = instance
        self.heuristics = heuristics
        """Dive and round for schedules (off: only an integral LP solution is one, so the
        search must branch to find it, as its tests need)."""
        self.ctype = ctype
        self.n = len(instance.tasks)
        self.m = len(ctype.cores)
        self.deadline = deadline
        self.cancel = cancel
        self.one = SolveOptions(threads=1, seed=options.seed, deterministic=options.deterministic)
        self.pricer = Pricer(instance, ctype)
        self.pool: list[frozenset[int]] = []
        self._seen: set[frozenset[int]] = set()
        for column in [*seed_columns, *(first_fit_columns(instance, ctype) if heuristics else ())]:
            self._keep(column)
        self.result = BranchPriceResult()

    def _keep(self, column: frozenset[int]) -> bool:
        if not column or column in self._seen:
            return False
        self._seen.add(column)
        self.pool.append(column)
        return True

    def _out_of_time(self) -> bool:
        return time.monotonic() >= self.deadline or self.cancel.cancelled

    def run(self) -> BranchPriceResult:
        """Search until a schedule, the proof that none exists, or the deadline."""
        started = time.monotonic()
        dive = None
        if self.heuristics:
            dive = self._dive(started + DIVE_SHARE * max(0.0, self.deadline - started))
        if dive is not None:
            self.result.core_of = dive
            return self._finish(started)
        stack = [Rules()]
        complete = True
        while stack:
            if self._out_of_time():
                complete = False
                break
            rules = stack.pop()
            self.result.nodes += 1
            node = self._solve_node(rules, frozenset(range(self.n)), self.m, self.deadline)
            if node.bins is not None:
                self.result.core_of = self._core_of(node.bins)
                break
            if node.pruned:
                continue
            if node.columns is None or node.x is None:
                complete = False  # out of time inside the node
                break
            children = self._branch(rules, node)
            if children is None:
                continue  # a leaf whose groups are not a schedule
            stack.extend(reversed(children))
        self.result.proven_infeasible = complete and not stack and self.result.core_of is None
        return self._finish(started)

    def _finish(self, started: float) -> BranchPriceResult:
        self.result.seconds = time.monotonic() - started
        self.result.pricing_solves = self.pricer.solves
        self.result.columns = len(self.pool)
        return self.result

    def _dive(self, stop: float) -> tuple[int, ...] | None:
        """A schedule by diving (a heuristic: it proves nothing): solve the LP of the tasks
        left on the cores left, round it, else give the column of the largest value a core of
        its own and repeat on the rest (its pricing needs no rule: the tasks placed get no
        weight). A failed dive is retried with one discrepancy (the second-best column at
        depth 0, then at depth 1, ...: limited discrepancy search). Until ``stop``."""
        for swerve in (None, *range(self.m - 1)):
            if time.monotonic() >= stop:
                break
            found = self._dive_once(stop, swerve)
            if found is not None:
                return found
        return None

    def _dive_once(self, stop: float, swerve: int | None) -> tuple[int, ...] | None:
        """One dive, taking the second-best column at depth ``swerve``."""
        tasks = frozenset(range(self.n))
        bins: list[list[int]] = []
        while tasks and len(bins) < self.m and time.monotonic() < stop:
            node = self._solve_node(Rules(), tasks, self.m - len(bins), stop)
            if node.bins is not None:
                return self._core_of([*bins, *node.bins])
            if node.pruned or node.columns is None or node.x is None:
                return None
            x, columns = node.x, node.columns
            ranked = sorted(range(len(columns)), key=lambda k: (-x[k], -len(columns[k])))
            pick = 1 if swerve == len(bins) and len(ranked) > 1 and x[ranked[1]] > 0 else 0
            column = columns[ranked[pick]] & tasks
            bins.append(sorted(column))
            tasks = tasks - column
        return self._core_of(bins) if not tasks else None

    def _core_of(self, bins: list[list[int]]) -> tuple[int, ...]:
        core_of = [-1] * self.n
        for core, b in zip(self.ctype.cores, bins, strict=False):
            for i in b:
                core_of[i] = core
        return tuple(core_of)

    def _solve_node(self, rules: Rules, tasks: frozenset[int], m: int, stop: float) -> _Node:
        """The column generation of a node (all tasks, ``m`` the cores) or of a dive's rest
        (``tasks`` on ``m`` cores, no rule): pruned, a schedule, or its LP solution."""
        groups = Groups(self.n, rules)
        if groups.contradictory:
            return _Node(pruned=True)
        for members in groups.members.values():
            if len(members) > 1 and not passes(self.instance, members, self.ctype.speed):
                return _Node(pruned=True)  # the group fits no core
            self._keep(frozenset(members))
        # A pool column cut to the tasks left still passes (the tests are monotone); with
        # rules every task is left, so the cut is the column.
        columns = list(dict.fromkeys(c & tasks for c in self.pool if groups.allows(c)))
        columns = [c for c in columns if c]
        lp = HighsModel()
        needed = np.array([1.0 if i in tasks else 0.0 for i in range(self.n)])
        lp.add_rows(needed, np.full(self.n, math.inf))
        for column in columns:
            lp.add_column(1.0, 0.0, math.inf, np.array(sorted(column)), np.ones(len(column)))
        index = set(columns)
        best: Fraction | None = None
        while not self._out_of_time() and time.monotonic() < stop:
            run = lp.run(max(0.01, stop - time.monotonic()))
            if run.status != RunStatus.OPTIMAL or run.row_dual is None or run.x is None:
                return _Node()
            value = float(run.objective)  # type: ignore[arg-type]
            pi = np.maximum(0.0, run.row_dual[: self.n])
            x = np.asarray(run.x, dtype=float)
            bins = self._round(columns, x, tasks, m) if self.heuristics else None
            if bins is not None:
                return _Node(value=value, bins=bins)
            added = [c for c in self._greedy(groups, pi, tasks) if c not in index]
            if not added:
                priced, z = self._price(groups, pi)
                if z is not None:
                    total = sum(int(math.floor(p * PRICE_SCALE)) for p in pi if p > 0)
                    if z > 0:
                        bound = Fraction(total, z)
                        best = bound if best is None else max(best, bound)
                        if bound > m:
                            return _Node(value=value, bound=bound, pruned=True)
                added = [c for c in priced if c not in index]
                if not added:
                    if z is None:
                        return _Node()  # the pricing ran out of time: no proof here
                    bins = self._round(columns, x, tasks, m)
                    if bins is not None:
                        return _Node(value=value, bins=bins)
                    return _Node(value=value, bound=best, columns=columns, x=x)
            for column in added:
                self._keep(column)
                index.add(column)
                columns.append(column)
                lp.add_column(1.0, 0.0, math.inf, np.array(sorted(column)), np.ones(len(column)))
        return _Node()

    def _greedy(
        self, groups: Groups, pi: np.ndarray, tasks: frozenset[int]
    ) -> list[frozenset[int]]:
        """Improving columns of the node by first fit over its groups in a few orders."""
        items = [(sum(pi[i] for i in ts), ts) for ts in groups.members.values() if ts[0] in tasks]
        valuable = [it for it in items if it[0] > 0]
        rest = [it for it in items if it[0] <= 0]

        def size(ts: tuple[int, ...]) -> float:
            return float(sum(self.instance.tasks[i].u_own for i in ts))

        orders = [
            sorted(valuable, key=lambda it: -it[0] / max(size(it[1]), 1e-12)),
            sorted(valuable, key=lambda it: -it[0]),
        ]
        for first in orders[0][:3]:
            orders.append([first] + [it for it in orders[0] if it is not first])
        rest.sort(key=lambda it: -size(it[1]))
        found: list[frozenset[int]] = []
        for order in orders:
            chosen: list[int] = []
            reps: set[int] = set()
            weight = 0.0
            for w, ts in [*order, *rest]:
                r = groups.rep[ts[0]]
                if any((min(r, q), max(r, q)) in groups.apart for q in reps):
                    continue
                if self.pricer.passes([*chosen, *ts]):
                    chosen.extend(ts)
                    reps.add(r)
                    weight += w
            column = frozenset(chosen)
            if weight > 1 + IMPROVEMENT_TOLERANCE and column not in found:
                found.append(column)
        return found

    def _price(self, groups: Groups, pi: np.ndarray) -> tuple[list[frozenset[int]], int | None]:
        """Improving columns of the node and a proven upper bound on ``max pi(S)`` over its
        columns, in units of ``1/PRICE_SCALE`` (None: none proved in time)."""
        weights = {i: int(math.floor(p * PRICE_SCALE)) for i, p in enumerate(pi) if p > 0}
        if not weights:
            return [], 0
        above = PRICE_SCALE
        relaxed = self.pricer.price(weights, above, self.deadline, self.one, self.cancel)
        if relaxed.upper is not None and relaxed.upper <= above:
            return [], relaxed.upper
        improving = [
            c
            for c in relaxed.columns
            if groups.allows(c) and sum(pi[i] for i in c) > 1 + IMPROVEMENT_TOLERANCE
        ]
        if improving:
            return improving, relaxed.upper
        # The unconstrained optimum breaks the node's rules: price under them.
        stop = min(self.deadline, time.monotonic() + PRICING_TIME_S)
        self.pricer.solves += 1
        if self.instance.test == EDF_VD:
            priced = self._search(groups, weights, above, stop)
        else:
            reps = {groups.rep[i] for i in weights}
            tasks = sorted(i for r in reps for i in groups.members[r])
            together = [(groups.rep[i], i) for i in tasks if groups.rep[i] != i]
            apart = [(a, b) for a, b in groups.apart if a in reps and b in reps]
            priced = self.pricer._cpsat(
                tasks, weights, above, stop, self.one, self.cancel, together, apart
            )
        upper = priced.upper
        if relaxed.upper is not None and upper is not None:
            upper = min(upper, relaxed.upper)
        elif upper is None:
            upper = relaxed.upper
        columns = [
            c
            for c in priced.columns
            if groups.allows(c) and sum(pi[i] for i in c) > 1 + IMPROVEMENT_TOLERANCE
        ]
        return columns, upper

    def _search(self, groups: Groups, weights: dict[int, int], above: int, stop: float) -> Priced:
        """EDF-VD pricing under the node's rules by depth-first branch and bound over its
        groups (each whole, no apart pair): a node adds one later group; a set that fails
        EDF-VD on float sums (cleared by :data:`.colgen.FLOAT_MARGIN`: closer sets count as
        passing, so nothing that passes is lost) is cut with its subtree (the test is
        monotone); a node is pruned when its weight plus the fractional knapsack of its
        candidates into the LO-mode utilisation left (``U_LO^LO + U_HI^LO <= 1`` is necessary
        for EDF-VD) cannot exceed the best. Exact when it finishes; stopped at ``stop``, the
        largest bound of the nodes left is the (valid) upper bound. Sets found are checked
        with the exact test before they become columns."""
        items = []
        for r, ts in groups.members.items():
            w = sum(weights.get(i, 0) for i in ts)
            if w <= 0:
                continue  # a set without it weighs as much and passes (monotone tests)
            lo = sum(self.pricer.u_lo[i] for i in ts if not self.instance.tasks[i].hi)
            hl = sum(self.pricer.u_lo[i] for i in ts if self.instance.tasks[i].hi)
            hh = sum(self.pricer.u_hi[i] for i in ts if self.instance.tasks[i].hi)
            items.append((r, w, lo, hl, hh))
        items.sort(key=lambda it: -it[1] / max(it[2] + it[3], 1e-12))
        size = [it[2] + it[3] for it in items]
        conflict = [
            {
                b
                for b, other in enumerate(items)
                if (min(it[0], other[0]), max(it[0], other[0])) in groups.apart
            }
            for it in items
        ]

        def bound(w: float, used: float, cand: list[int]) -> float:
            room = 1 + FLOAT_MARGIN - used
            for k in cand:
                if size[k] <= room:
                    room -= size[k]
                    w += items[k][1]
                else:
                    return w + items[k][1] * room / size[k]
            return w

        def fails(lo: float, hl: float, hh: float) -> bool:
            margin = (1 - lo) * (1 - hh) - lo * hl
            return lo > 1 + FLOAT_MARGIN or hh > 1 + FLOAT_MARGIN or margin < -FLOAT_MARGIN

        best = above
        found: list[tuple[int, tuple[int, ...]]] = []
        everything = list(range(len(items)))
        stack = [(bound(0, 0.0, everything), (), 0, 0.0, 0.0, 0.0, everything)]
        steps = 0
        while stack:
            steps += 1
            if steps % 256 == 0 and (time.monotonic() > stop or self.cancel.cancelled):
                upper = max(best, math.ceil(max(b for b, *_ in stack) + 1e-6))
                return Priced(self._verified(groups, items, found, above), upper)
            node_bound, chosen, w, lo, hl, hh, cand = stack.pop()
            if node_bound <= best:
                continue
            if w > best:
                best = w
                found.append((w, chosen))
            children = []
            for pos, k in enumerate(cand):
                _, wk, lk, hlk, hhk = items[k]
                if fails(lo + lk, hl + hlk, hh + hhk):
                    continue
                rest = [q for q in cand[pos + 1 :] if q not in conflict[k]]
                cw = w + wk
                b = bound(cw, lo + lk + hl + hlk, rest)
                if b > best:
                    children.append((b, (*chosen, k), cw, lo + lk, hl + hlk, hh + hhk, rest))
            stack.extend(reversed(children))
        return Priced(self._verified(groups, items, found, above), best)

    def _verified(
        self,
        groups: Groups,
        items: list[tuple[int, int, float, float, float]],
        found: list[tuple[int, tuple[int, ...]]],
        above: int,
    ) -> list[frozenset[int]]:
        """The heaviest sets found above ``above`` that pass the exact test, as columns."""
        out: list[frozenset[int]] = []
        for w, chosen in sorted(found, key=lambda f: -f[0]):
            if w <= above or len(out) >= COLUMNS_PER_PRICING:
                break
            column = frozenset(i for k in chosen for i in groups.members[items[k][0]])
            if self.pricer.passes(column):
                out.append(column)
        return out

    def _round(
        self, columns: list[frozenset[int]], x: np.ndarray, tasks: frozenset[int], m: int
    ) -> list[list[int]] | None:
        """The cores of a schedule of ``tasks`` on ``m`` cores from the LP solution (see the
        module docstring), or None."""
        order = sorted((k for k in range(len(columns)) if x[k] > FRACTIONAL), key=lambda k: -x[k])
        for cut in (1 - FRACTIONAL, 0.5, FRACTIONAL) if self.heuristics else (1 - FRACTIONAL,):
            bins: list[list[int]] = []
            placed: set[int] = set()
            for k in order:
                if x[k] < cut:
                    break
                rest = sorted(columns[k] - placed)
                if rest:
                    bins.append(rest)
                    placed.update(rest)
            if len(bins) > m:
                continue
            left = sorted(
                (i for i in tasks if i not in placed),
                key=lambda i: -float(self.instance.tasks[i].u_own),
            )
            if left and not self.heuristics:
                return None
            for i in left:
                for b in bins:
                    if self.pricer.passes([*b, i]):
                        b.append(i)
                        break
                else:
                    bins.append([i])
                if len(bins) > m:
                    break
            if len(bins) <= m:
                return bins
        return None

    def _branch(self, rules: Rules, node: _Node) -> list[Rules] | None:
        """The two children (together first), or None at a leaf (every pair decided)."""
        groups = Groups(self.n, rules)
        assert node.columns is not None and node.x is not None
        share: dict[tuple[int, int], float] = {}
        for column, value in zip(node.columns, node.x, strict=True):
            if value <= FRACTIONAL:
                continue
            reps = sorted({groups.rep[i] for i in column})
            for a in range(len(reps)):
                for b in range(a + 1, len(reps)):
                    key = (reps[a], reps[b])
                    share[key] = share.get(key, 0.0) + float(value)
        candidates = [
            (f, key)
            for key, f in share.items()
            if FRACTIONAL < f < 1 - FRACTIONAL and key not in groups.apart
        ]
        if not candidates:
            candidates = [(f, key) for key, f in share.items() if key not in groups.apart]
        if not candidates:
            reps = sorted(groups.members)
            candidates = [
                (0.0, (a, b))
                for pos, a in enumerate(reps)
                for b in reps[pos + 1 :]
                if (a, b) not in groups.apart
            ]
        if not candidates:
            return None
        _, (a, b) = max(candidates)
        return [
            Rules((*rules.together, (a, b)), rules.apart),
            Rules(rules.together, (*rules.apart, (a, b))),
        ]


def branch_and_price(
    instance: McInstance,
    ctype: CoreType,
    seed_columns: list[frozenset[int]],
    deadline: float,
    cancel: CancellationToken,
    options: SolveOptions,
) -> BranchPriceResult:
    """Branch and price on the cores of ``ctype`` (all the instance's cores, every task
    allowed on them, none droppable: the caller checks) until a schedule, the proof that
    none exists, or ``deadline`` (``time.monotonic()``)."""
    return BranchAndPrice(instance, ctype, seed_columns, deadline, cancel, options).run()
