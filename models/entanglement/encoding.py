"""What the CP-SAT and MILP encodings share: the candidate-path x width model.

For each request r, the candidate paths P_r (:func:`.paths.candidate_paths`, plus the paths
of the incumbent), and for each path p and width w in 1..W_p one binary x[r,p,w] with the
precomputed value EXT(p, w): choosing at most one width per path makes EXT, which is concave
and non-linear in w, linear in the binaries. Capacities are linear in the binaries: link l
carries sum w x[r,p,w] over paths through l; node v holds one qubit per channel at a path's
end and two at an intermediate node. See ``docs/formulations/entanglement.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from placement.models.entanglement.colgen import (
    ColumnGeneration,
    generate_columns,
    paths_that_could_improve,
)
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
from placement.solver.family import ExactOutcome
from placement.solver.result import StopReason


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

    bound: float | None = None
    """A bound on the primary objective of the whole instance when the candidates do not
    cover it: column generation's (:mod:`.colgen`), or None."""
    generation: str = ""
    """One line on what column generation did (empty when it did not run)."""
    run: ColumnGeneration | None = None
    open_because: str = ""
    """Why the last :meth:`closure` could not tell whether other paths do better (empty
    when it could)."""
    """Column generation's run (its prices serve :meth:`closure`)."""

    @classmethod
    def build(
        cls,
        instance: EntanglementInstance,
        incumbent: EntanglementSolution | None = None,
        generate_s: float = 0.0,
        cancel: Any = None,
    ) -> CandidateModel:
        """The model over the candidate paths and the incumbent's paths; when they are not
        every usable path and ``generate_s`` > 0, also the paths column generation finds in
        that time, and its bound on the whole instance."""
        model = cls(instance)
        graph = network_graph(instance)
        per_request: list[list[tuple[int, ...]]] = []
        for r in range(len(instance.requests)):
            paths, complete = candidate_paths(instance, r, graph)
            model.complete = model.complete and complete
            per_request.append(paths)
        for p in incumbent.paths if incumbent else ():
            if p.nodes not in per_request[p.request]:
                per_request[p.request].append(p.nodes)
        if not model.complete and generate_s > 0:
            run = generate_columns(instance, per_request, generate_s, cancel)
            model.run = run
            model.bound = run.bound
            found = sum(len(g) for g in run.paths) - sum(len(g) for g in per_request)
            model.generation = (
                f"column generation: {found} paths added in {run.iterations} LP rounds, "
                + ("converged" if run.converged else "stopped before convergence")
            )
            per_request = run.paths
        model._add_paths(per_request)
        return model

    def _add_paths(self, per_request: list[list[tuple[int, ...]]]) -> None:
        """One group of items (one per width) per path, with their capacity rows."""
        instance = self.instance
        for r, paths in enumerate(per_request):
            groups: list[int] = []
            for nodes in paths:
                group = len(self.groups)
                members: list[int] = []
                links = path_links(instance, nodes)
                for width in range(1, max_width(instance, nodes) + 1):
                    i = len(self.items)
                    self.items.append(
                        Item(r, group, nodes, width, path_ext(instance, nodes, width))
                    )
                    members.append(i)
                    for link in links:
                        self.link_rows.setdefault(link, []).append((i, width))
                    for pos, v in enumerate(nodes):
                        use = width if pos in (0, len(nodes) - 1) else 2 * width
                        self.node_rows.setdefault(v, []).append((i, use))
                if members:
                    self.groups.append(members)
                    groups.append(group)
            self.groups_of_request.append(groups)

    @classmethod
    def for_exact_phase(cls, instance: EntanglementInstance, ctx: Any) -> CandidateModel:
        """The model an exact encoding solves: column generation gets
        :data:`GENERATION_SHARE` of the time left."""
        return cls.build(instance, ctx.incumbent(), GENERATION_SHARE * ctx.time_left(), ctx.cancel)

    def paths(self) -> list[list[tuple[int, ...]]]:
        """The model's paths per request."""
        return [
            [self.items[self.groups[g][0]].nodes for g in groups]
            for groups in self.groups_of_request
        ]

    def closure(
        self, value: float, deadline: float, max_new: int = 1000
    ) -> tuple[CandidateModel | None, int] | None:
        """After the model was proved optimal at ``value``: whether a routing over other
        paths could do better (:func:`.colgen.paths_that_could_improve`).

        None: it cannot be told. ``(None, 0)``: no path outside the model can take part in a
        better routing, so ``value`` is optimal for the whole instance. ``(model, n)``: the
        model extended by the ``n`` paths that could, to be solved again (None as well when
        there are more than ``max_new``: the extended model would be too large to prove)."""
        self.open_because = ""
        if self.run is None:
            self.open_because = "column generation did not run"
            return None
        if self.instance.objective != "throughput":
            self.open_because = "paths outside the model are excluded for objective throughput only"
            return None
        why: list[str] = []
        could = paths_that_could_improve(self.instance, self.run, value, deadline, why)
        if could is None:
            self.open_because = "; ".join(why)
            return None
        have = self.paths()
        new = [[p for p in plist if p not in set(have[r])] for r, plist in enumerate(could)]
        added = sum(map(len, new))
        if added == 0:
            return None, 0
        if added > max_new:
            self.open_because = (
                f"{added} paths outside the model have a reduced cost above "
                f"{min(0.0, value - self.run.bound):.4g} (the proved value minus column "
                f"generation's bound), so they could take part in a better routing: more than "
                f"the {max_new} the model may be extended by"
            )
            return None
        bigger = CandidateModel(
            self.instance,
            complete=False,
            bound=self.bound,
            generation=f"{self.generation}; {added} paths added that could do better",
            run=self.run,
        )
        bigger._add_paths([h + n for h, n in zip(have, new, strict=True)])
        return bigger, added

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
        line = f"{len(self.groups)} paths x widths = {len(self.items)} binaries ({scope})"
        return f"{line}; {self.generation}" if self.generation else line


