"""Our configuration's router (:class:`ConfiguredRouter`) and what routers read of an
instance: its requests in flight, its predicted first token, its decode room. A router has
``admit(request, sim) -> instance index or None`` (None: rejected) and, for requests prefilled
on a prefill instance, ``pick_decode(request, sim) -> instance index`` (on L4 stages also
``pick_downstream(request, sim, source) -> instance index``). Instances are read
duck-typed (``kind.role``, ``outstanding``, ``kv_capacity_bytes``,
``profile.kv_bytes_per_token``). The peers' routers are in :mod:`.sim.routers`."""

from __future__ import annotations

from typing import Any

from placement.models.serving.instance import (
    DECODE,
    PREFILL,
    ServingInstance,
    ServingSolution,
    kinds,
)


def fits_kv(inst: Any, req: Any, role: str) -> bool:
    """Whether the request's KV cache (prompt only on a prefill instance) can ever fit."""
    tokens = req.input_tokens + (req.output_tokens if role != PREFILL else 0)
    return tokens * inst.profile.kv_bytes_per_token <= inst.kv_capacity_bytes


def least_outstanding(candidates: list[Any]) -> Any:
    """The instance with the fewest requests in flight (the lowest index on ties)."""
    return min(candidates, key=lambda i: (i.outstanding, i.index))


class SmoothWeighted:
    """Smooth weighted round robin (nginx's): picks in proportion to the weights, evenly
    spread."""

    def __init__(self, weights: dict[int, int]) -> None:
        self.weights = {k: w for k, w in weights.items() if w > 0}
        self.current = dict.fromkeys(self.weights, 0)

    def pick(self) -> int | None:
        if not self.weights:
            return None
        total = sum(self.weights.values())
        for k, w in self.weights.items():
            self.current[k] += w
        best = max(self.current, key=lambda k: (self.current[k], -k))
        self.current[best] -= total
        return best


def predicted_ttft_ms(inst: Any, req: Any, now: float) -> float:
    """The prompt's first token if it joined ``inst`` now: the prefill of every prompt
    waiting there, the iteration under way (at most its whole time), and its own."""
    queued = sum(inst.profile.prefill_ms(r.input_tokens) for r in inst.waiting)
    running = max(0.0, 1000 * (inst.busy_until - now)) if inst.busy else 0.0
    return queued + running + inst.profile.prefill_ms(req.input_tokens)


def decode_room(inst: Any, tpot_ms: float) -> int:
    """Sequences the instance can decode at once within the step target (the TPOT target, less
    the prefill share on a mixed instance) by its profile's step time at zero context."""
    target = tpot_ms * (1 - inst.kind.prefill_share)
    p = inst.profile
    if p.decode_per_sequence_ms <= 0:
        return 1 << 30
    return max(1, int((target - p.decode_base_ms) / p.decode_per_sequence_ms))


def decode_load(inst: Any) -> int:
    """Sequences decoding or waiting to decode on the instance."""
    return len(inst.running) + len(inst.moved)


class ConfiguredRouter:
    """Our configuration's router: class ``c`` is admitted at the share ``served_c /
    lambda_c`` of its arrivals (a deterministic credit, so an overloaded cluster turns away
    what it cannot serve within the targets instead of queueing it), sent to a deployment in
    proportion to the routes' rates, and within it to the instance with the fewest requests
    in flight. A request whose predicted first token (:func:`predicted_ttft_ms`) would miss
    the TTFT target there goes to the class's instance with the earliest prediction, and is
    turned away when that misses too, or when every instance that could decode it already
    holds as many sequences as its step target allows (:func:`decode_room`): bursts, since
    the fluid model plans for the mean rate."""

    def __init__(
        self, instance: ServingInstance, solution: ServingSolution, instances: list[Any]
    ) -> None:
        ks = kinds(instance)
        self.by_deployment: dict[int, list[Any]] = {}
        start = 0
        for i, d in enumerate(solution.deployments):
            self.by_deployment[i] = instances[start : start + d.instances]
            start += d.instances
        first: dict[int, dict[int, int]] = {}
        second: dict[int, dict[int, int]] = {}
        for r in solution.routes:
            role = ks[solution.deployments[r.deployment].kind].role
            table = second if role == DECODE else first
            table.setdefault(r.cls, {})[r.deployment] = r.rate_milli
        self.first = {c: SmoothWeighted(w) for c, w in first.items()}
        self.second = {c: SmoothWeighted(w) for c, w in second.items()}
        rates = instance.class_rates_milli
        self.share = {
            c: min(1.0, sum(w.values()) / rates[c]) if rates[c] else 0.0 for c, w in first.items()
        }
        self.credit: dict[int, float] = {}
        self.ttft_ms = instance.slo.ttft_ms
        self.tpot_ms = instance.slo.tpot_ms

    def admit(self, req: Any, sim: Any) -> int | None:
        share = self.share.get(req.cls, 0.0)
        credit = self.credit.get(req.cls, 0.0) + share
        if credit < 1 - 1e-9:
            self.credit[req.cls] = credit
            return None
        self.credit[req.cls] = credit - 1
        dep = self.first[req.cls].pick()
        if dep is None:
            return None
        decoders = [
            i
            for table in (self.first, self.second)
            for d in (table[req.cls].weights if req.cls in table else ())
            for i in self.by_deployment[d]
            if i.kind.role != PREFILL
        ]
        if decoders and all(decode_load(i) >= decode_room(i, self.tpot_ms) for i in decoders):
            return None
        inst = least_outstanding(self.by_deployment[dep])
        if predicted_ttft_ms(inst, req, sim.now) > self.ttft_ms:
            others = [i for d in self.first[req.cls].weights for i in self.by_deployment[d]]
            inst = min(others, key=lambda i: (predicted_ttft_ms(i, req, sim.now), i.index))
            if predicted_ttft_ms(inst, req, sim.now) > self.ttft_ms:
                return None
        return inst.index if fits_kv(inst, req, inst.kind.role) else None

    def pick_decode(self, req: Any, sim: Any) -> int:
        dep = self.second[req.cls].pick()
        assert dep is not None  # the checker's rule: what is prefilled is decoded
        return least_outstanding(self.by_deployment[dep]).index
