"""The fluid (rate) capacity model of serving: what a request of each class costs each kind of
instance, and what an instance of each kind can take, as integers (docs/formulations/serving.md).

Rates are integer milli-requests per second (``x``). Per kind ``k`` with ``n`` instances and a
class ``c`` (``I`` prompt tokens, ``O`` generated, context ``I + O/2`` on average while it
decodes):

* **prefill** (prefill and mixed kinds): a request takes ``s = prefill_ms(I)``; the TTFT target
  for it is ``T = ttft`` (prefill kinds) or ``ttft - D`` (mixed kinds: a prompt may wait for
  the decode step under way, ``D`` below). Its load limit ``rho_c`` is the utilisation at
  which the target percentile of an M/M/1 queue's wait, ``P(W > t) = rho exp(-(1 - rho) t /
  s)``, plus ``s`` reaches ``T`` (:func:`load_limit`). Row: ``sum_c x_c s_c / rho_c <= n
  10^6``; a mixed kind of prefill share ``a`` also keeps ``sum_c x_c s_c <= n a h 10^6``, with
  ``h`` the stall headroom (:func:`stall_headroom`: a prefill stalls every decode there);
* **decode** (decode and mixed kinds): a step must take at most ``D = tpot`` (decode) or ``(1
  - a) tpot`` (mixed: prefill takes up to ``a`` of the time); a token's wall time is at most
  ``tpot``, so by Little's law a class holds at most ``x O tpot / 10^6`` sequences, and the
  linear step time ``base + per_seq * B + per_1k * C / 1000 <= D`` gives the row ``sum_c x_c
  O_c tpot (per_seq + per_1k ctx_c / 1000) <= n (D - base) 10^6``;
* **KV cache** (decode and mixed kinds): those sequences hold ``I + O`` tokens each at most:
  ``sum_c x_c O_c tpot (I_c + O_c) kv <= n free 10^6`` with ``free`` the memory left by the
  weights at the memory utilisation;
* **headroom** (decode and KV rows): the sequences on an instance are a random count, not
  their mean; with ``B`` the most sequences a row allows (its capacity over the largest
  per-sequence coefficient of the classes), the mean may use ``m / B`` of it where ``m + z
  sqrt(m) = B`` (a Poisson count within ``B`` at the target percentile, ``z`` its normal
  quantile; :func:`headroom`).

Each coefficient is rounded up and each capacity down to an integer, so the integer model is
a restriction of the real-valued one; the checker uses these very integers, so the model's
optimum is the checker's. The load limits come from a queueing approximation (M/M/1 tails,
one class at a time): the simulator (:mod:`.sim`) measures the percentiles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

from placement.models.serving.instance import (
    DECODE,
    MIXED,
    PREFILL,
    Kind,
    ServingInstance,
    kinds,
)

PREFILL_SCALE = 1_000_000
DECODE_SCALE = 1_000_000_000
KV_SCALE = 1_000_000


@dataclass(frozen=True)
class Rows:
    """One kind's three limits: per class the coefficient (None: the class cannot use the
    kind in that phase) and the capacity of one instance (0: the kind has no such limit)."""

    prefill: tuple[int | None, ...]
    prefill_cap: int
    busy: tuple[int | None, ...]
    """Mixed kinds: the prefill's busy time, within the kind's prefill share."""
    busy_cap: int
    decode: tuple[int | None, ...]
    decode_cap: int
    kv: tuple[int | None, ...]
    kv_cap: int

    def serves_prefill(self, c: int) -> bool:
        return self.prefill[c] is not None

    def serves_decode(self, c: int) -> bool:
        return self.decode[c] is not None


def load_limit(service_ms: float, target_ms: float, percentile: float) -> float:
    """The largest utilisation at which a request of service time ``service_ms`` still starts
    and ends within ``target_ms`` at the ``percentile``, by the M/M/1 waiting-time tail
    ``P(W > t) = rho exp(-(1 - rho) t / s)`` (bisection; 0 when even an empty queue misses)."""
    if service_ms >= target_ms:
        return 0.0
    miss = 1 - percentile / 100
    slack = target_ms - service_ms

    def wait(rho: float) -> float:
        if rho <= miss:
            return 0.0
        return service_ms / (1 - rho) * math.log(rho / miss)

    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if wait(mid) <= slack:
            lo = mid
        else:
            hi = mid
    return lo


def _prefill_rows(
    instance: ServingInstance, kind: Kind
) -> tuple[tuple[int | None, ...], int, tuple[int | None, ...], int]:
    none = tuple(None for _ in instance.classes)
    if kind.role == DECODE:
        return none, 0, none, 0
    p = instance.profiles[kind.profile]
    slo = instance.slo
    target = slo.ttft_ms
    if kind.role == MIXED:
        target -= step_target_ms(instance, kind)  # a prompt may wait for the step under way
    queue: list[int | None] = []
    busy: list[int | None] = []
    for c in instance.classes:
        s = p.prefill_ms(c.input_tokens)
        rho = load_limit(s, target, slo.percentile)
        if rho <= 1e-9:
            queue.append(None)
            busy.append(None)
            continue
        queue.append(max(1, math.ceil(s / rho * 1000 - 1e-9)))
        busy.append(max(1, math.ceil(s * 1000 - 1e-9)))
    if kind.role != MIXED:
        return tuple(queue), PREFILL_SCALE * 1000, none, 0
    share = kind.prefill_share * stall_headroom(instance, kind)
    cap = int(share * PREFILL_SCALE * 1000 + 1e-6)
    return tuple(queue), PREFILL_SCALE * 1000, tuple(busy), cap


def stall_headroom(instance: ServingInstance, kind: Kind) -> float:
    """The share of a mixed kind's prefill share its mean may use: a prompt's prefill stalls
    every decode on the instance, and a sequence of ``O`` tokens has ``a tpot (O - 1)`` ms of
    slack for stalls. With ``B`` the number of the longest prefills (of the classes the kind
    can prefill) that fit the slack of the shortest output (of the classes it can decode),
    the count of prefills during a sequence's life must stay within ``B`` at the target
    percentile (:func:`headroom`)."""
    p = instance.profiles[kind.profile]
    longest = max((p.prefill_ms(c.input_tokens) for c in instance.classes), default=0.0)
    shortest = min((c.output_tokens for c in instance.classes), default=1)
    if longest <= 0 or shortest <= 1:
        return 1.0
    fits = kind.prefill_share * instance.slo.tpot_ms * (shortest - 1) / longest
    return headroom(fits, instance.slo.percentile)


def headroom(capacity_sequences: float, percentile: float) -> float:
    """The share of a capacity of ``capacity_sequences`` sequences the mean may use so that
    a Poisson count of sequences (mean ``m``, spread ``sqrt(m)``) stays within it at the
    ``percentile``: ``m + z sqrt(m) <= B`` gives ``m = (sqrt(z^2 / 4 + B) - z / 2)^2``."""
    if capacity_sequences <= 0:
        return 0.0
    z = max(0.0, NormalDist().inv_cdf(min(percentile, 99.99) / 100))
    mean = (math.sqrt(z * z / 4 + capacity_sequences) - z / 2) ** 2
    return mean / capacity_sequences


def step_target_ms(instance: ServingInstance, kind: Kind) -> float:
    """The decode step time a kind must keep: the TPOT target, less the prefill share on a
    mixed kind."""
    if kind.role == MIXED:
        return instance.slo.tpot_ms * (1 - kind.prefill_share)
    return instance.slo.tpot_ms


def free_kv_bytes(instance: ServingInstance, kind: Kind) -> int:
    """Memory one instance of the kind has for KV cache, bytes."""
    p = instance.profiles[kind.profile]
    gpu = instance.gpu_types[instance.gpu_index[p.gpu_type]]
    usable = int(instance.memory_utilization * p.tensor_parallel * gpu.memory_bytes)
    return max(0, usable - p.weights_bytes)


def _decode_rows(
    instance: ServingInstance, kind: Kind
) -> tuple[tuple[int | None, ...], int, tuple[int | None, ...], int]:
    none = tuple(None for _ in instance.classes)
    if kind.role == PREFILL:
        return none, 0, none, 0
    p = instance.profiles[kind.profile]
    d = step_target_ms(instance, kind)
    tpot = instance.slo.tpot_ms  # a token's wall time: its step plus the prefill between
    free = free_kv_bytes(instance, kind)
    dec: list[int | None] = []
    kv: list[int | None] = []
    most_per_seq = 0.0
    most_kv = 0
    for c in instance.classes:
        ctx_max = c.input_tokens + c.output_tokens
        alone = p.decode_step_ms(1, ctx_max)
        if alone > d or ctx_max * p.kv_bytes_per_token > free:
            dec.append(None)
            kv.append(None)
            continue
        ctx = c.input_tokens + c.output_tokens / 2
        per = p.decode_per_sequence_ms + p.decode_per_1k_context_ms * ctx / 1000
        most_per_seq = max(most_per_seq, per)
        most_kv = max(most_kv, ctx_max * p.kv_bytes_per_token)
        dec.append(max(1, math.ceil(c.output_tokens * tpot * per * DECODE_SCALE / 1e9 - 1e-9)))
        kv.append(
            max(1, math.ceil(c.output_tokens * tpot * ctx_max * p.kv_bytes_per_token / 1e6 - 1e-9))
        )
    room = max(0.0, d - p.decode_base_ms)
    pct = instance.slo.percentile
    if most_per_seq > 0:
        room *= headroom(room / most_per_seq, pct)
    cap = max(0, int(room * DECODE_SCALE / 1000 + 1e-6))
    kv_cap = int(free * headroom(free / most_kv, pct)) if most_kv else free
    return tuple(dec), cap, tuple(kv), kv_cap


def rows(instance: ServingInstance) -> list[Rows]:
    """The limits of every kind (:func:`.instance.kinds` order), computed once per instance."""
    cached = instance.__dict__.get("_fluid_rows")
    if cached is not None:
        return cached
    out = []
    for kind in kinds(instance):
        pre, pre_cap, busy, busy_cap = _prefill_rows(instance, kind)
        dec, dec_cap, kv, kv_cap = _decode_rows(instance, kind)
        out.append(Rows(pre, pre_cap, busy, busy_cap, dec, dec_cap, kv, kv_cap))
    instance.__dict__["_fluid_rows"] = out
    return out


def gpus_of(instance: ServingInstance, kind: Kind) -> int:
    """GPUs one instance of the kind holds."""
    return instance.profiles[kind.profile].tensor_parallel


def gpu_type_of(instance: ServingInstance, kind: Kind) -> int:
    """The index of the kind's GPU type."""
    return instance.gpu_index[instance.profiles[kind.profile].gpu_type]


def cost_milli(instance: ServingInstance, kind: Kind) -> int:
    """Hourly cost of one instance of the kind, in thousandths (cost_per_hour is a multiple
    of 0.001)."""
    gpu = instance.gpu_types[gpu_type_of(instance, kind)]
    return round(gpu.cost_per_hour * 1000) * gpus_of(instance, kind)
