"""The sharding family's benchmark suite (``placement bench sharding-dlrm``).

Per instance, every method's plan scored by the family's checker (TorchRec's cost model,
:mod:`placement.models.sharding.cost_model`):

* ``ours``: ``placement solve`` (the greedy heuristics, then CP-SAT with the best as hint)
  within the time limit, two threads; its bound and gap (proved under the cost model);
* ``torchrec``: TorchRec's ``EmbeddingShardingPlanner`` as it ships (the optional extra
  ``sharding-peers``; skipped, with the reason, when it does not import), with its own
  ``timeout_seconds`` at the suite's time limit (it keeps its best plan then);
* ``size-balanced``, ``lookup-balanced``: the textbook baselines
  (:mod:`placement.models.sharding.peers.balanced`);
* ``lpt-cost``: our fallback heuristic alone.

Instances: the 26 MLPerf DLRM-DCNv2 Criteo tables (the shared data's ``tables.csv``, MLPerf
row counts, ``hbm_gib`` GiB per device) on each topology, and generated sets
(:func:`placement.models.sharding.generate.generate`, seed ``seed``). Columns: the
bottleneck (max device cost) and the total communication in ms, the least HBM headroom over
devices (GiB), the bound and the gap (ours), whether the optimum is proved, the time.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from placement.benchmarks.runner import Rechecker
from placement.benchmarks.sharding import PARAMETERS
from placement.benchmarks.tables import markdown_table
from placement.models.sharding import FAMILY
from placement.models.sharding.check import device_loads
from placement.models.sharding.formats.mlperf import load_mlperf
from placement.models.sharding.generate import generate
from placement.models.sharding.greedy import greedy_solutions
from placement.models.sharding.instance import ShardingInstance
from placement.models.sharding.peers import torchrec_planner
from placement.models.sharding.peers.balanced import PEERS
from placement.solver import InputError, SolveOptions, solve

GIB = 1024**3
QUICK = {"topologies": ("8x1",), "generated": ("30@8x1",)}
MLPERF = "mlperf-dlrmv2-criteo/tables.csv"
METHODS = ("ours", "torchrec", "lpt-cost", "size-balanced", "lookup-balanced")


def _settings(config: Any) -> dict[str, Any]:
    params = {p.name: p.default for p in PARAMETERS}
    if config.quick:
        params.update(QUICK)
    params.update(config.params or {})
    return params


def _topology(text: str) -> tuple[int, int]:
    try:
        devices, hosts = (int(x) for x in text.split("x"))
    except ValueError:
        raise InputError.single("--param topologies", text, "DEVICESxHOSTS, e.g. 16x2") from None
    return devices, hosts


def cases(config: Any) -> list[dict[str, Any]]:
    """One case per (instance, topology)."""
    s = _settings(config)
    topologies = [_topology(t) for t in s["topologies"]]
    out = []
    tables = config.data_dir("sharding") / MLPERF
    for devices, hosts in topologies:
        # Without the shared tables the MLPerf rows say so (the generated sets still run).
        out.append(
            {"set": "mlperf", "tables": 26, "devices": devices, "hosts": hosts, "path": str(tables)}
        )
    for spec in s["generated"]:
        count, _, where = str(spec).partition("@")
        chosen = topologies if where in ("", "all") else [_topology(where)]
        for devices, hosts in chosen:
            out.append(
                {"set": "generated", "tables": int(count), "devices": devices, "hosts": hosts}
            )
    for case in out:
        case.update(hbm_gib=float(s["hbm_gib"]), seed=int(s["seed"]), torchrec=s["torchrec"])
    return out


def _instance(case: dict[str, Any]) -> ShardingInstance:
    if case["set"] == "mlperf":
        return load_mlperf(case["path"], case["devices"], case["hosts"], case["hbm_gib"])
    return generate(case["tables"], case["devices"], case["hosts"], seed=case["seed"])


def _row(
    case: dict[str, Any],
    inst: ShardingInstance,
    method: str,
    solution: Any,
    seconds: float,
    checker: Rechecker | None,
) -> dict[str, Any]:
    """The row of one method's plan. ``checker`` counts a rejected plan as invalid (ours and
    TorchRec's: a rejection is a bug, in an encoding or in reading TorchRec's plan); the
    balanced baselines go without (a plan over some device's HBM is their known failure,
    shown as infeasible with the checker's reason)."""
    before = checker.invalid if checker is not None else 0
    if solution is None:
        report = None
    elif checker is not None:
        report = checker(inst, solution)
    else:
        report = FAMILY.check(inst, solution)
    row = _blank_row(case, method, round(seconds, 2))
    row["feasible"] = int(bool(report and report.feasible))
    if report is not None and report.feasible:
        row["max_device_cost_ms"] = round(report.terms["max_device_cost_ns"] / 1e6, 6)
        row["total_comm_ms"] = round(report.terms["total_comm_ns"] / 1e6, 6)
        loads = device_loads(inst, solution)
        row["min_headroom_gib"] = round(
            min(d.hbm_bytes - ld.hbm_bytes for d, ld in zip(inst.devices, loads, strict=True))
            / GIB,
            3,
        )
    elif report is not None:
        row["note"] = report.violations[0][:120]
    row["invalid"] = (checker.invalid if checker is not None else 0) - before
    return row


def _blank_row(case: dict[str, Any], method: str, seconds: float, note: str = "") -> dict:
    """A row of ``method`` on ``case`` with no plan measured yet."""
    return {
        "set": case["set"],
        "tables": case["tables"],
        "devices": case["devices"],
        "hosts": case["hosts"],
        "method": method,
        "feasible": 0,
        "max_device_cost_ms": "",
        "total_comm_ms": "",
        "min_headroom_gib": "",
        "bound_ms": "",
        "gap_pct": "",
        "proven": "",
        "time_s": seconds,
        "note": note,
        "invalid": 0,
    }


def run(case: dict[str, Any], config: Any) -> list[dict[str, Any]]:
    """Every method on the case's instance: one row per method."""
    # The solver libraries load before the clock starts.
    from ortools.sat.python import cp_model  # noqa: F401  - start-up time, not measured

    if case["set"] == "mlperf" and not Path(case["path"]).is_file():
        return [_blank_row(case, "ours", 0.0, note=f"MLPerf tables absent: {case['path']}")]
    inst = _instance(case)
    rows = []
    checker = Rechecker("sharding")
    started = time.monotonic()
    result = solve(inst, SolveOptions(time_limit_s=config.time_limit_s, threads=2))
    checker.dropped(result.rejected_candidates)
    row = _row(case, inst, "ours", result.solution, time.monotonic() - started, checker)
    if result.bound is not None:
        row["bound_ms"] = round(result.bound / 1e6, 6)
    if result.gap is not None:
        row["gap_pct"] = round(100 * result.gap, 3)
    row["proven"] = (
        "both" if result.status.value == "optimal" else "bottleneck" if result.gap == 0 else ""
    )
    row["note"] = row["note"] or result.stop_reason.value
    rows.append(row)
    if case["torchrec"] == "yes":
        if torchrec_planner.available():
            started = time.monotonic()
            theirs = torchrec_planner.plan(inst, timeout_s=config.time_limit_s)
            row = _row(case, inst, "torchrec", theirs.solution, time.monotonic() - started, checker)
            row["note"] = row["note"] or theirs.error
            rows.append(row)
        else:
            row = _row(case, inst, "torchrec", None, 0.0, checker)
            row["note"] = "torchrec not installed (extra sharding-peers)"
            rows.append(row)
    started = time.monotonic()
    _, fallback = next(iter(greedy_solutions(inst, SolveOptions())))
    rows.append(_row(case, inst, "lpt-cost", fallback, time.monotonic() - started, None))
    for name, peer in PEERS.items():
        started = time.monotonic()
        solution = peer(inst)
        rows.append(_row(case, inst, name, solution, time.monotonic() - started, None))
    return rows


def _num(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def report(rows: list[dict[str, Any]], config: Any) -> str:
    """One table per instance set (rows: topology x method) and the issue's targets."""
    lines = [
        f"{config.time_limit_s:g} s per solve of ours (two threads); costs in ms under TorchRec's "
        "default cost model (per step: forward + backward compute and communication of the "
        "device's shards). `gap` is ours against the proved bound (a bound under the cost "
        "model). `headroom` is the least free HBM over devices.",
        "",
    ]
    keys = sorted(
        {(r["set"], int(r["tables"]), int(r["devices"]), int(r["hosts"])) for r in rows},
        key=lambda k: (k[0] != "mlperf", k[1], k[2]),
    )
    header = [
        "instance",
        "devices x hosts",
        "method",
        "max device cost",
        "total comm",
        "headroom GiB",
        "bound",
        "gap %",
        "proved",
        "time s",
        "note",
    ]
    body = []
    better = worse = ties = missing = 0
    within = total_ours = 0
    for key in keys:
        group = {
            r["method"]: r
            for r in rows
            if (r["set"], int(r["tables"]), int(r["devices"]), int(r["hosts"])) == key
        }
        label = "MLPerf DLRM (26)" if key[0] == "mlperf" else f"generated {key[1]}"
        for method in METHODS:
            r = group.get(method)
            if r is None:
                continue
            body.append(
                [
                    label,
                    f"{key[2]} x {key[3]}",
                    method,
                    "-" if r["max_device_cost_ms"] == "" else r["max_device_cost_ms"],
                    "-" if r["total_comm_ms"] == "" else r["total_comm_ms"],
                    "-" if r["min_headroom_gib"] == "" else r["min_headroom_gib"],
                    r["bound_ms"] or "",
                    r["gap_pct"],
                    r["proven"] or "",
                    r["time_s"],
                    str(r["note"])[:60],
                ]
            )
        ours, theirs = group.get("ours"), group.get("torchrec")
        if ours is not None:
            total_ours += 1
            gap = _num(ours.get("gap_pct"))
            if gap is not None and gap <= 1.0:
                within += 1
        if ours and theirs:
            a, b = _num(ours["max_device_cost_ms"]), _num(theirs["max_device_cost_ms"])
            if b is None:
                missing += 1
            elif a is not None and a < b - 1e-9:
                better += 1
            elif a is not None and abs(a - b) <= 1e-9:
                ca, cb = _num(ours["total_comm_ms"]), _num(theirs["total_comm_ms"])
                if ca is not None and cb is not None and ca < cb - 1e-9:
                    better += 1
                elif ca is not None and cb is not None and ca > cb + 1e-9:
                    worse += 1
                else:
                    ties += 1
            else:
                worse += 1
    lines += markdown_table(header, body)
    lines += [
        "",
        f"Against TorchRec's plan (bottleneck, then communication): ours better on {better}, "
        f"equal on {ties}, worse on {worse}; TorchRec without a plan on {missing}. "
        f"Proved within 1 % of the bound: {within} of {total_ours}.",
    ]
    return "\n".join(lines)
