"""Independent checker of a replay: it reads only the replay's records, never the event loop.

Rules: every request of the stream is served or rejected, exactly once; a served request's
prefill ran on a mixed or prefill instance and its decode on the same mixed instance (or its
AcceLLM partner, which must hold a replica of its KV cache) or on a decode instance; its times are in order (arrival <= first token <= finish); every request that
ran on an instance held one KV reservation there, covering its stay; a request that migrated
between L4 stages (its ``path``) went from its prefill instance to instances of strictly later
stages, ends on its decode instance, and its KV cache was always held somewhere (each
instance's reservation lasts until the next one's starts); at no time does an instance's
reserved KV cache exceed its capacity (a sweep over the reservations).
"""

from __future__ import annotations

from typing import Any

from placement.models.serving.instance import DECODE, MIXED, PREFILL


def check_replay(replay: Any) -> list[str]:
    """Every violation of the rules (empty: the replay is sound)."""
    out: list[str] = []
    ids = [r.id for r in replay.requests]
    seen: dict[int, int] = {}
    for s in replay.served:
        seen[s.id] = seen.get(s.id, 0) + 1
    for rid in replay.rejected:
        seen[rid] = seen.get(rid, 0) + 1
    for rid in ids:
        if seen.get(rid, 0) != 1:
            out.append(f"request {rid}: served or rejected {seen.get(rid, 0)} times, not once")
    extra = set(seen) - set(ids)
    if extra:
        out.append(f"{len(extra)} records of requests the stream lacks")
    roles = [i.kind.role for i in replay.instances]
    held: dict[tuple[int, int], tuple[float, float]] = {}
    for inst, start, end, _, rid in replay.kv_reservations:
        if (inst, rid) in held:
            out.append(f"request {rid}: two KV reservations on instance {inst}")
        held[(inst, rid)] = (start, end)
    for s in replay.served:
        if not s.arrival_s <= s.first_token_s <= s.finish_s:
            out.append(f"request {s.id}: times out of order or missing")
            continue
        if roles[s.prefill_instance] not in (MIXED, PREFILL):
            out.append(f"request {s.id}: prefilled on a {roles[s.prefill_instance]} instance")
        partner = getattr(replay.instances[s.prefill_instance], "partner", -1)
        path = getattr(s, "path", [])
        if path:
            out.extend(_path_violations(replay, s, [s.prefill_instance, *path], held))
        elif roles[s.prefill_instance] == MIXED and s.decode_instance not in (
            s.prefill_instance,
            partner,
        ):
            out.append(f"request {s.id}: prefilled on a mixed instance, decoded elsewhere")
        if partner >= 0 and (partner, s.id) not in held:
            out.append(f"request {s.id}: no KV replica on the pair's other instance")
        if roles[s.prefill_instance] == PREFILL and s.output_tokens > 1:
            if roles[s.decode_instance] != DECODE:
                out.append(f"request {s.id}: decoded on a {roles[s.decode_instance]} instance")
            window = held.get((s.decode_instance, s.id))
            if window is None or window[1] < s.finish_s - 1e-12:
                out.append(f"request {s.id}: no KV reservation covering its decode")
        if (s.prefill_instance, s.id) not in held:
            out.append(f"request {s.id}: no KV reservation for its prefill")
    for k, inst in enumerate(replay.instances):
        events = sorted(
            [(start, 1, size) for i, start, _, size, _ in replay.kv_reservations if i == k]
            + [(end, 0, -size) for i, _, end, size, _ in replay.kv_reservations if i == k]
        )
        used = peak = 0
        for _, _, delta in events:
            used += delta
            peak = max(peak, used)
        if peak > inst.kv_capacity_bytes:
            out.append(
                f"instance {k}: KV cache over-committed, {peak} bytes reserved of "
                f"{inst.kv_capacity_bytes}"
            )
    return out


def _path_violations(
    replay: Any, s: Any, path: list[int], held: dict[tuple[int, int], tuple[float, float]]
) -> list[str]:
    """The rules of a request that migrated along L4 stages (module docstring)."""
    out: list[str] = []
    stages = [getattr(replay.instances[i], "stage", -1) for i in path]
    if any(b <= a or a < 0 for a, b in zip(stages, stages[1:], strict=False)):
        out.append(f"request {s.id}: migrated along stages {stages}, not strictly downstream")
    if s.decode_instance != path[-1]:
        out.append(f"request {s.id}: its path ends on {path[-1]}, not its decode instance")
    for a, b in zip(path, path[1:], strict=False):
        here, there = held.get((a, s.id)), held.get((b, s.id))
        if here is None or there is None:
            out.append(f"request {s.id}: no KV reservation on instance {a if here is None else b}")
        elif here[1] < there[0] - 1e-12:
            out.append(f"request {s.id}: its KV cache was held nowhere between {a} and {b}")
    window = held.get((s.decode_instance, s.id))
    if window is not None and window[1] < s.finish_s - 1e-12:
        out.append(f"request {s.id}: no KV reservation covering its decode")
    return out
