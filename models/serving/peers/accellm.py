"""AcceLLM's paired instances (Bournias, Cavigelli, Zacharopoulos, "AcceLLM: Accelerating
LLM Inference using Redundancy for Load Balancing and Data Locality", arXiv 2411.05555,
2024): instances in pairs that keep every request's KV cache on both members (replicated
layer by layer as the prefill runs, so no transfer waits), so either member can decode it;
a member that starts a prefill hands its running decodes to the other, which is how a pair
keeps decodes from stalling behind prefills and balances load between roles.

Here: the vLLM-style cluster of identical mixed instances (:func:`.vllm.homogeneous_cluster`)
paired in order (an odd one out stays alone); the simulator does the hand-off and the double
KV reservation (:meth:`..replay.Simulation.hand_off`); :class:`PairRouter` sends a prompt
to the pair with the fewest requests in flight and, in it, to the member with the least
prefill work queued. Every request is admitted.
"""

from __future__ import annotations

from typing import Any

from placement.models.serving.instance import ServingInstance, ServingSolution
from placement.models.serving.replay import SimInstance, build_instances
from placement.models.serving.router import predicted_ttft_ms


def paired_instances(instance: ServingInstance, cluster: ServingSolution) -> list[SimInstance]:
    """The cluster's instances, paired in order (0 with 1, 2 with 3, ...)."""
    machines = build_instances(instance, cluster)
    for a in range(0, len(machines) - 1, 2):
        machines[a].partner, machines[a + 1].partner = a + 1, a
    return machines


class PairRouter:
    """The pair with the fewest requests in flight, then its member with the earliest
    predicted first token; every request admitted (a request whose KV cache can never fit is
    turned away)."""

    def __init__(self, instances: list[SimInstance]) -> None:
        self.instances = instances

    def admit(self, req: Any, sim: Any) -> int | None:
        groups: dict[int, list[SimInstance]] = {}
        for m in self.instances:
            groups.setdefault(min(m.index, m.partner) if m.partner >= 0 else m.index, []).append(m)
        pair = min(groups.values(), key=lambda g: (sum(m.outstanding for m in g), g[0].index))
        member = min(pair, key=lambda m: (predicted_ttft_ms(m, req, sim.now), m.index))
        tokens = req.input_tokens + req.output_tokens
        if tokens * member.profile.kv_bytes_per_token > member.kv_capacity_bytes:
            return None
        return member.index

    def pick_decode(self, req: Any, sim: Any) -> int:  # pragma: no cover (mixed only)
        raise AssertionError("AcceLLM pairs are mixed instances")
