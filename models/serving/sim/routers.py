"""The peers' routers in the simulator: round robin and least outstanding over identical mixed
instances (vLLM-style), Splitwise's JSQ over two pools, and a peer's router with our admission
added (:class:`Admitting`, for comparison). Our configuration's router and the predictions
routers read are :mod:`..router`."""

from __future__ import annotations

from typing import Any

from placement.models.serving.instance import DECODE, MIXED, PREFILL
from placement.models.serving.router import (
    decode_load,
    decode_room,
    fits_kv,
    least_outstanding,
    predicted_ttft_ms,
)


class RoundRobinRouter:
    """Every request admitted, sent to the mixed instances in turn (the usual vLLM-style
    deployment behind a round-robin load balancer); a request whose KV cache can never fit
    is rejected."""

    def __init__(self, instances: list[Any]) -> None:
        self.instances = [i for i in instances if i.kind.role == MIXED]
        self.next = 0

    def admit(self, req: Any, sim: Any) -> int | None:
        if not self.instances:
            return None
        inst = self.instances[self.next % len(self.instances)]
        self.next += 1
        return inst.index if fits_kv(inst, req, MIXED) else None

    def pick_decode(self, req: Any, sim: Any) -> int:  # pragma: no cover (mixed only)
        raise AssertionError("round robin serves mixed instances only")


class LeastOutstandingRouter(RoundRobinRouter):
    """Every request admitted, sent to the mixed instance with the fewest requests in flight
    (vLLM production-stack's and most gateways' least-request policy)."""

    def admit(self, req: Any, sim: Any) -> int | None:
        if not self.instances:
            return None
        inst = least_outstanding(self.instances)
        return inst.index if fits_kv(inst, req, MIXED) else None


class PoolRouter:
    """Splitwise's cluster-level scheduler over a prompt pool and a token pool: every request
    admitted; its prompt to the prompt instance with the fewest requests in flight (JSQ), its
    decode to the token instance with the fewest (Patel et al., ISCA 2024, section 4.2)."""

    def __init__(self, instances: list[Any]) -> None:
        self.prefill = [i for i in instances if i.kind.role == PREFILL]
        self.decode = [i for i in instances if i.kind.role == DECODE]

    def admit(self, req: Any, sim: Any) -> int | None:
        if not self.prefill:
            return None
        inst = least_outstanding(self.prefill)
        fits = any(fits_kv(d, req, DECODE) for d in self.decode)
        return inst.index if fits and fits_kv(inst, req, PREFILL) else None

    def pick_decode(self, req: Any, sim: Any) -> int:
        return least_outstanding(self.decode).index


class Admitting:
    """A peer's router with our admission added (for comparison only, not the peer as
    published): a request is turned away when the instance the peer picks would give it its
    first token after the TTFT target (:func:`predicted_ttft_ms`), or when that instance
    (mixed) or every decode instance (split pools) already holds as many sequences as its
    step target allows (:func:`decode_room`)."""

    def __init__(self, router: Any, ttft_ms: float, tpot_ms: float, instances: list[Any]) -> None:
        self.router = router
        self.ttft_ms = ttft_ms
        self.tpot_ms = tpot_ms
        self.decoders = [i for i in instances if i.kind.role != PREFILL]

    def admit(self, req: Any, sim: Any) -> int | None:
        target = self.router.admit(req, sim)
        if target is None:
            return None
        inst = sim.instances[target]
        if predicted_ttft_ms(inst, req, sim.now) > self.ttft_ms:
            return None
        pool = [inst] if inst.kind.role == MIXED else self.decoders
        if pool and all(decode_load(i) >= decode_room(i, self.tpot_ms) for i in pool):
            return None
        return target

    def pick_decode(self, req: Any, sim: Any) -> int:
        return self.router.pick_decode(req, sim)
