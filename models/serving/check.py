"""Independent checker of serving configurations under the fluid model.

It imports no encoding and no heuristic: from the deployments and routes it checks the rules
and recomputes every figure with :mod:`.fluid` (the integer coefficients and capacities).

Rules: every deployment is a kind of the instance, used once, with at least one instance;
each GPU type's count and the GPU budget hold; every route names a class and a deployment,
once per pair, with a positive rate, and the deployment's kind can take the class in the
route's phase (prefill on prefill and mixed kinds, decode on decode and mixed kinds); per
class, what prefill deployments take equals what decode deployments take, and what is served
(mixed plus prefill routes) is at most the class's arrival rate (exactly it without a budget);
every deployment's prefill, prefill-share, decode and KV rows hold.

Objective: with a budget, ``goodput_per_s`` (served requests per second, max), then
``peak_load`` (min: the headroom, :func:`peak_permille` over 1000), then ``cost_per_hour``
(min); without, ``cost_per_hour`` (min). The goodput and the loads are the fluid model's: the
simulator measures what a configuration really serves within the targets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from placement.models.serving.fluid import cost_milli, gpu_type_of, gpus_of, rows
from placement.models.serving.instance import (
    DECODE,
    MILLI,
    MIXED,
    PREFILL,
    ROLES,
    ServingInstance,
    ServingSolution,
    kinds,
)
from placement.solver.family import CheckReport
from placement.solver.schema.v1 import serving_pb2 as pb

GOODPUT_TIERS = ("goodput_per_s", "peak_load", "cost_per_hour")
GOODPUT_SENSES = ("max", "min", "min")
HEADROOM_STEPS = 1000
"""The peak load is a whole number of thousandths of the capacity."""
COST_TIERS = ("cost_per_hour",)
COST_SENSES = ("min",)


def tiers(instance: ServingInstance) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The objective's tiers and senses for this instance."""
    if instance.maximise_goodput:
        return GOODPUT_TIERS, GOODPUT_SENSES
    return COST_TIERS, COST_SENSES


@dataclass
class Loads:
    """A deployment's sums of each row (numerators, in the row's integer units)."""

    prefill: int = 0
    busy: int = 0
    decode: int = 0
    kv: int = 0


def _infeasible(instance: ServingInstance, violations: list[str]) -> CheckReport:
    names, senses = tiers(instance)
    bad = {
        n: (float("-inf") if s == "max" else float("inf"))
        for n, s in zip(names, senses, strict=True)
    }
    return CheckReport(False, violations, bad, senses)


def deployment_loads(instance: ServingInstance, solution: ServingSolution) -> list[Loads]:
    """Every deployment's row sums (routes assumed to name valid classes and kinds)."""
    rs = rows(instance)
    ks = kinds(instance)
    loads = [Loads() for _ in solution.deployments]
    for r in solution.routes:
        dep = solution.deployments[r.deployment]
        kind, row = ks[dep.kind], rs[dep.kind]
        load = loads[r.deployment]
        if kind.role in (PREFILL, MIXED):
            load.prefill += r.rate_milli * (row.prefill[r.cls] or 0)
            load.busy += r.rate_milli * (row.busy[r.cls] or 0)
        if kind.role in (DECODE, MIXED):
            load.decode += r.rate_milli * (row.decode[r.cls] or 0)
            load.kv += r.rate_milli * (row.kv[r.cls] or 0)
    return loads


