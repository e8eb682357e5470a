"""Typed instance and solution of the LLM-serving family, and their ``placement.v1`` messages.

An instance is a set of GPU types (count, hourly cost, memory), a performance profile per GPU
type and tensor-parallel degree (prefill time by batch tokens, a linear decode step time in
batch and context, KV bytes per token, weights), a workload of length classes with an arrival
rate, service-level targets (TTFT, TPOT) and an optional GPU budget. A solution is a set of
deployments (a kind: GPU type, degree, role, and a count of instances) and the rate of each
class routed to each deployment, in integer milli-requests per second.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, NamedTuple

from placement.solver.errors import Shown, ValidationCollector
from placement.solver.jsonform import FieldRange, check_ranges, register_ranges
from placement.solver.schema.v1 import serving_pb2 as pb

MIXED = "mixed"
PREFILL = "prefill"
DECODE = "decode"
ROLES = (MIXED, PREFILL, DECODE)
"""The roles, in the order of the proto's enum (value = index + 1)."""

DEFAULT_MIXED_SHARES = (0.25, 0.5)
"""The prefill time shares a mixed instance may give prefill: a modelling choice (the fluid
model's stand-in for the prefill/decode interference of continuous batching)."""
VLLM_MEMORY_UTILIZATION = 0.9
"""vLLM's default ``gpu_memory_utilization`` (vllm/config.py, ``CacheConfig``): the share of
memory for weights and KV cache."""
DEFAULT_PERCENTILE = 90.0

MILLI = 1000
"""Rates are integer milli-requests per second in solutions and in the exact model."""

RANGES = register_ranges(
    {
        "ServingGpuType.count": FieldRange(0, 100_000, integer=True, unit="GPUs"),
        "ServingGpuType.cost_per_hour": FieldRange(0, 1e6, unit="per GPU-hour"),
        "ServingGpuType.memory_bytes": FieldRange(1, 2**50, integer=True, unit="bytes"),
        "ServingPrefillPoint.tokens": FieldRange(1, 10_000_000, integer=True, unit="tokens"),
        "ServingPrefillPoint.ms": FieldRange(0, 1e7, lo_open=True, unit="ms"),
        "ServingProfile.tensor_parallel": FieldRange(1, 1024, integer=True, unit="GPUs"),
        "ServingProfile.decode_base_ms": FieldRange(0, 1e5, unit="ms"),
        "ServingProfile.decode_per_sequence_ms": FieldRange(0, 1e4, unit="ms"),
        "ServingProfile.decode_per_1k_context_ms": FieldRange(0, 1e4, unit="ms"),
        "ServingProfile.kv_bytes_per_token": FieldRange(1, 2**40, integer=True, unit="bytes"),
        "ServingProfile.weights_bytes": FieldRange(0, 2**55, integer=True, unit="bytes"),
        "ServingClass.input_tokens": FieldRange(1, 10_000_000, integer=True, unit="tokens"),
        "ServingClass.output_tokens": FieldRange(1, 10_000_000, integer=True, unit="tokens"),
        "ServingClass.share": FieldRange(0, 1e9, lo_open=True),
        "ServingInstance.arrival_rate_per_s": FieldRange(0, 100_000, lo_open=True, unit="req/s"),
        "ServingSlo.ttft_ms": FieldRange(0, 1e7, lo_open=True, unit="ms"),
        "ServingSlo.tpot_ms": FieldRange(0, 1e6, lo_open=True, unit="ms"),
        "ServingSlo.percentile": FieldRange(0, 100, unit="0 = 90"),
        "ServingInstance.gpu_budget": FieldRange(0, 1_000_000, integer=True, unit="GPUs"),
        "ServingInstance.mixed_prefill_shares": FieldRange(0, 1, lo_open=True),
        "ServingInstance.memory_utilization": FieldRange(0, 1, unit="0 = 0.9"),
    }
)
"""The documented range of every numeric field."""


@dataclass(frozen=True)
class GpuType:
    """A kind of GPU: how many, the price of one for an hour, its memory."""

    name: str
    count: int
    cost_per_hour: float
    memory_bytes: int


class PrefillPoint(NamedTuple):
    """A prefill batch of ``tokens`` prompt tokens takes ``ms``."""

    tokens: int
    ms: float


