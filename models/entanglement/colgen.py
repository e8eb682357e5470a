"""Column generation over every simple path: new candidate paths, and a whole-instance bound.

The master LP (for the ``throughput`` objective; ``max_min`` maximises ``z <= t_r`` over the
servable requests instead, with the same columns, prices and bound) is the linear relaxation of the *path x width* formulation over every simple
path, with multiplicities: ``y[r, P, W] >= 0`` copies of path ``P`` of request ``r`` at width
``W`` (a routing is a multiset of such paths, so integer ``y`` without an upper bound is
exactly the problem; fidelity-infeasible paths are left out)::

    max  sum_r weight_r t_r
    s.t. t_r <= sum_{P, W} EXT(P, W) y[r, P, W]          (mu_r)
         sum_{r, P ∋ l, W} W y[r, P, W] <= channels_l     (pi_l)
         sum_{r, P ∋ v, W} u_v(P) W y[r, P, W] <= qubits_v   (sigma_v)
         0 <= t_r <= demand_r,  y >= 0

A column's reduced cost is ``mu_r EXT(P, W) - W (sum_{l in P} pi_l + sum_v u_v(P) sigma_v)``.
The pricing problem (:func:`price`) finds, per request and width, the path of largest reduced
cost by a best-first label search over walks with an admissible completion bound and
Pareto dominance; walks are allowed because a cycle only multiplies success probabilities
by factors <= 1 and adds non-negative costs, so the best walk's value is reached by the
simple path that skips its cycles (which is what is returned). The search is exact unless it
hits :data:`PRICING_LABEL_LIMIT`.

Whenever every request was priced exactly, weak duality gives a bound on the whole
instance (Lagrangian bound): every path of ``r`` uses ``W`` qubits at its source and at its
destination, so ``sum_{P, W} W y[r, P, W] <= cap_r = min(qubits_s, qubits_d)`` and

    OPT <= LP + sum_r cap_r * max(0, max_{P, W} reduced_cost(r, P, W) / W).

When no column has a positive reduced cost the bound is the LP optimum itself.
See ``docs/formulations/entanglement.md`` section 7.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from placement.models.entanglement.instance import EntanglementInstance
from placement.models.entanglement.paths import (
    MIN_WERNER_FIDELITY,
    binomial_tails,
    max_width,
    path_ext,
    servable_requests,
    werner_parameter,
)
from placement.solver.backends.base import RunStatus
from placement.solver.backends.highs import HighsModel
from placement.solver.cancel import CancellationToken

PRICING_LABEL_LIMIT = 50_000
"""Labels one pricing search (one request and width) may settle before it gives up; a search
that gives up leaves that iteration without a bound (its columns still count)."""
COLUMNS_PER_PRICING = 3
"""Paths one pricing search (one request and width) may add: the best and the next ones it
reaches (more columns per round give the integer model more to choose from)."""
REDUCED_COST_TOLERANCE = 1e-7
"""A column enters the master only with a reduced cost above this (pairs per slot)."""
BOUND_MARGIN = 1e-6
"""Relative margin added to the bound against the LP solver's tolerances."""


@dataclass
class ColumnGeneration:
    """What a run produced: the paths per request, the LP value and the best bound."""

    paths: list[list[tuple[int, ...]]]
    """Per request, every path that entered the master (the initial ones first)."""
    lp_value: float | None = None
    bound: float | None = None
    """The smallest Lagrangian bound over the exactly priced iterations (None if none)."""
    converged: bool = False
    """The last pricing found no improving column: ``bound`` is the LP optimum."""
    iterations: int = 0
    history: list[tuple[float, float, float | None]] = field(default_factory=list)
    """(seconds, LP value, Lagrangian bound of that iteration or None) per iteration."""
    prices: np.ndarray | None = None
    """The row prices at convergence (links, nodes, requests' EXT rows, ...)."""


