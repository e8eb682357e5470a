"""The rows ``placement solve``'s summary shows of a serving configuration, from its JSON
form."""

from __future__ import annotations

from typing import Any


def summarize(section: dict[str, Any]) -> tuple[str, list[str]]:
    """Per deployment: instances and the fluid model's loads; then the routes per class."""
    rows = []
    for d in section.get("deployments", []):
        rows.append(
            f"{d.get('name', '?')}: {d.get('instances', 0)} instance(s), prefill "
            f"{100 * d.get('prefill_load', 0.0):.0f}%, decode {100 * d.get('decode_load', 0.0):.0f}"
            f"%, KV {100 * d.get('kv_load', 0.0):.0f}% (fluid model)"
        )
    per_class: dict[str, list[str]] = {}
    for r in section.get("routes", []):
        per_class.setdefault(r.get("class_name", "?"), []).append(
            f"{r.get('deployment', '?')} {r.get('rate_per_s', 0.0):g}/s"
        )
    rows.extend(f"class {c}: " + ", ".join(v) for c, v in per_class.items())
    rows.append(
        f"goodput {section.get('goodput_per_s', 0.0):g} req/s (fluid), cost "
        f"{section.get('cost_per_hour', 0.0):g}/h, {section.get('gpus', 0)} GPUs"
    )
    return "deployments", rows
