"""What the CP-SAT and MILP encodings share: the candidate-path x width model.

For each request r, the candidate paths P_r (:func:`.paths.candidate_paths`, plus the paths
of the incumbent), and for each path p and width w in 1..W_p one binary x[r,p,w] with the
precomputed value EXT(p, w): choosing at most one width per path makes EXT, which is concave
and non-linear in w, linear in the binaries. Capacities are linear in the binaries: link l
carries sum w x[r,p,w] over paths through l; node v holds one qubit per channel at a path's
end and two at an intermediate node. See ``docs/formulations/entanglement.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from placement.models.entanglement.flow_lp import flow_bound
from placement.models.entanglement.instance import (
    EntanglementInstance,
    EntanglementSolution,
    RoutedPath,
)
from placement.models.entanglement.paths import (
    candidate_paths,
    max_width,
    network_graph,
    path_ext,
    path_links,
)


@dataclass(frozen=True)
class Item:
    """One binary of the model: request ``request`` on path ``nodes`` at ``width``."""

    request: int
    group: int
    nodes: tuple[int, ...]
    width: int
    ext: float


@dataclass
class CandidateModel:
    """The candidate paths and the (request, path, width) items of the exact encodings."""

    instance: EntanglementInstance
    items: list[Item] = field(default_factory=list)
    groups: list[list[int]] = field(default_factory=list)
    """Per candidate path, its items (one per width); at most one is chosen."""
    groups_of_request: list[list[int]] = field(default_factory=list)
    link_rows: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    """Link -> (item, channels used)."""
    node_rows: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    """Node -> (item, qubits used)."""
    complete: bool = True
    """Every usable simple path of every request is a candidate: a proof covers the whole
    instance."""

    @classmethod
    def build(
        cls, instance: EntanglementInstance, incumbent: EntanglementSolution | None = None
    ) -> CandidateModel:
        """The model over the candidate paths and the incumbent's paths."""
        model = cls(instance)
        graph = network_graph(instance)
        extra: dict[int, list[tuple[int, ...]]] = {}
        for p in incumbent.paths if incumbent else ():
            extra.setdefault(p.request, []).append(p.nodes)
        for r in range(len(instance.requests)):
            paths, complete = candidate_paths(instance, r, graph)
            model.complete = model.complete and complete
            seen = set(paths)
            for nodes in extra.get(r, []):
                if nodes not in seen:
                    seen.add(nodes)
                    paths.append(nodes)
            groups: list[int] = []
            for nodes in paths:
                group = len(model.groups)
                members: list[int] = []
                links = path_links(instance, nodes)
                for width in range(1, max_width(instance, nodes) + 1):
                    i = len(model.items)
                    model.items.append(
                        Item(r, group, nodes, width, path_ext(instance, nodes, width))
                    )
                    members.append(i)
                    for link in links:
                        model.link_rows.setdefault(link, []).append((i, width))
                    for pos, v in enumerate(nodes):
                        use = width if pos in (0, len(nodes) - 1) else 2 * width
                        model.node_rows.setdefault(v, []).append((i, use))
                if members:
                    model.groups.append(members)
                    groups.append(group)
            model.groups_of_request.append(groups)
        return model

    def items_of_request(self, r: int) -> list[int]:
        """Every item of request ``r``."""
        return [i for g in self.groups_of_request[r] for i in self.groups[g]]

    def decode(self, chosen: list[bool]) -> EntanglementSolution:
        """The routing of the chosen items."""
        paths = [
            RoutedPath(it.request, it.nodes, it.width)
            for it, on in zip(self.items, chosen, strict=True)
            if on
        ]
        return EntanglementSolution(tuple(paths))

    def encode(self, solution: EntanglementSolution | None) -> list[int]:
        """0/1 per item for a solution whose paths are candidates (others are left out)."""
        out = [0] * len(self.items)
        if solution is None:
            return out
        where = {(it.request, it.nodes, it.width): i for i, it in enumerate(self.items)}
        for p in solution.paths:
            i = where.get((p.request, p.nodes, p.width))
            if i is not None:
                out[i] = 1
        return out

    def counted(self, chosen: list[int], r: int) -> float:
        """Request r's throughput that counts (EXT capped by demand) for 0/1 values."""
        total = sum(self.items[i].ext for i in self.items_of_request(r) if chosen[i])
        demand = self.instance.requests[r].demand
        return total if demand is None else min(total, demand)

    def describe(self) -> str:
        """One line: the model's size and whether it covers every path."""
        scope = "every usable path" if self.complete else "candidate paths only"
        return f"{len(self.groups)} paths x widths = {len(self.items)} binaries ({scope})"


EXACT_SHARE = 0.8
"""Share of the time left that the candidate model gets when its proof would not cover the
whole instance; the rest goes to the flow-LP bound."""


FLOW_LP_COLUMNS_PER_SECOND = 5000
"""A cautious rate at which the flow LP is built and handed to HiGHS (measured: about
12,000 columns per second on the shared 2-core machine)."""


def whole_instance_bound(model: CandidateModel, ctx: Any) -> float | None:
    """A bound on the primary objective of the whole instance when the candidate model does
    not cover it: the expected-pair flow LP (:func:`.flow_lp.flow_bound`), in the time left."""
    left = ctx.time_left()
    instance = model.instance
    columns = 2 * len(instance.links) * len(instance.requests)
    if model.complete or ctx.cancel.cancelled or left < 0.2 + columns / FLOW_LP_COLUMNS_PER_SECOND:
        # Building the LP (in PuLP) is not covered by the solver's time limit: skip it when
        # it alone would run past the deadline.
        return None
    return flow_bound(model.instance, ctx.options, left, ctx.cancel)


def nothing_to_route(model: CandidateModel, ctx: Any) -> Any:
    """The outcome when no request has a usable path at all: the empty routing, proved
    optimal (every objective tier is 0 for every routing). None when there is a choice."""
    from placement.solver.family import ExactOutcome
    from placement.solver.result import StopReason

    if model.items or not model.complete:
        return None
    empty = EntanglementSolution()
    ctx.report(empty, "exact")
    tiers = ["min_throughput", "weighted_throughput"]
    if model.instance.objective != "max_min":
        tiers = tiers[1:]
    return ExactOutcome(
        stop_reason=StopReason.PROVEN,
        bound=0.0,
        proven_optimal=True,
        proven_solution=empty,
        message="no request has a usable path",
        tier_bounds=dict.fromkeys(tiers, 0.0),
    )