class _Master:
    """The master LP in HiGHS, grown column by column."""

    def __init__(self, instance: EntanglementInstance) -> None:
        self.instance = instance
        # HiGHS's thread count is the process's (new_highs, HIGHS_THREADS).
        self.lp = HighsModel()
        inf = math.inf
        n_links, n_nodes, n_req = len(instance.links), len(instance.nodes), len(instance.requests)
        self.link_row = 0
        self.node_row = n_links
        self.ext_row = n_links + n_nodes
        lower = np.full(n_links + n_nodes + n_req, -inf)
        upper = np.concatenate(
            [
                [float(lk.channels) for lk in instance.links],
                [float(nd.qubits) for nd in instance.nodes],
                np.zeros(n_req),
            ]
        )
        self.lp.add_rows(lower, upper)
        fair = instance.objective == "max_min"
        for r, req in enumerate(instance.requests):
            ub = inf if req.demand is None else float(req.demand)
            self.lp.add_column(
                0.0 if fair else float(req.weight), 0.0, ub, [self.ext_row + r], [1.0]
            )
        if fair:
            # max z with z <= t_r for every servable request (rows after the ext rows).
            servable = servable_requests(instance)
            first = self.ext_row + n_req
            self.lp.add_rows(np.full(len(servable), -inf), np.zeros(len(servable)))
            for i, r in enumerate(servable):
                self.lp.set_coefficient(first + i, r, -1.0)
            self.lp.add_column(
                1.0, 0.0, inf, np.arange(first, first + len(servable)), np.ones(len(servable))
            )
        self.lp.maximize()
        self.columns = n_req + (1 if fair else 0)
        """Columns before the path columns (the t_r, and z)."""
        self.index: dict[tuple[int, tuple[int, ...], int], int] = {}
        """(request, path, width) -> column (the t_r come first)."""

    def add(self, r: int, nodes: tuple[int, ...], width: int, value: float) -> None:
        if (r, nodes, width) in self.index:
            return
        self.index[(r, nodes, width)] = self.columns + len(self.index)
        inst = self.instance
        idx = [self.ext_row + r]
        val = [-value]
        for u, v in zip(nodes, nodes[1:], strict=False):
            idx.append(self.link_row + inst.link_between(u, v))  # type: ignore[operator]
            val.append(float(width))
        for pos, v in enumerate(nodes):
            idx.append(self.node_row + v)
            val.append(float(width if pos in (0, len(nodes) - 1) else 2 * width))
        self.lp.add_column(0.0, 0.0, math.inf, idx, val)

    def solve(self, time_limit_s: float) -> tuple[float, np.ndarray] | None:
        """The LP value and the row prices, or None when the LP was not solved in time."""
        run = self.lp.run(max(0.01, time_limit_s))
        if run.status != RunStatus.OPTIMAL or run.objective is None or run.row_dual is None:
            return None
        # For a maximisation HiGHS reports the duals of binding <= rows as non-negative
        # prices: a column's reduced cost is its cost minus the priced use of the rows.
        return run.objective, np.maximum(0.0, run.row_dual)


