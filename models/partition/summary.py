"""The rows ``placement solve``'s summary shows of a partition solution, from its JSON form."""

from __future__ import annotations

from typing import Any


def summarize(section: dict[str, Any]) -> tuple[str, list[str]]:
    """Stage by stage: its range of consecutive layers and the device it runs on (flow mode:
    each device's layer range, by first layer; serving plans: each pipeline's stages; a
    quantized edge split: the device layers and their bit-widths)."""
    if section.get("edge_split"):
        choice = section["edge_split"]
        bits = [int(b) for b in choice.get("bits", [])]
        p = int(choice.get("device_layers", 0))
        if not p:
            return "edge split", ["every layer on the server (the input goes up)"]
        return "edge split", [
            f"layers 0..{p - 1} on the device at {'/'.join(map(str, bits))} bits, "
            f"the rest on the server"
        ]
    if section.get("pipelines"):
        rows = []
        for p, pipe in enumerate(section["pipelines"], start=1):
            for s, st in enumerate(pipe.get("stages", []), start=1):
                first, count = int(st.get("first_layer", 0)), int(st.get("layer_count", 0))
                devices = st.get("devices", [])
                tp = f" (tensor-parallel x{len(devices)})" if len(devices) > 1 else ""
                rows.append(
                    f"pipeline {p}, stage {s}: layers {first}..{first + count - 1} ({count}) -> "
                    f"{', '.join(devices) or '?'}{tp}"
                )
        return "pipelines", rows
    if section.get("ranges"):
        held = sorted(
            section["ranges"],
            key=lambda r: (r.get("first_layer", 0), r.get("layer_count", 0), r.get("device", "")),
        )
        rows = []
        for r in held:
            first, count = int(r.get("first_layer", 0)), int(r.get("layer_count", 0))
            rows.append(f"layers {first}..{first + count - 1} ({count}) -> {r.get('device', '?')}")
        return "ranges", rows
    stages: list[list[Any]] = []  # [device, first layer, last layer, count]
    for a in section.get("assignments", []):
        device, layer = a.get("device", "?"), a.get("layer", "?")
        if stages and stages[-1][0] == device:
            stages[-1][2] = layer
            stages[-1][3] += 1
        else:
            stages.append([device, layer, layer, 1])
    rows = []
    for i, (device, first, last, count) in enumerate(stages, start=1):
        span = first if count == 1 else f"{first}..{last}"
        rows.append(f"{i:>2}. {span} ({count} layer{'s' if count != 1 else ''}) -> {device}")
    return "stages", rows
