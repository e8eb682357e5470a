"""Kant's metrics as a report table: one for every GPU suite that replays a trace over time
(the metrics themselves: :mod:`placement.models.gpu.sim.kant`, the ``kant_*`` columns of
:meth:`~placement.models.gpu.sim.kant.KantMetrics.row`)."""

from __future__ import annotations

import math
import statistics
from typing import Any

from placement.benchmarks.tables import rule

_COLUMNS = (
    ("GAR", "kant_gar", ".3f"),
    ("SOR", "kant_sor", ".3f"),
    ("GFR", "kant_gfr", ".3f"),
    ("wait p50 s", "kant_wait_p50_s", ",.1f"),
    ("wait p90 s", "kant_wait_p90_s", ",.1f"),
    ("wait p99 s", "kant_wait_p99_s", ",.1f"),
    ("JTTED p50 s", "kant_jtted_p50", ",.1f"),
    ("JTTED p90 s", "kant_jtted_p90", ",.1f"),
    ("still waiting", "kant_unstarted", ".1f"),
)


def _mean(rows: list[dict[str, Any]], key: str) -> float:
    values = [float(r[key]) for r in rows if r.get(key) not in (None, "")]
    values = [v for v in values if not math.isnan(v)]
    return statistics.fmean(values) if values else math.nan


def kant_table(rows: list[dict[str, Any]], label: str = "policy", counted: str = "") -> list[str]:
    """Kant's metrics per value of ``rows[label]``, means over the rows (the seeds); no table
    when the rows have no ``kant_*`` columns (rows written before the metrics existed).
    ``counted`` says what else counts in the rates (e.g. the pods running at time 0)."""
    rows = [r for r in rows if r.get("kant_gar") not in (None, "")]
    if not rows:
        return []
    lines = [
        "",
        "Kant's metrics (Zeng et al., arXiv:2510.01256; our reading of their definitions, "
        "`models/gpu/sim/kant.py`): *GAR* GPUs allocated / the cluster's, *SOR* GPUs allocated "
        "/ the GPUs the work present could use, *GFR* share of nodes partly allocated (all "
        f"three time averages{'; ' + counted if counted else ''}), *wait* the waiting-time "
        "distribution (s), *JTTED* the completion time (submit to end, s) of the jobs that "
        "ended.",
        "",
        f"| {label} | " + " | ".join(name for name, _, _ in _COLUMNS) + " |",
        rule(len(_COLUMNS) + 1),
    ]
    for value in dict.fromkeys(r[label] for r in rows):
        group = [r for r in rows if r[label] == value]
        cells = []
        for _, key, spec in _COLUMNS:
            v = _mean(group, key)
            cells.append("-" if math.isnan(v) else format(v, spec))
        lines.append(f"| {value} | " + " | ".join(cells) + " |")
    return lines