GENERATION_SHARE = 0.25
"""Share of the exact phase's time that column generation may take when the candidate paths
are not every usable path (on Q-CAST's setting it converges in 0.3-0.9 s)."""


def residual_instance(
    instance: EntanglementInstance, routing: EntanglementSolution, freed: list[int]
) -> tuple[list[RoutedPath], EntanglementInstance, EntanglementSolution]:
    """The ``routing``'s paths of the other requests (kept), the network with the channels
    and qubits they leave, holding only the ``freed`` requests (request i of the sub-instance
    is ``freed[i]``), and the freed requests' paths in that sub-instance."""
    kept = [p for p in routing.paths if p.request not in freed]
    channels = [lk.channels for lk in instance.links]
    qubits = [n.qubits for n in instance.nodes]
    for p in kept:
        for link in path_links(instance, p.nodes):
            channels[link] -= p.width
        for pos, v in enumerate(p.nodes):
            qubits[v] -= p.width if pos in (0, len(p.nodes) - 1) else 2 * p.width
    sub = EntanglementInstance(
        [replace(n, qubits=q) for n, q in zip(instance.nodes, qubits, strict=True)],
        [replace(lk, channels=c) for lk, c in zip(instance.links, channels, strict=True)],
        [instance.requests[r] for r in freed],
        candidate_paths=instance.candidate_paths,
        name=f"{instance.name} (residual)",
    )
    mine = EntanglementSolution(
        tuple(
            RoutedPath(freed.index(p.request), p.nodes, p.width)
            for p in routing.paths
            if p.request in freed
        )
    )
    return kept, sub, mine


def nothing_to_route(model: CandidateModel, ctx: Any) -> Any:
    """The outcome when no request has a usable path at all: the empty routing, proved
    optimal (every objective tier is 0 for every routing). None when there is a choice."""
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