@dataclass(frozen=True)
class Profile:
    """How one model instance of ``tensor_parallel`` GPUs of ``gpu_type`` performs."""

    gpu_type: str
    tensor_parallel: int
    prefill: tuple[PrefillPoint, ...]
    """(batch tokens, ms), tokens increasing (plain pairs are turned into points)."""
    decode_base_ms: float
    decode_per_sequence_ms: float
    decode_per_1k_context_ms: float
    kv_bytes_per_token: int
    weights_bytes: int
    source: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "prefill", tuple(PrefillPoint(*p) for p in self.prefill))

    def prefill_ms(self, tokens: int) -> float:
        """The time of a prefill batch of ``tokens`` tokens: the first point's time below it,
        linear between points, the last segment's slope beyond the last (through the origin
        when there is one point)."""
        pts = self.prefill
        if tokens <= pts[0][0]:
            return pts[0][1] if len(pts) > 1 else pts[0][1] * max(tokens, 1) / pts[0][0]
        for (t0, m0), (t1, m1) in zip(pts, pts[1:], strict=False):
            if tokens <= t1:
                return m0 + (m1 - m0) * (tokens - t0) / (t1 - t0)
        if len(pts) == 1:
            return pts[0][1] * tokens / pts[0][0]
        (t0, m0), (t1, m1) = pts[-2], pts[-1]
        return m1 + (m1 - m0) * (tokens - t1) / (t1 - t0)

    def decode_step_ms(self, batch: int, context_tokens: float) -> float:
        """One decode step over ``batch`` sequences holding ``context_tokens`` in all."""
        return (
            self.decode_base_ms
            + self.decode_per_sequence_ms * batch
            + self.decode_per_1k_context_ms * context_tokens / 1000.0
        )


@dataclass(frozen=True)
class LengthClass:
    """Requests of one length: prompt and generated tokens, and their share of arrivals."""

    name: str
    input_tokens: int
    output_tokens: int
    share: float


@dataclass(frozen=True)
class Slo:
    """Targets: time to first token and time per output token (ms), at a percentile."""

    ttft_ms: float
    tpot_ms: float
    percentile: float = DEFAULT_PERCENTILE


@dataclass(eq=False)
class ServingInstance:
    """GPU types, profiles, the workload's classes and rate, the targets, the budget."""

    family_name = "serving"

    gpu_types: list[GpuType]
    profiles: list[Profile]
    classes: list[LengthClass]
    arrival_rate_per_s: float
    slo: Slo
    gpu_budget: int = 0
    mixed_prefill_shares: tuple[float, ...] = DEFAULT_MIXED_SHARES
    memory_utilization: float = VLLM_MEMORY_UTILIZATION
    name: str = ""
    description: str = ""
    validated: bool = field(default=False, repr=False)

    @cached_property
    def gpu_index(self) -> dict[str, int]:
        return {g.name: i for i, g in enumerate(self.gpu_types)}

    @cached_property
    def class_index(self) -> dict[str, int]:
        return {c.name: i for i, c in enumerate(self.classes)}

    @property
    def maximise_goodput(self) -> bool:
        """With a GPU budget the objective is goodput; without one, cost."""
        return self.gpu_budget > 0

    @cached_property
    def class_rates_milli(self) -> list[int]:
        """Each class's arrival rate, integer milli-requests per second: rounded down, but at
        least 1 (the model's unit) for a class with a positive share, so that rounding plans
        no arriving class away (at a light load a rare class of a trace arrives at under
        0.001 requests per second, and our router admits only what the plan routes)."""
        total = sum(c.share for c in self.classes)
        return [
            max(
                1 if c.share > 0 else 0,
                int(self.arrival_rate_per_s * MILLI * c.share / total + 1e-9),
            )
            for c in self.classes
        ]


@dataclass(frozen=True)
class Deployment:
    """``instances`` instances of kind ``kind`` (an index into :func:`.fluid.kinds`)."""

    kind: int
    instances: int


@dataclass(frozen=True)
class Route:
    """``rate_milli`` milli-requests per second of class ``cls`` on deployment
    ``deployment`` (an index into the solution's deployments)."""

    cls: int
    deployment: int
    rate_milli: int


