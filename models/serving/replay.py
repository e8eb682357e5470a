"""The request-level discrete-event simulator of a serving configuration (a heapq event loop).

Each deployment's instances run iterations back to back, vLLM-style continuous batching:

* a **mixed** instance runs a prefill iteration whenever prompts wait and their KV cache fits
  (prompts FIFO, up to ``MAX_BATCH_TOKENS`` tokens, at least one), else a decode step over its
  running sequences (prefill first, as vLLM's default scheduler without chunked prefill);
* a **prefill** instance runs prefill iterations; at the end of one, each request has its first
  token and moves to a decode instance (the KV transfer takes no time: a modelling choice,
  Splitwise overlaps it with the prefill layer by layer);
* a **decode** instance admits moved requests while their KV cache fits and runs decode steps;
* a mixed instance of an **L4 stage** (:mod:`..peers.l4`, ``stage_limit`` > 0) hands each
  request whose context grows past its stage's limit to an instance of the next stage (the
  router's ``pick_downstream``): the request stops decoding, waits there until its KV cache
  fits, and its cache (``context * kv_bytes_per_token`` bytes) is then copied at
  ``MIGRATION_BYTES_PER_S``; both instances hold its reservation during the copy, and the
  source frees it when the copy ends (a modelling choice: L4's migration is a KV transfer
  between instances; no recomputation, no overlap with the decode).

A request's whole KV cache (``(input + output) * kv_bytes_per_token``) is reserved when it is
admitted and freed when it finishes, so the cache is never over-committed (no preemption);
at most ``MAX_SEQS`` sequences run on one instance (vLLM's ``max_num_seqs`` default, 256).
Times: a prefill iteration takes the sum of its prompts' ``prefill_ms`` (prefill is compute
bound: in Splitwise's measurements 8 prompts of 512 tokens take 767 ms, 8 x 94 ms alone), a
decode step ``decode_step_ms(batch, context tokens)`` from the profile.

The router decides which requests are admitted and where they go (:mod:`.router` for our
configuration, :mod:`.sim.routers` and :mod:`.peers` for the others). The replay records, per
request, where it ran and when its first and last tokens came, and per instance every KV
reservation, for the independent checker (:mod:`.sim.check_replay`).

The replay is the family's own (``placement plot`` draws our configuration's latency
distributions from it); the peers' routers and the replay's checker are neighbours in
:mod:`.sim`.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from placement.models.serving.fluid import free_kv_bytes
from placement.models.serving.instance import (
    DECODE,
    MIXED,
    PREFILL,
    Kind,
    Profile,
    ServingInstance,
    ServingSolution,
    kinds,
)
from placement.models.serving.router import ConfiguredRouter

MAX_BATCH_TOKENS = 8192
"""Prompt tokens one prefill iteration takes at most (modelling choice: the last point of the
roofline profiles)."""
MAX_SEQS = 256
"""Sequences one instance runs at most (vLLM's ``max_num_seqs`` default)."""
MIGRATION_BYTES_PER_S = 25e9
"""KV-cache copy rate of a migration between instances (modelling choice: one 200 Gb/s HDR
InfiniBand link of a DGX node, 25 GB/s)."""


@dataclass(frozen=True)
class SimRequest:
    """A request to replay: arrival (s), prompt and output tokens, its length class."""

    id: int
    arrival_s: float
    input_tokens: int
    output_tokens: int
    cls: int


@dataclass
class Served:
    """What happened to a served request."""

    id: int
    cls: int
    prefill_instance: int
    decode_instance: int
    arrival_s: float
    first_token_s: float = math.nan
    finish_s: float = math.nan

    @property
    def ttft_ms(self) -> float:
        return 1000 * (self.first_token_s - self.arrival_s)

    @property
    def e2e_ms(self) -> float:
        return 1000 * (self.finish_s - self.arrival_s)

    output_tokens: int = 1
    path: list[int] = field(default_factory=list)
    """The instances a request migrated to, in order (L4 stages; empty otherwise)."""

    @property
    def tpot_ms(self) -> float:
        if self.output_tokens <= 1:
            return 0.0
        return 1000 * (self.finish_s - self.first_token_s) / (self.output_tokens - 1)


@dataclass
class SimInstance:
    """One model instance of a kind."""

    index: int
    kind: Kind
    profile: Profile
    kv_capacity_bytes: int
    waiting: deque[SimRequest] = field(default_factory=deque)
    """Prompts to prefill (mixed, prefill)."""
    moved: deque[SimRequest] = field(default_factory=deque)
    """Prefilled requests waiting for KV room (decode)."""
    running: dict[int, int] = field(default_factory=dict)
    """Request id -> tokens still to generate."""
    context: dict[int, int] = field(default_factory=dict)
    kv_used: int = 0
    busy: bool = False
    busy_until: float = 0.0
    outstanding: int = 0
    """Requests routed here and not finished (least-outstanding routers read it)."""
    partner: int = -1
    """The other instance of an AcceLLM pair (:mod:`..peers.accellm`), or -1: a pair holds
    every request's KV cache on both, and a member that starts a prefill hands its decodes
    to the other."""
    stage: int = -1
    """The L4 stage of the instance (:mod:`..peers.l4`), or -1."""
    stage_limit: int = 0
    """The context (tokens) past which a request leaves for the next stage; 0: none."""
    incoming: deque[tuple[SimRequest, int, int, int]] = field(default_factory=deque)
    """Migrated requests waiting for KV room: (request, tokens still to generate, context,
    source instance)."""


@dataclass
class Replay:
    """The replay of a request stream through a configuration."""

    requests: list[SimRequest]
    served: list[Served]
    rejected: list[int]
    instances: list[SimInstance]
    kv_reservations: list[tuple[int, float, float, int, int]]
    """(instance, from s, to s, bytes, request id) per KV reservation."""
    ttft_target_ms: float
    tpot_target_ms: float
    span_s: float

    def good(self, s: Served) -> bool:
        """Whether a served request met both targets."""
        return s.ttft_ms <= self.ttft_target_ms + 1e-9 and s.tpot_ms <= self.tpot_target_ms + 1e-9

    @property
    def goodput_per_s(self) -> float:
        """Requests per second served within both targets, over the arrivals' span."""
        return sum(1 for s in self.served if self.good(s)) / self.span_s

    def percentile(self, key: str, q: float) -> float:
        """The ``q``-th percentile of ``key`` (ttft_ms, tpot_ms, e2e_ms) over every request,
        a rejected one counting as infinitely late (nan when none arrived)."""
        values = [getattr(s, key) for s in self.served] + [math.inf] * len(self.rejected)
        if not values:
            return math.nan
        return float(np.percentile(np.array(values, dtype=float), q, method="higher"))


def poisson_requests(instance: ServingInstance, count: int, seed: int = 0) -> list[SimRequest]:
    """``count`` Poisson arrivals at the instance's rate, each of a class drawn by share, at
    the class's lengths."""
    rng = np.random.default_rng(seed)
    shares = np.array([c.share for c in instance.classes], dtype=float)
    shares /= shares.sum()
    gaps = rng.exponential(1.0 / instance.arrival_rate_per_s, size=count)
    picks = rng.choice(len(shares), size=count, p=shares)
    t = 0.0
    out = []
    for i in range(count):
        t += float(gaps[i])
        c = instance.classes[int(picks[i])]
        out.append(SimRequest(i, t, c.input_tokens, c.output_tokens, int(picks[i])))
    return out


def nearest_class(instance: ServingInstance, input_tokens: int, output_tokens: int) -> int:
    """The class nearest in log lengths (how trace requests take a class)."""
    best, where = math.inf, 0
    for i, c in enumerate(instance.classes):
        d = (
            math.log(input_tokens / c.input_tokens) ** 2
            + math.log(output_tokens / c.output_tokens) ** 2
        )
        if d < best:
            best, where = d, i
    return where


def build_instances(instance: ServingInstance, solution: ServingSolution) -> list[SimInstance]:
    """One simulated instance per instance of every deployment, deployments in order."""
    ks = kinds(instance)
    out: list[SimInstance] = []
    for d in solution.deployments:
        kind = ks[d.kind]
        for _ in range(d.instances):
            out.append(
                SimInstance(
                    len(out), kind, instance.profiles[kind.profile], free_kv_bytes(instance, kind)
                )
            )
    return out


class Simulation:
    """The event loop (see the module docstring)."""

    def __init__(self, instances: list[SimInstance], router: object) -> None:
        self.instances = instances
        self.router = router
        self.events: list[tuple[float, int, int, int]] = []
        self.seq = 0
        self.now = 0.0
        self.records: dict[int, Served] = {}
        self.by_id: dict[int, SimRequest] = {}
        self.kv: list[tuple[int, float, float, int, int]] = []
        self.kv_open: dict[tuple[int, int], tuple[float, int]] = {}
        self.batches: dict[int, tuple[str, list[int]]] = {}
        self.transfers: dict[int, tuple[int, int, int, int, int]] = {}
        self.copies = 0
        self.rejected: list[int] = []

    def push(self, t: float, what: int, who: int) -> None:
        if what == self.DONE:
            self.instances[who].busy_until = t
        heapq.heappush(self.events, (t, self.seq, what, who))
        self.seq += 1

    ARRIVE, DONE, MIGRATED = 0, 1, 2

    def reserve(self, inst: SimInstance, req: SimRequest, tokens: int) -> bool:
        need = tokens * inst.profile.kv_bytes_per_token
        if inst.kv_used + need > inst.kv_capacity_bytes or len(inst.running) >= MAX_SEQS:
            return False
        inst.kv_used += need
        self.kv_open[(inst.index, req.id)] = (self.now, need)
        return True

    def reserve_all(self, inst: SimInstance, req: SimRequest, tokens: int) -> bool:
        """Reserve on ``inst`` and, for a pair member, on its partner too (both or neither)."""
        if inst.partner < 0:
            return self.reserve(inst, req, tokens)
        other = self.instances[inst.partner]
        need = tokens * other.profile.kv_bytes_per_token
        if other.kv_used + need > other.kv_capacity_bytes or len(other.running) >= MAX_SEQS:
            return False
        if not self.reserve(inst, req, tokens):
            return False
        return self.reserve(other, req, tokens)

    def hand_off(self, inst: SimInstance) -> None:
        """A pair member about to prefill gives its decodes to its partner (which holds their
        KV cache), unless the partner is prefilling too."""
        other = self.instances[inst.partner]
        if other.busy and self.batches.get(other.index, ("",))[0] == "prefill":
            return
        for rid in list(inst.running):
            other.running[rid] = inst.running.pop(rid)
            other.context[rid] = inst.context.pop(rid)
            self.records[rid].decode_instance = other.index
            inst.outstanding -= 1
            other.outstanding += 1
        self.start(other)

    def release(self, inst: SimInstance, rid: int) -> None:
        start, need = self.kv_open.pop((inst.index, rid))
        inst.kv_used -= need
        self.kv.append((inst.index, start, self.now, need, rid))

    def migrate(self, inst: SimInstance, rid: int) -> None:
        """Hand a running request to an instance of the next L4 stage (module docstring)."""
        req = self.by_id[rid]
        target = self.instances[self.router.pick_downstream(req, self, inst.index)]  # type: ignore[attr-defined]
        remaining, context = inst.running.pop(rid), inst.context.pop(rid)
        inst.outstanding -= 1
        target.outstanding += 1
        rec = self.records[rid]
        rec.path.append(target.index)
        rec.decode_instance = target.index
        target.incoming.append((req, remaining, context, inst.index))
        self.start(target)

    def admit_incoming(self, inst: SimInstance) -> None:
        """Reserve KV for migrated requests while it fits and start their copies."""
        while inst.incoming:
            req, remaining, context, source = inst.incoming[0]
            if not self.reserve(inst, req, req.input_tokens + req.output_tokens):
                return
            inst.incoming.popleft()
            key = self.copies
            self.copies += 1
            self.transfers[key] = (req.id, remaining, context, source, inst.index)
            copy_s = context * inst.profile.kv_bytes_per_token / MIGRATION_BYTES_PER_S
            self.push(self.now + copy_s, self.MIGRATED, key)

    def migrated(self, key: int) -> None:
        """A KV copy ended: the source frees its reservation, the target decodes."""
        rid, remaining, context, source, target = self.transfers.pop(key)
        self.release(self.instances[source], rid)
        inst = self.instances[target]
        inst.running[rid] = remaining
        inst.context[rid] = context
        self.start(inst)
        self.start(self.instances[source])

    def start(self, inst: SimInstance) -> None:
        """Start the instance's next iteration, if it has work."""
        if inst.incoming:
            self.admit_incoming(inst)
        if inst.busy:
            return
        p = inst.profile
        if inst.kind.role in (MIXED, PREFILL) and inst.waiting:
            batch: list[int] = []
            tokens = 0
            busy_ms = 0.0
            while inst.waiting:
                req = inst.waiting[0]
                if batch and tokens + req.input_tokens > MAX_BATCH_TOKENS:
                    break
                total = req.input_tokens + (req.output_tokens if inst.kind.role == MIXED else 0)
                if not self.reserve_all(inst, req, total):
                    break
                inst.waiting.popleft()
                batch.append(req.id)
                tokens += req.input_tokens
                busy_ms += p.prefill_ms(req.input_tokens)
            if batch:
                inst.busy = True
                self.batches[inst.index] = ("prefill", batch)
                self.push(self.now + busy_ms / 1000, self.DONE, inst.index)
                if inst.partner >= 0 and inst.running:
                    self.hand_off(inst)
                return
        if inst.kind.role == DECODE:
            while inst.moved:
                req = inst.moved[0]
                if not self.reserve(inst, req, req.input_tokens + req.output_tokens):
                    break
                inst.moved.popleft()
                inst.running[req.id] = req.output_tokens - 1
                inst.context[req.id] = req.input_tokens + 1
        if inst.running:
            inst.busy = True
            ids = list(inst.running)
            step = p.decode_step_ms(len(ids), sum(inst.context[i] for i in ids))
            self.batches[inst.index] = ("decode", ids)
            self.push(self.now + step / 1000, self.DONE, inst.index)

    def finish(self, inst: SimInstance, rid: int) -> None:
        self.records[rid].finish_s = self.now
        inst.running.pop(rid, None)
        inst.context.pop(rid, None)
        self.release(inst, rid)
        if inst.partner >= 0 and (inst.partner, rid) in self.kv_open:
            self.release(self.instances[inst.partner], rid)
        inst.outstanding -= 1

    def done(self, inst: SimInstance) -> None:
        inst.busy = False
        phase, ids = self.batches.pop(inst.index)
        if phase == "prefill":
            for rid in ids:
                req = self.by_id[rid]
                rec = self.records[rid]
                rec.first_token_s = self.now
                if inst.kind.role == PREFILL:
                    self.release(inst, rid)
                    inst.outstanding -= 1
                    if req.output_tokens <= 1:
                        rec.finish_s = self.now
                        rec.decode_instance = inst.index
                        continue
                    target = self.instances[self.router.pick_decode(req, self)]  # type: ignore[attr-defined]
                    rec.decode_instance = target.index
                    target.outstanding += 1
                    target.moved.append(req)
                    self.start(target)
                elif req.output_tokens <= 1:
                    self.finish(inst, rid)
                else:
                    inst.running[rid] = req.output_tokens - 1
                    inst.context[rid] = req.input_tokens + 1
        else:
            for rid in ids:
                inst.running[rid] -= 1
                inst.context[rid] += 1
                if inst.running[rid] <= 0:
                    self.finish(inst, rid)
            if inst.stage_limit:
                for rid in ids:
                    if rid in inst.running and inst.context[rid] > inst.stage_limit:
                        self.migrate(inst, rid)
        self.start(inst)

    def arrive(self, rid: int) -> None:
        """An arrival: the router admits it to an instance, or it is rejected."""
        req = self.by_id[rid]
        target = self.router.admit(req, self)  # type: ignore[attr-defined]
        if target is None:
            self.rejected.append(rid)
            return
        inst = self.instances[target]
        self.records[rid] = Served(
            rid, req.cls, inst.index, inst.index, req.arrival_s, output_tokens=req.output_tokens
        )
        inst.outstanding += 1
        inst.waiting.append(req)
        self.start(inst)

    def handle(self, what: int, who: int) -> None:
        """One event at ``self.now``: an iteration's end, a KV copy's end, or an arrival."""
        if what == self.DONE:
            self.done(self.instances[who])
        elif what == self.MIGRATED:
            self.migrated(who)
        else:
            self.arrive(who)

    def run(self, requests: list[SimRequest]) -> tuple[list[Served], list[int]]:
        for req in requests:
            self.by_id[req.id] = req
            self.push(req.arrival_s, self.ARRIVE, req.id)
        while self.events:
            self.now, _, what, who = heapq.heappop(self.events)
            self.handle(what, who)
        return [self.records[i] for i in sorted(self.records)], self.rejected


def replay(
    instance: ServingInstance,
    instances: list[SimInstance],
    router: object,
    requests: list[SimRequest],
) -> Replay:
    """Replay ``requests`` through ``instances`` with ``router``."""
    sim = Simulation(instances, router)
    served, rejected = sim.run(requests)
    span = max(1e-9, requests[-1].arrival_s - requests[0].arrival_s) if requests else 1.0
    return Replay(
        requests,
        served,
        rejected,
        instances,
        sim.kv,
        instance.slo.ttft_ms,
        instance.slo.tpot_ms,
        span,
    )


def simulate(
    instance: ServingInstance, solution: ServingSolution, requests: list[SimRequest]
) -> Replay:
    """Replay ``requests`` through the configuration with its own routes
    (:class:`.router.ConfiguredRouter`)."""
    instances = build_instances(instance, solution)
    return replay(instance, instances, ConfiguredRouter(instance, solution, instances), requests)