def _split(
    instance: EntanglementInstance, prices: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The master's row prices as (per link, per node, per request's EXT row), in the order
    :class:`_Master` adds the rows (the fairness rows of ``max_min`` come after)."""
    n_links, n_nodes = len(instance.links), len(instance.nodes)
    ext = n_links + n_nodes
    return prices[:n_links], prices[n_links:ext], prices[ext : ext + len(instance.requests)]


def _dijkstra(graph: list[list[tuple[int, float]]], source: int, start: float) -> list[float]:
    dist = [math.inf] * len(graph)
    dist[source] = start
    heap = [(start, source)]
    while heap:
        d, u = heapq.heappop(heap)
        if d > dist[u]:
            continue
        for v, c in graph[u]:
            nd = d + c
            if nd < dist[v]:
                dist[v] = nd
                heapq.heappush(heap, (nd, v))
    return dist


class Pricer:
    """Exact pricing for one instance: completion bounds cached per destination and width."""

    def __init__(self, instance: EntanglementInstance) -> None:
        self.instance = instance
        self._gain: dict[tuple[int, int], list[list[float]]] = {}

    def _gains(self, d: int, width: int) -> list[list[float]]:
        """Per tail index i (0-based) and node u: the largest product of hop tails P(X >= i+1)
        and swap probabilities (u's included) over walks from u to d; 1 at d."""
        key = (d, width)
        if key not in self._gain:
            inst = self.instance
            out = []
            for i in range(width):
                # Reverse graph: an arc v -> u of cost -log(tail_l(i)) - log(q_u).
                rev: list[list[tuple[int, float]]] = [[] for _ in inst.nodes]
                for u, nbrs in enumerate(inst.neighbours):
                    q = inst.nodes[u].swap_success
                    for v, link in nbrs:
                        tail = binomial_tails(inst.links[link].success, width)[i]
                        if tail <= 0 or q <= 0:
                            continue
                        rev[v].append((u, -math.log(tail) - math.log(q)))
                dist = _dijkstra(rev, d, 0.0)
                out.append([math.exp(-x) if x < math.inf else 0.0 for x in dist])
            self._gain[key] = out
        return self._gain[key]

    def best(
        self,
        r: int,
        width: int,
        mu: float,
        link_price: np.ndarray,
        node_price: np.ndarray,
        floor: float,
        deadline: float = math.inf,
    ) -> tuple[float, tuple[int, ...] | None, bool]:
        """(reduced cost, path, exact) of the best path of request ``r`` at ``width``, among
        those whose reduced cost exceeds ``floor`` (None when there is none); ``exact`` is
        False when the label limit or the ``deadline`` (``time.monotonic()``) stopped the
        search."""
        found, exact = self.improving(r, width, mu, link_price, node_price, floor, deadline, 1)
        if not found:
            return floor, None, exact
        return found[0][0], found[0][1], exact

    def improving(
        self,
        r: int,
        width: int,
        mu: float,
        link_price: np.ndarray,
        node_price: np.ndarray,
        floor: float,
        deadline: float = math.inf,
        count: int = 1,
    ) -> tuple[list[tuple[float, tuple[int, ...]]], bool]:
        """Up to ``count`` distinct paths with reduced cost above ``floor``, the best first
        (the first is the optimum; the others are the next ones the dominance search reaches,
        not necessarily the next best), and whether the search was exact."""
        found: list[tuple[float, tuple[int, ...]]] = []
        for value, path in self._search(
            r, width, mu, link_price, node_price, floor, deadline, exhaustive=False
        ):
            if path is None:
                return found, False
            if all(path != p for _, p in found):
                found.append((value, path))
            if len(found) >= count:
                break
        return found, True

    def every_path_above(
        self,
        r: int,
        width: int,
        mu: float,
        link_price: np.ndarray,
        node_price: np.ndarray,
        floor: float,
        deadline: float = math.inf,
    ) -> list[tuple[int, ...]] | None:
        """Every simple path of request ``r`` whose reduced cost at ``width`` exceeds
        ``floor`` (no dominance: a dominated path may still be above the floor), or None when
        the label limit or the deadline stopped the enumeration."""
        out = []
        for _, path in self._search(
            r, width, mu, link_price, node_price, floor, deadline, exhaustive=True
        ):
            if path is None:
                return None
            out.append(path)
        return out

    def _search(
        self,
        r: int,
        width: int,
        mu: float,
        link_price: np.ndarray,
        node_price: np.ndarray,
        floor: float,
        deadline: float,
        exhaustive: bool,
    ) -> Iterator[tuple[float, tuple[int, ...] | None]]:
        """Paths of request ``r`` at ``width`` with reduced cost above ``floor``, best first,
        as (reduced cost, path); (floor, None) when a limit stopped the search.

        Not ``exhaustive``: a search over walks with Pareto dominance (only its first path is
        meant to be taken: the optimum). ``exhaustive``: over simple paths, no dominance."""
        inst = self.instance
        req = inst.requests[r]
        s, d = req.source, req.destination
        if inst.nodes[s].qubits < width or inst.nodes[d].qubits < width:
            return
        gains = self._gains(d, width)
        # Remaining cost per unit width from u (as an intermediate node) to d.
        fwd: list[list[tuple[int, float]]] = [[] for _ in inst.nodes]
        for u, nbrs in enumerate(inst.neighbours):
            for v, link in nbrs:
                fwd[v].append((u, link_price[link] + 2.0 * node_price[u]))
        rest = _dijkstra(fwd, d, float(node_price[d]))
        need = werner_parameter(req.min_fidelity) if req.min_fidelity > MIN_WERNER_FIDELITY else 0.0
        q_s = inst.nodes[s].swap_success
        tails = {
            link: binomial_tails(inst.links[link].success, width)
            for link in range(len(inst.links))
            if inst.links[link].channels >= width
        }

        def bound(u: int, amp: tuple[float, ...], cost: float) -> float:
            if u == d:
                return mu * sum(amp) - width * cost
            g = [gi[u] for gi in gains]
            if u == s:  # the source swaps nothing
                g = [x / q_s for x in g] if q_s > 0 else g
                left = rest[u] - 2.0 * node_price[u]
            else:
                left = rest[u]
            return mu * sum(a * x for a, x in zip(amp, g, strict=True)) - width * (cost + left)

        start_amp = (1.0,) * width
        start_cost = float(node_price[s])
        labels: list[list[tuple[tuple[float, ...], float, float]]] = [[] for _ in inst.nodes]
        heap = [(-bound(s, start_amp, start_cost), 0, s, start_amp, start_cost, 1.0, (s,))]
        tie = 0
        settled = 0
        while heap:
            neg, _, u, amp, cost, wer, walk = heapq.heappop(heap)
            if -neg <= floor:
                return
            if u == d:
                yield -neg, _skip_cycles(walk)
                continue
            settled += 1
            if settled > PRICING_LABEL_LIMIT or (
                settled % 256 == 0 and time.monotonic() >= deadline
            ):
                yield floor, None
                return
            if u != s and inst.nodes[u].qubits < 2 * width:
                continue
            q = 1.0 if u == s else inst.nodes[u].swap_success
            add_node = 0.0 if u == s else 2.0 * node_price[u]
            for v, link in inst.neighbours[u]:
                tail = tails.get(link)
                if tail is None or v == s or (exhaustive and v in walk):
                    continue
                wer2 = wer * werner_parameter(inst.links[link].fidelity)
                if wer2 < need - 1e-12:
                    continue
                amp2 = tuple(a * q * t for a, t in zip(amp, tail, strict=True))
                cost2 = cost + add_node + link_price[link]
                if v == d:
                    cost2 += node_price[d]
                if not exhaustive and _dominated(labels[v], amp2, cost2, wer2):
                    continue
                b = bound(v, amp2, cost2)
                if b <= floor:
                    continue
                if not exhaustive:
                    labels[v].append((amp2, cost2, wer2))
                tie += 1
                heapq.heappush(heap, (-b, tie, v, amp2, cost2, wer2, (*walk, v)))


def _dominated(
    front: list[tuple[tuple[float, ...], float, float]],
    amp: tuple[float, ...],
    cost: float,
    wer: float,
) -> bool:
    for a, c, w in front:
        if c <= cost and w >= wer and all(x >= y for x, y in zip(a, amp, strict=True)):
            return True
    return False


def _skip_cycles(walk: tuple[int, ...]) -> tuple[int, ...]:
    """The simple path that a walk becomes when every cycle is cut out."""
    out: list[int] = []
    where: dict[int, int] = {}
    for v in walk:
        if v in where:
            cut = where[v]
            for x in out[cut + 1 :]:
                del where[x]
            del out[cut + 1 :]
        else:
            where[v] = len(out)
            out.append(v)
    return tuple(out)


class _Generator:
    """The master and the pricer of one run, and the paths found so far."""

    def __init__(
        self, instance: EntanglementInstance, initial: list[list[tuple[int, ...]]]
    ) -> None:
        self.instance = instance
        self.master = _Master(instance)
        self.pricer = Pricer(instance)
        self.paths = [list(p) for p in initial]
        self.known = [set(p) for p in initial]
        for r, plist in enumerate(self.paths):
            for nodes in plist:
                self._add_path(r, nodes)
        self.caps = [
            min(instance.nodes[q.source].qubits, instance.nodes[q.destination].qubits)
            for q in instance.requests
        ]
        self.widest = max((lk.channels for lk in instance.links), default=0)

    def _add_path(self, r: int, nodes: tuple[int, ...]) -> int:
        if nodes not in self.known[r]:
            self.known[r].add(nodes)
            self.paths[r].append(nodes)
        added = 0
        for w in range(1, max_width(self.instance, nodes) + 1):
            if (r, nodes, w) not in self.master.index:
                self.master.add(r, nodes, w, path_ext(self.instance, nodes, w))
                added += 1
        return added

    def price(self, prices: np.ndarray, deadline: float) -> tuple[bool, float, int]:
        """One pricing round at the master's ``prices``: (exact, Lagrangian slack, columns
        added). The slack is sum_r cap_r max(0, best reduced cost / width)."""
        link_price, node_price, mu = _split(self.instance, prices)
        exact, slack, added = True, 0.0, 0
        for r in range(len(self.instance.requests)):
            if mu[r] <= REDUCED_COST_TOLERANCE:
                continue
            best_ratio = 0.0
            for width in range(1, min(self.caps[r], self.widest) + 1):
                if time.monotonic() >= deadline:
                    return False, slack, added
                found, ok = self.pricer.improving(
                    r,
                    width,
                    float(mu[r]),
                    link_price,
                    node_price,
                    REDUCED_COST_TOLERANCE,
                    deadline,
                    COLUMNS_PER_PRICING,
                )
                # A search cut short after its first path still found the optimum.
                exact = exact and (ok or bool(found))
                if found:
                    best_ratio = max(best_ratio, found[0][0] / width)
                for _, nodes in found:
                    added += self._add_path(r, nodes)
            slack += self.caps[r] * best_ratio
        return exact, slack, added


def generate_columns(
    instance: EntanglementInstance,
    initial: list[list[tuple[int, ...]]],
    time_limit_s: float,
    cancel: CancellationToken | None = None,
    max_iterations: int = 200,
) -> ColumnGeneration:
    """Column generation from the ``initial`` paths per request, within ``time_limit_s``."""
    started = time.monotonic()
    deadline = started + time_limit_s
    gen = _Generator(instance, initial)
    out = ColumnGeneration(gen.paths)

    def stopped() -> bool:
        return (cancel is not None and cancel.cancelled) or time.monotonic() >= deadline

    while out.iterations < max_iterations and not stopped():
        solved = gen.master.solve(deadline - time.monotonic())
        if solved is None:
            break
        value, prices = solved
        out.iterations += 1
        out.lp_value = value
        exact, slack, added = gen.price(prices, deadline)
        lagrange = (value + slack) * (1 + BOUND_MARGIN) if exact else None
        if lagrange is not None:
            out.bound = lagrange if out.bound is None else min(out.bound, lagrange)
        out.history.append((time.monotonic() - started, value, lagrange))
        if exact and added == 0:
            out.converged = True
            out.prices = prices
            break
    return out


def paths_that_could_improve(
    instance: EntanglementInstance,
    run: ColumnGeneration,
    value: float,
    deadline: float,
    why: list[str] | None = None,
) -> list[list[tuple[int, ...]]] | None:
    """Every simple path that a routing better than ``value`` could use, per request, or None
    when it cannot be told (column generation did not converge, or the enumeration hit its
    limits).

    At the converged prices every column has a reduced cost <= 0, and any routing y has
    objective <= bound + sum_j reduced_cost_j y_j (weak duality); so a routing above
    ``value`` uses only columns whose reduced cost exceeds ``value - bound``. These are
    enumerated per request and width (:meth:`Pricer.every_path_above`).

    ``why``, when given, receives the reason when the answer is None.
    """
    why = why if why is not None else []
    if not run.converged or run.prices is None or run.bound is None:
        why.append("column generation did not converge, so its prices exclude no path")
        return None
    link_price, node_price, mu = _split(instance, run.prices)
    floor = min(0.0, value - run.bound) - REDUCED_COST_TOLERANCE
    pricer = Pricer(instance)
    widest = max((lk.channels for lk in instance.links), default=0)
    out: list[list[tuple[int, ...]]] = []
    for r, req in enumerate(instance.requests):
        cap = min(instance.nodes[req.source].qubits, instance.nodes[req.destination].qubits)
        found: dict[tuple[int, ...], None] = {}
        for width in range(1, min(cap, widest) + 1):
            paths = pricer.every_path_above(
                r, width, float(mu[r]), link_price, node_price, floor, deadline
            )
            if paths is None:
                why.append(
                    f"request {req.name}'s paths at width {width} with a reduced cost above "
                    f"{floor:.4g} (the proved value minus column generation's bound) are more "
                    f"than the enumeration reaches ({PRICING_LABEL_LIMIT} labels, or its time "
                    "share): any of them could take part in a better routing"
                )
                return None
            found.update(dict.fromkeys(paths))
        out.append(list(found))
    return out
