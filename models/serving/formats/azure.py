"""The Azure LLM inference traces of 2023 (Splitwise, Patel et al., ISCA 2024;
Azure/AzurePublicDataset @ b469a113, ``data/AzureLLMInferenceTrace_{code,conv}.csv``, CC-BY-4.0)
as published: CSV ``TIMESTAMP,ContextTokens,GeneratedTokens``, wall-clock timestamps with seven
fractional digits, sorted.

:func:`read_trace` gives the requests (arrival in seconds from the first, prompt and output
tokens); :func:`length_classes` bins them into length classes (prompt edges 256, 1024, 2048,
4096; output edges 64, 256; each class at its members' mean lengths, its share their count);
the importer makes an instance of those classes at the trace's mean rate times
``--rate-scale``.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from placement.models.serving.generate import TARGET_PARAMETERS, cluster, cluster_parameters
from placement.models.serving.instance import LengthClass, ServingInstance, Slo
from placement.models.serving.profiles import MEASURED_MODEL
from placement.solver.errors import InputError
from placement.solver.hooks import Importer, Parameter

HEADER = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
INPUT_EDGES = (256, 1024, 2048, 4096)
OUTPUT_EDGES = (64, 256)


@dataclass(frozen=True)
class Request:
    """One request of a trace."""

    arrival_s: float
    input_tokens: int
    output_tokens: int


def _time(text: str) -> datetime:
    head, _, frac = text.strip().partition(".")
    return datetime.fromisoformat(f"{head}.{(frac + '000000')[:6]}" if frac else head)


def read_trace(path: str | Path, limit: int | None = None) -> list[Request]:
    """The requests of an Azure LLM trace CSV (the first ``limit`` when given); InputError
    naming the file and line on a malformed row."""
    path = Path(path)
    out: list[Request] = []
    try:
        handle = path.open(newline="", encoding="utf-8")
    except OSError as exc:
        raise InputError.single("trace", str(path), f"a readable file ({exc.strerror})") from None
    with handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None or tuple(h.strip() for h in header) != HEADER:
            raise InputError.single(
                "line 1", ",".join(header or []), ",".join(HEADER), file=str(path)
            )
        start = None
        for line, row in enumerate(reader, start=2):
            if limit is not None and len(out) >= limit:
                break
            try:
                t = _time(row[0])
                inp, outp = int(row[1]), int(row[2])
            except (ValueError, IndexError):
                raise InputError.single(
                    f"line {line}",
                    ",".join(row),
                    "a timestamp and two token counts",
                    file=str(path),
                ) from None
            start = t if start is None else start
            out.append(Request((t - start).total_seconds(), max(1, inp), max(1, outp)))
    if not out:
        raise InputError.single("trace", str(path), "at least one request", file=str(path))
    return out


def _bin(value: int, edges: tuple[int, ...]) -> int:
    return sum(value > e for e in edges)


def _label(b: int, edges: tuple[int, ...]) -> str:
    lo = 0 if b == 0 else edges[b - 1]
    return f"{lo}-{edges[b]}" if b < len(edges) else f"{lo}+"


def length_classes(requests: list[Request]) -> list[LengthClass]:
    """The requests binned into length classes (module docstring), non-empty bins only."""
    bins: dict[tuple[int, int], list[Request]] = {}
    for r in requests:
        bins.setdefault(
            (_bin(r.input_tokens, INPUT_EDGES), _bin(r.output_tokens, OUTPUT_EDGES)), []
        ).append(r)
    out = []
    for (bi, bo), members in sorted(bins.items()):
        n = len(members)
        out.append(
            LengthClass(
                f"in{_label(bi, INPUT_EDGES)}-out{_label(bo, OUTPUT_EDGES)}",
                max(1, round(sum(r.input_tokens for r in members) / n)),
                max(1, round(sum(r.output_tokens for r in members) / n)),
                float(n),
            )
        )
    return out


def mean_rate(requests: list[Request]) -> float:
    """Requests per second over the trace's span."""
    span = requests[-1].arrival_s - requests[0].arrival_s
    return len(requests) / span if span > 0 else float(len(requests))


def trace_instance(
    path: str | Path,
    a100: int = 16,
    h100: int = 0,
    budget: int = 0,
    rate_scale: float = 1.0,
    model: str = MEASURED_MODEL,
    ttft_ms: float = 2000.0,
    tpot_ms: float = 100.0,
    name: str | None = None,
    limit: int | None = None,
) -> ServingInstance:
    """An instance of the trace's length classes at its mean rate times ``rate_scale`` (of
    its first ``limit`` requests when given)."""
    requests = read_trace(path, limit)
    types, profiles = cluster(model, a100, h100)
    gpus = {g.name: g.count for g in types}
    rate = mean_rate(requests) * rate_scale
    stem = Path(path).stem
    return ServingInstance(
        types,
        profiles,
        length_classes(requests),
        round(rate, 3),
        Slo(ttft_ms, tpot_ms),
        budget,
        name=name or stem,
        description=(
            f"{stem}: {len(requests)} requests, mean rate x {rate_scale:g}; {model} on "
            + ", ".join(f"{n} {g}" for g, n in gpus.items())
            + (
                " (Splitwise's measured profiles)"
                if model == MEASURED_MODEL
                else " (roofline profiles from datasheets, not measured)"
            )
        ),
    )


def _build(p: dict[str, Any]) -> ServingInstance:
    return trace_instance(
        p["trace"],
        p["a100"],
        p["h100"],
        p["budget"],
        p["rate_scale"],
        p["model"],
        p["ttft_ms"],
        p["tpot_ms"],
        p.get("name"),
    )


IMPORTERS = (
    Importer(
        format="azure-llm",
        family="serving",
        help="an Azure LLM inference trace of 2023 (TIMESTAMP,ContextTokens,GeneratedTokens)",
        description=(
            "Read an Azure LLM inference trace as published, bin its requests into length "
            "classes and make a serving instance at its mean rate times --rate-scale."
        ),
        parameters=(
            Parameter("trace", "path", positional=True, metavar="TRACE.csv", help="the CSV"),
            *cluster_parameters(16),
            Parameter("rate_scale", "positive_float", 1.0, metavar="X", help="default 1"),
            *TARGET_PARAMETERS,
            Parameter("name", "str", None, help="instance name"),
        ),
        build=_build,
    ),
)
"""``placement import azure-llm``."""