@dataclass(frozen=True)
class ServingSolution:
    """Deployments and routes."""

    deployments: tuple[Deployment, ...] = ()
    routes: tuple[Route, ...] = ()


@dataclass(frozen=True)
class Kind:
    """A kind of instance: a profile (GPU type and degree), a role and, for a mixed one, the
    share of its time prefill may take."""

    name: str
    profile: int
    role: str
    prefill_share: float = 0.0


def kinds(instance: ServingInstance) -> list[Kind]:
    """Every kind of instance, in a fixed order: per profile, prefill, decode, then mixed per
    prefill share. A profile whose weights do not fit its GPUs gives none (refused on input)."""
    out: list[Kind] = []
    for k, p in enumerate(instance.profiles):
        base = f"{p.gpu_type}-tp{p.tensor_parallel}"
        out.append(Kind(f"{base}-prefill", k, PREFILL))
        out.append(Kind(f"{base}-decode", k, DECODE))
        for share in instance.mixed_prefill_shares:
            out.append(Kind(f"{base}-mixed-p{round(100 * share):d}", k, MIXED, share))
    return out


def kind_index(instance: ServingInstance) -> dict[str, int]:
    """Kind name -> its index in :func:`kinds`."""
    return {k.name: i for i, k in enumerate(kinds(instance))}


# -------------------------------------------------------------------------------------------
# From and to the placement/v1 message

P = "serving"


