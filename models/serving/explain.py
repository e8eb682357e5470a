"""Why part of the workload is not served: per class, the rate left out and what limits it."""

from __future__ import annotations

from typing import Any

from placement.models.serving.fluid import rows
from placement.models.serving.instance import (
    DECODE,
    MILLI,
    ServingInstance,
    ServingSolution,
    kinds,
)


def explain_unserved(instance: ServingInstance, solution: ServingSolution) -> list[dict[str, Any]]:
    """One reason per class served below its arrival rate: ``no_kind`` when no kind can meet
    both targets for it, else ``capacity`` (the GPUs or the budget run out first, under the
    fluid model)."""
    ks = kinds(instance)
    rs = rows(instance)
    served = [0] * len(instance.classes)
    for r in getattr(solution, "routes", ()):
        if (
            0 <= r.deployment < len(solution.deployments)
            and 0 <= r.cls < len(served)
            and ks[solution.deployments[r.deployment].kind].role != DECODE
        ):
            served[r.cls] += r.rate_milli
    out = []
    for c, (cls, rate) in enumerate(zip(instance.classes, instance.class_rates_milli, strict=True)):
        if served[c] >= rate:
            continue
        prefill = any(row.serves_prefill(c) for row in rs)
        decode = any(row.serves_decode(c) for row in rs)
        missing = (rate - served[c]) / MILLI
        if not (prefill and decode):
            phase = "prefill (TTFT)" if not prefill else "decode (TPOT or KV cache)"
            out.append(
                {
                    "name": cls.name,
                    "kind": "no_kind",
                    "message": f"class {cls.name!r}: no kind meets its {phase} target under the "
                    f"fluid model's load limits; {missing:g} req/s unserved",
                    "unserved_per_s": missing,
                }
            )
        else:
            out.append(
                {
                    "name": cls.name,
                    "kind": "capacity",
                    "message": f"class {cls.name!r}: {missing:g} of {rate / MILLI:g} req/s "
                    "unserved: the GPUs (or the budget) are used by what serves more per GPU",
                    "unserved_per_s": missing,
                }
            )
    return out