def row_permille(load: int, instances: int, cap: int) -> int:
    """The least ``j`` such that a row of ``load`` (its integer units) on ``instances``
    instances of capacity ``cap`` each holds at ``j`` thousandths of it, the model's way:
    ``load <= instances * floor(j cap / 1000)``, that is ``ceil(load / instances) <= j cap /
    1000``. 0 for no load; above 1000 when the row is over its capacity."""
    if load <= 0:
        return 0
    if cap <= 0:
        return HEADROOM_STEPS + 1
    per_instance = -(-load // instances)
    return -(-HEADROOM_STEPS * per_instance // cap)


def peak_permille(instance: ServingInstance, solution: ServingSolution) -> int:
    """The plan's peak load in thousandths: the largest :func:`row_permille` over the
    prefill, prefill-share, decode and KV rows of every deployment (routes assumed valid)."""
    rs = rows(instance)
    peak = 0
    for d, load in zip(solution.deployments, deployment_loads(instance, solution), strict=True):
        row = rs[d.kind]
        for used, cap in (
            (load.prefill, row.prefill_cap),
            (load.busy, row.busy_cap),
            (load.decode, row.decode_cap),
            (load.kv, row.kv_cap),
        ):
            peak = max(peak, row_permille(used, d.instances, cap))
    return peak


def check(instance: ServingInstance, solution: ServingSolution) -> CheckReport:
    """Check ``solution`` against ``instance``; list every violation; compute the tiers."""
    if not isinstance(solution, ServingSolution):
        return _infeasible(instance, [f"not a ServingSolution: {type(solution).__name__}"])
    ks = kinds(instance)
    rs = rows(instance)
    violations: list[str] = []
    used_kinds: set[int] = set()
    per_type = [0] * len(instance.gpu_types)
    for i, d in enumerate(solution.deployments):
        if not (isinstance(d.kind, int) and 0 <= d.kind < len(ks)):
            violations.append(f"deployment {i}: kind {d.kind!r}, which the instance lacks")
            continue
        if d.kind in used_kinds:
            violations.append(f"deployment {i}: kind {ks[d.kind].name!r} deployed twice")
        used_kinds.add(d.kind)
        if d.instances < 1:
            violations.append(f"deployment {ks[d.kind].name!r}: {d.instances} instances")
        per_type[gpu_type_of(instance, ks[d.kind])] += d.instances * gpus_of(instance, ks[d.kind])
    if violations:
        return _infeasible(instance, violations)
    for g, used in zip(instance.gpu_types, per_type, strict=True):
        if used > g.count:
            violations.append(f"GPU type {g.name!r}: {used} GPUs used of {g.count}")
    gpus = sum(per_type)
    if instance.gpu_budget and gpus > instance.gpu_budget:
        violations.append(f"{gpus} GPUs used, over the budget of {instance.gpu_budget}")
    pairs: set[tuple[int, int]] = set()
    prefilled = [0] * len(instance.classes)
    decoded = [0] * len(instance.classes)
    for r in solution.routes:
        if not (0 <= r.cls < len(instance.classes)) or not (
            0 <= r.deployment < len(solution.deployments)
        ):
            violations.append(f"a route of class {r.cls} to deployment {r.deployment}: unknown")
            continue
        cname = instance.classes[r.cls].name
        dep = solution.deployments[r.deployment]
        kind = ks[dep.kind]
        if (r.cls, r.deployment) in pairs:
            violations.append(f"class {cname!r} routed to {kind.name!r} twice")
        pairs.add((r.cls, r.deployment))
        if r.rate_milli <= 0:
            violations.append(f"class {cname!r} on {kind.name!r}: rate {r.rate_milli / MILLI}")
        row = rs[dep.kind]
        if kind.role in (PREFILL, MIXED):
            if not row.serves_prefill(r.cls):
                violations.append(
                    f"class {cname!r} on {kind.name!r}: its prefill cannot meet the TTFT target"
                )
            prefilled[r.cls] += r.rate_milli
        if kind.role in (DECODE, MIXED):
            if not row.serves_decode(r.cls):
                violations.append(
                    f"class {cname!r} on {kind.name!r}: its decode cannot meet the TPOT target "
                    "or its KV cache does not fit"
                )
            decoded[r.cls] += r.rate_milli
    if violations:
        return _infeasible(instance, violations)
    for c, cls in enumerate(instance.classes):
        rate = instance.class_rates_milli[c]
        if prefilled[c] != decoded[c]:
            violations.append(
                f"class {cls.name!r}: {prefilled[c] / MILLI} req/s prefilled but "
                f"{decoded[c] / MILLI} decoded"
            )
        if prefilled[c] > rate:
            violations.append(
                f"class {cls.name!r}: {prefilled[c] / MILLI} req/s served of {rate / MILLI} arriving"
            )
        elif not instance.maximise_goodput and prefilled[c] < rate:
            violations.append(
                f"class {cls.name!r}: {prefilled[c] / MILLI} req/s served of {rate / MILLI} "
                "arriving (without a GPU budget every request is served)"
            )
    for i, (d, load) in enumerate(
        zip(solution.deployments, deployment_loads(instance, solution), strict=True)
    ):
        row, name = rs[d.kind], ks[d.kind].name
        for what, used, cap in (
            ("prefill", load.prefill, row.prefill_cap),
            ("prefill share", load.busy, row.busy_cap),
            ("decode", load.decode, row.decode_cap),
            ("KV cache", load.kv, row.kv_cap),
        ):
            if used and used > d.instances * cap:
                violations.append(
                    f"deployment {i} {name!r}: {what} load {used / max(1, d.instances * cap):.4f}"
                    " of its SLO-feasible capacity"
                )
    if violations:
        return _infeasible(instance, violations)
    cost = sum(d.instances * cost_milli(instance, ks[d.kind]) for d in solution.deployments)
    terms = {"cost_per_hour": cost / 1000}
    if instance.maximise_goodput:
        terms = {
            "goodput_per_s": sum(prefilled) / MILLI,
            "peak_load": peak_permille(instance, solution) / HEADROOM_STEPS,
            **terms,
        }
    return CheckReport(True, [], terms, tiers(instance)[1])


def solution_to_message(
    instance: ServingInstance, solution: ServingSolution, unplaced: Any = None
) -> Any:
    """The ``placement.v1.ServingSolution`` message, with the checker's loads per deployment
    and the totals."""
    del unplaced
    ks = kinds(instance)
    rs = rows(instance)
    msg = pb.ServingSolution()
    valid = all(0 <= d.kind < len(ks) for d in solution.deployments) and all(
        0 <= r.deployment < len(solution.deployments) and 0 <= r.cls < len(instance.classes)
        for r in solution.routes
    )
    loads = deployment_loads(instance, solution) if valid else []
    for i, d in enumerate(solution.deployments):
        if not 0 <= d.kind < len(ks):
            msg.deployments.add(name=str(d.kind), instances=d.instances)
            continue
        kind = ks[d.kind]
        p = instance.profiles[kind.profile]
        row = rs[d.kind]
        m = msg.deployments.add(
            name=kind.name,
            gpu_type=p.gpu_type,
            tensor_parallel=p.tensor_parallel,
            role=ROLES.index(kind.role) + 1,
            prefill_share=kind.prefill_share,
            instances=d.instances,
        )
        if loads:
            cap = max(1, d.instances)
            m.prefill_load = loads[i].prefill / (cap * row.prefill_cap) if row.prefill_cap else 0
            m.decode_load = loads[i].decode / (cap * row.decode_cap) if row.decode_cap else 0
            m.kv_load = loads[i].kv / (cap * row.kv_cap) if row.kv_cap else 0
    for r in solution.routes:
        ok = 0 <= r.deployment < len(solution.deployments) and 0 <= r.cls < len(instance.classes)
        dep = solution.deployments[r.deployment] if ok else None
        msg.routes.add(
            class_name=instance.classes[r.cls].name if ok else str(r.cls),
            deployment=ks[dep.kind].name if dep is not None and 0 <= dep.kind < len(ks) else "?",
            rate_per_s=r.rate_milli / MILLI,
        )
    report = check(instance, solution)
    if report.feasible:
        msg.goodput_per_s = (
            sum(
                r.rate_milli
                for r in solution.routes
                if ks[solution.deployments[r.deployment].kind].role != DECODE
            )
            / MILLI
        )
        msg.cost_per_hour = report.terms["cost_per_hour"]
        msg.gpus = sum(d.instances * gpus_of(instance, ks[d.kind]) for d in solution.deployments)
    return msg