def instance_from_message(msg: Any, name: str = "", description: str = "") -> ServingInstance:
    """Build and validate a :class:`ServingInstance` from a ``ServingInstance`` message.

    Raises :class:`~placement.solver.errors.InputError` listing every bad field with its path:
    ranges, names, a profile that is not monotone, a profile whose weights do not fit its
    GPUs, and targets no profile can meet (with the margin).
    """
    v = ValidationCollector()
    check_ranges(msg, RANGES, P, v)
    v.require(len(msg.gpu_types) > 0, f"{P}.gpu_types", [], "at least one GPU type")
    v.require(len(msg.profiles) > 0, f"{P}.profiles", [], "at least one profile")
    v.require(len(msg.classes) > 0, f"{P}.classes", [], "at least one length class")
    util = msg.memory_utilization if 0 < msg.memory_utilization <= 1 else VLLM_MEMORY_UTILIZATION
    gpus: list[GpuType] = []
    seen: set[str] = set()
    for i, g in enumerate(msg.gpu_types):
        path = f"{P}.gpu_types[{i}]"
        v.unique_name(f"{path}.name", g.name, seen, "GPU type")
        seen.add(g.name)
        cost = g.cost_per_hour
        if RANGES["ServingGpuType.cost_per_hour"].contains(cost):
            milli = cost * 1000
            v.require(
                abs(milli - round(milli)) < 1e-6,
                f"{path}.cost_per_hour",
                cost,
                "a multiple of 0.001",
            )
        else:
            cost = 0.0
        gpus.append(GpuType(g.name, int(g.count), float(cost), int(g.memory_bytes)))
    by_name = {g.name: g for g in gpus}
    profiles: list[Profile] = []
    pairs: set[tuple[str, int]] = set()
    for i, p in enumerate(msg.profiles):
        path = f"{P}.profiles[{i}]"
        gpu = by_name.get(p.gpu_type)
        v.require(gpu is not None, f"{path}.gpu_type", p.gpu_type, "the name of a GPU type")
        v.require(
            (p.gpu_type, p.tensor_parallel) not in pairs,
            f"{path}.tensor_parallel",
            p.tensor_parallel,
            f"one profile per GPU type and degree ({p.gpu_type!r} has one already)",
        )
        pairs.add((p.gpu_type, p.tensor_parallel))
        v.require(len(p.prefill) > 0, f"{path}.prefill", [], "at least one (tokens, ms) point")
        points: list[tuple[int, float]] = []
        for j, q in enumerate(p.prefill):
            if points:
                t0, m0 = points[-1]
                v.require(
                    q.tokens > t0,
                    f"{path}.prefill[{j}].tokens",
                    q.tokens,
                    f"more than the previous point's {t0} tokens",
                )
                v.require(
                    q.ms >= m0,
                    f"{path}.prefill[{j}].ms",
                    q.ms,
                    f"at least the previous point's {m0:g} ms (a profile must not get faster "
                    f"with more tokens: {m0 - q.ms:g} ms short)",
                )
            points.append((int(q.tokens), float(q.ms)))
        tp = max(1, int(p.tensor_parallel))
        if gpu is not None and p.weights_bytes > util * tp * gpu.memory_bytes:
            v.add(
                f"{path}.weights_bytes",
                p.weights_bytes,
                f"at most {int(util * tp * gpu.memory_bytes)} bytes ({tp} x {gpu.memory_bytes} "
                f"bytes at memory utilization {util:g})",
            )
        profiles.append(
            Profile(
                p.gpu_type,
                tp,
                tuple(points) or ((1, 1.0),),
                float(p.decode_base_ms),
                float(p.decode_per_sequence_ms),
                float(p.decode_per_1k_context_ms),
                max(1, int(p.kv_bytes_per_token)),
                int(p.weights_bytes),
                p.source,
            )
        )
    classes: list[LengthClass] = []
    seen = set()
    for i, c in enumerate(msg.classes):
        path = f"{P}.classes[{i}]"
        v.unique_name(f"{path}.name", c.name, seen, "class")
        seen.add(c.name)
        classes.append(
            LengthClass(
                c.name,
                max(1, int(c.input_tokens)),
                max(1, int(c.output_tokens)),
                float(c.share) if c.share > 0 else 1.0,
            )
        )
    v.require(msg.HasField("slo"), f"{P}.slo", Shown("nothing"), "the targets (ttft_ms, tpot_ms)")
    slo = Slo(
        float(msg.slo.ttft_ms) if msg.slo.ttft_ms > 0 else 1.0,
        float(msg.slo.tpot_ms) if msg.slo.tpot_ms > 0 else 1.0,
        float(msg.slo.percentile) if 0 < msg.slo.percentile <= 100 else DEFAULT_PERCENTILE,
    )
    shares = tuple(float(s) for s in msg.mixed_prefill_shares if 0 < s < 1)
    for j, s in enumerate(msg.mixed_prefill_shares):
        v.require(s < 1, f"{P}.mixed_prefill_shares[{j}]", s, "a share in (0, 1)")
    rate = msg.arrival_rate_per_s if msg.arrival_rate_per_s > 0 else 1.0
    if not v.errors:
        _targets_met(profiles, classes, slo, msg.HasField("slo"), v)
    v.raise_if_any()
    instance = ServingInstance(
        gpus,
        profiles,
        classes,
        float(rate),
        slo,
        int(msg.gpu_budget),
        shares or DEFAULT_MIXED_SHARES,
        float(util),
        name,
        description,
        validated=True,
    )
    if not v.errors and int(instance.arrival_rate_per_s * MILLI + 1e-9) < 1:
        v.add(f"{P}.arrival_rate_per_s", rate, "at least 0.001 requests per second")
    v.raise_if_any()
    return instance


def _targets_met(
    profiles: list[Profile],
    classes: list[LengthClass],
    slo: Slo,
    given: bool,
    v: ValidationCollector,
) -> None:
    """Every class can meet both targets alone on some profile; else the target's field, the
    least value any profile reaches, and by how much the target misses it."""
    if not given:
        return
    for c in classes:
        ttft = min((p.prefill_ms(c.input_tokens), k) for k, p in enumerate(profiles))
        if ttft[0] > slo.ttft_ms:
            p = profiles[ttft[1]]
            v.add(
                f"{P}.slo.ttft_ms",
                slo.ttft_ms,
                f"at least {ttft[0]:.3f} ms: class {c.name!r} ({c.input_tokens} prompt tokens) "
                f"prefills in no less on any profile (best {p.gpu_type} tp{p.tensor_parallel}); "
                f"the target is {ttft[0] - slo.ttft_ms:.3f} ms short",
            )
            return
        ctx = c.input_tokens + c.output_tokens
        tpot = min((p.decode_step_ms(1, ctx), k) for k, p in enumerate(profiles))
        if tpot[0] > slo.tpot_ms:
            p = profiles[tpot[1]]
            v.add(
                f"{P}.slo.tpot_ms",
                slo.tpot_ms,
                f"at least {tpot[0]:.3f} ms: class {c.name!r} alone decodes a step in no less "
                f"on any profile (best {p.gpu_type} tp{p.tensor_parallel}); the target is "
                f"{tpot[0] - slo.tpot_ms:.3f} ms short",
            )
            return


