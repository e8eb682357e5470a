"""Small entanglement instances whose optima are computed by hand (shared by the tests)."""

from __future__ import annotations

from placement.models.entanglement import (
    EntanglementInstance,
    QuantumLink,
    QuantumNode,
    Request,
)


def chain() -> EntanglementInstance:
    """A - B - C, 3 channels per link (p = 0.6, 0.5), swap 0.9 at B, one request A -> C.

    Width 3 is best: P(Bin(3,.6) >= i) = .936, .648, .216 and P(Bin(3,.5) >= i) = .875, .5,
    .125, so E[min] = .819 + .324 + .027 = 1.17 and EXT = 0.9 x 1.17 = 1.053.
    """
    return EntanglementInstance(
        [QuantumNode("A", 4), QuantumNode("B", 8, 0.9), QuantumNode("C", 4)],
        [QuantumLink(0, 1, 3, 0.6), QuantumLink(1, 2, 3, 0.5)],
        [Request("r", 0, 2)],
        name="chain",
    )


def hub(objective: str = "throughput") -> EntanglementInstance:
    """Two requests into B; one channel per link, swaps perfect.

    r1 (A -> B) has A-H-B (0.9 x 0.9 = .81) and A-X-B (0.8 x 0.8 = .64) but A holds one
    qubit, so one path; r2 (C -> B) has only C-H-B (.81); H-B has one channel. The best is r1
    on A-X-B and r2 on C-H-B: 1.45 (min .64). Q-CAST's greedy takes A-H-B for r1 first (the
    tie with r2 goes to the first request) and ends at .81.
    """
    names = ["A", "B", "H", "C", "X"]
    qubits = [1, 2, 2, 1, 2]
    return EntanglementInstance(
        [QuantumNode(n, q) for n, q in zip(names, qubits, strict=True)],
        [
            QuantumLink(0, 2, 1, 0.9),
            QuantumLink(2, 1, 1, 0.9),
            QuantumLink(0, 4, 1, 0.8),
            QuantumLink(4, 1, 1, 0.8),
            QuantumLink(3, 2, 1, 0.9),
        ],
        [Request("r1", 0, 1), Request("r2", 3, 1)],
        objective=objective,
        name=f"hub-{objective}",
    )


def hub_with_unservable() -> EntanglementInstance:
    """The hub under max-min fairness plus a request to a node no link reaches: fairness is
    taken over the requests some routing can serve, so the optimum stays (.64, 1.45)."""
    instance = hub("max_min")
    instance.nodes.append(QuantumNode("Z", 4))
    instance.requests.append(Request("r3", 3, 5))
    instance.name = "hub-unservable"
    return instance


def fidelity_detour(min_fidelity: float = 0.9) -> EntanglementInstance:
    """Triangle A, B, C: A-C direct has fidelity 0.8; A-B and B-C have 0.99 (all p = 0.9, one
    channel); swap 0.9 at B. At threshold 0.9 only A-B-C serves A -> C: Werner w = (4 x .99
    - 1) / 3, fidelity (1 + 3 w^2) / 4 = 0.98013..., EXT 0.9 x 0.9 x 0.9 = .729."""
    return EntanglementInstance(
        [QuantumNode("A", 1), QuantumNode("B", 2, 0.9), QuantumNode("C", 1)],
        [
            QuantumLink(0, 2, 1, 0.9, 0.8),
            QuantumLink(0, 1, 1, 0.9, 0.99),
            QuantumLink(1, 2, 1, 0.9, 0.99),
        ],
        [Request("r", 0, 2, min_fidelity=min_fidelity)],
        name=f"fidelity-{min_fidelity}",
    )


def demand_cap() -> EntanglementInstance:
    """One link A-B, 4 channels, p = 0.9; the request wants 0.5 pairs per slot: optimum 0.5."""
    return EntanglementInstance(
        [QuantumNode("A", 4), QuantumNode("B", 4)],
        [QuantumLink(0, 1, 4, 0.9)],
        [Request("r", 0, 1, demand=0.5)],
        name="demand",
    )


def weighted() -> EntanglementInstance:
    """One link A-B, 2 channels, p = 0.5, two requests A -> B of weight 1 and 2: both
    channels to the heavier one, 2 x (2 x 0.5) = 2.0."""
    return EntanglementInstance(
        [QuantumNode("A", 2), QuantumNode("B", 2)],
        [QuantumLink(0, 1, 2, 0.5)],
        [Request("light", 0, 1, weight=1.0), Request("heavy", 0, 1, weight=2.0)],
        name="weighted",
    )


CASES: dict[str, tuple[EntanglementInstance, tuple[float, ...]]] = {
    "chain": (chain(), (1.053,)),
    "hub": (hub(), (1.45,)),
    "hub_max_min": (hub("max_min"), (0.64, 1.45)),
    "hub_max_min_unservable": (hub_with_unservable(), (0.64, 1.45)),
    "fidelity_detour": (fidelity_detour(), (0.729,)),
    "fidelity_unreachable": (fidelity_detour(0.99), (0.0,)),
    "demand_cap": (demand_cap(), (0.5,)),
    "weighted": (weighted(), (2.0,)),
}
"""name -> (instance, optimum of each objective tier)."""