def instance_to_message(instance: ServingInstance) -> Any:
    """The ``placement.v1.ServingInstance`` message of an instance (defaults written out)."""
    msg = pb.ServingInstance(
        arrival_rate_per_s=instance.arrival_rate_per_s,
        gpu_budget=instance.gpu_budget,
        memory_utilization=instance.memory_utilization,
    )
    msg.mixed_prefill_shares.extend(instance.mixed_prefill_shares)
    for g in instance.gpu_types:
        msg.gpu_types.add(
            name=g.name, count=g.count, cost_per_hour=g.cost_per_hour, memory_bytes=g.memory_bytes
        )
    for p in instance.profiles:
        m = msg.profiles.add(
            gpu_type=p.gpu_type,
            tensor_parallel=p.tensor_parallel,
            decode_base_ms=p.decode_base_ms,
            decode_per_sequence_ms=p.decode_per_sequence_ms,
            decode_per_1k_context_ms=p.decode_per_1k_context_ms,
            kv_bytes_per_token=p.kv_bytes_per_token,
            weights_bytes=p.weights_bytes,
            source=p.source,
        )
        for tokens, ms in p.prefill:
            m.prefill.add(tokens=tokens, ms=ms)
    for c in instance.classes:
        msg.classes.add(
            name=c.name, input_tokens=c.input_tokens, output_tokens=c.output_tokens, share=c.share
        )
    msg.slo.CopyFrom(
        pb.ServingSlo(
            ttft_ms=instance.slo.ttft_ms,
            tpot_ms=instance.slo.tpot_ms,
            percentile=instance.slo.percentile,
        )
    )
    return msg


def solution_from_message(instance: ServingInstance, msg: Any) -> ServingSolution:
    """A :class:`ServingSolution` from a ``ServingSolution`` message: deployment names must be
    kinds of the instance and routes must name a class and a deployment (InputError
    otherwise); feasibility is the checker's business."""
    v = ValidationCollector()
    index = kind_index(instance)
    deployments: list[Deployment] = []
    names: dict[str, int] = {}
    for i, d in enumerate(msg.deployments):
        path = f"{P}.deployments[{i}]"
        k = index.get(d.name)
        if (
            v.require(k is not None, f"{path}.name", d.name, "a kind of the instance")
            and k is not None
        ):
            v.require(d.name not in names, f"{path}.name", d.name, "one deployment per kind")
            names[d.name] = len(deployments)
            deployments.append(Deployment(k, int(d.instances)))
    routes: list[Route] = []
    for i, r in enumerate(msg.routes):
        path = f"{P}.routes[{i}]"
        c = instance.class_index.get(r.class_name)
        d = names.get(r.deployment)
        v.require(c is not None, f"{path}.class_name", r.class_name, "a class of the instance")
        v.require(d is not None, f"{path}.deployment", r.deployment, "a deployment's name")
        if c is not None and d is not None:
            routes.append(Route(c, d, int(round(r.rate_per_s * MILLI))))
    v.raise_if_any()
    return ServingSolution(tuple(deployments), tuple(routes))


@dataclass(frozen=True)
class NamedServingSolution:
    """A :class:`ServingSolution` by name: ``instances["a100-tp1-mixed-p25"] == 3`` and
    ``routes["long"]`` the (deployment, requests per second) of each of its routes."""

    instances: dict[str, int]
    routes: dict[str, tuple[tuple[str, float], ...]]


def named_solution(instance: ServingInstance, solution: ServingSolution) -> NamedServingSolution:
    """The deployments and routes keyed by name."""
    ks = kinds(instance)
    instances = {ks[d.kind].name: d.instances for d in solution.deployments}
    routes: dict[str, list[tuple[str, float]]] = {}
    for r in solution.routes:
        dep = solution.deployments[r.deployment]
        routes.setdefault(instance.classes[r.cls].name, []).append(
            (ks[dep.kind].name, r.rate_milli / MILLI)
        )
    return NamedServingSolution(instances, {k: tuple(v) for k, v in routes.items()})
