"""The entanglement family's benchmark suites (``placement bench``).

* ``entanglement-qcast``: Q-CAST's setting (generated topologies); our candidate-path MILP
  (``placement solve --backend milp``, HiGHS, 1 thread, the portfolio's greedy phase included
  in the time) against Q-CAST's greedy and the REPS-style LP rounding. Three tables in one
  suite, as cases: *default* (n = 100, d = 6, p = 0.6, q = 0.9, 10 S-D pairs, k = 8 and 24
  candidate paths, 10 topologies), *sweep-n* (n = 50 .. 400, k = 8, 5 topologies) and
  *sweep-p* (p = 0.3, 0.6, 0.9, k = 8, 5 topologies), and the plot of the sweeps. A case is one
  (setting, k, topology seed); a case that several tables share (n = 100, p = 0.6, k = 8,
  seeds 0-4) runs once and appears in each.
* ``entanglement-topologies``: SURFnet and GEANT (the Internet Topology Zoo files of the
  public data) with fidelity thresholds: served requests, throughput, the max-min fairness
  variant and every unserved request's reason. One case per (topology, threshold).

Every routing a case produces (Q-CAST's, REPS's, ours, the fair one) goes through the family's
independent checker again (:func:`placement.benchmarks.runner.recheck`); a row's ``invalid`` counts
those it rejects plus the candidates the solver's own checker dropped (both must be 0).
"""

from __future__ import annotations

import json
import os
import re
import statistics
import time
from pathlib import Path
from typing import Any

from placement.benchmarks.runner import Rechecker, load_1min
from placement.benchmarks.tables import rule
from placement.models.entanglement.check import request_throughputs
from placement.models.entanglement.encoding import CandidateModel
from placement.models.entanglement.formats.topology_zoo import load_topology
from placement.models.entanglement.generate import generate
from placement.models.entanglement.greedy import qcast_greedy
from placement.models.entanglement.milp import solve_throughput
from placement.models.entanglement.peers.reps import reps_rounding
from placement.models.entanglement.sim.slots import simulate
from placement.solver import SolveOptions, solve
from placement.solver.backends.base import RunStatus
from placement.solver.cancel import CancellationToken

TOPOLOGY_DATA = "quantum/topologies"


def _fmt(v: float) -> str:
    return f"{v:.3f}"


def _fmt_s(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


# --- entanglement-qcast -----------------------------------------------------------------------


def _setting(nodes: int, success: float, pairs: int = 10) -> dict[str, Any]:
    return {"nodes": nodes, "degree": 6, "success": success, "swap": 0.9, "pairs": pairs}


QCAST_FULL: dict[str, Any] = {
    "tables": {
        "default": {"settings": [_setting(100, 0.6)], "k": (8, 24), "topologies": 10},
        "sweep-n": {
            "settings": [_setting(n, 0.6) for n in (50, 100, 200, 400)],
            "k": (8,),
            "topologies": 5,
        },
        "sweep-p": {
            "settings": [_setting(100, p) for p in (0.3, 0.6, 0.9)],
            "k": (8,),
            "topologies": 5,
        },
    },
    "slots": 1000,
}
QCAST_QUICK: dict[str, Any] = {
    "tables": {
        "default": {"settings": [_setting(20, 0.6, 3)], "k": (2, 4), "topologies": 1},
        "sweep-n": {
            "settings": [_setting(n, 0.6, 3) for n in (15, 20)],
            "k": (2,),
            "topologies": 1,
        },
        "sweep-p": {
            "settings": [_setting(20, p, 3) for p in (0.3, 0.6)],
            "k": (2,),
            "topologies": 1,
        },
    },
    "slots": 50,
}
TABLES = ("default", "sweep-n", "sweep-p")


def cases_qcast(config: Any) -> list[dict[str, Any]]:
    """One case per (setting, k, seed) any of the three tables needs (each once)."""
    # As the script did: one thread for OpenMP in the solvers (set before the local worker
    # processes start, which inherit it).
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    plan = QCAST_QUICK if config.quick else QCAST_FULL
    by_key: dict[tuple[Any, ...], dict[str, Any]] = {}
    for table, spec in plan["tables"].items():
        for setting in spec["settings"]:
            for k in spec["k"]:
                for seed in range(spec["topologies"]):
                    key = (*sorted(setting.items()), k, seed)
                    case = by_key.setdefault(
                        key,
                        {
                            "case": f"n={setting['nodes']} p={setting['success']} k={k} "
                            f"seed={seed}",
                            "setting": setting,
                            "k": k,
                            "seed": seed,
                            "slots": plan["slots"],
                            "tables": [],
                        },
                    )
                    case["tables"].append(table)
    return list(by_key.values())


def run_qcast(case: dict[str, Any], config: Any) -> list[dict[str, Any]]:
    """One topology: the three routings, their EXT (the checker's) and simulated delivery."""

    checked = Rechecker("entanglement")
    setting, seed, k, time_limit = case["setting"], case["seed"], case["k"], config.time_limit_s
    instance = generate(seed=seed, candidate_paths=k, **setting)
    options = SolveOptions(time_limit_s=time_limit, backend="milp", threads=1, seed=seed)
    t0 = time.perf_counter()
    qcast = qcast_greedy(instance)
    qcast_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    # The peer gets 4 x the time limit, so that its LP (a quarter of it) is not cut short.
    reps = reps_rounding(instance, SolveOptions(time_limit_s=4 * time_limit, threads=1))
    reps_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    result = solve(instance, options)
    ours_s = time.perf_counter() - t0
    kpath = _kpath_model(instance, qcast, options, checked)
    row = {
        "tables": " ".join(case["tables"]),
        **setting,
        "seed": seed,
        "candidate_paths": k,
        "links": len(instance.links),
        "qcast_ext": checked(instance, qcast).objective,
        "reps_ext": checked(instance, reps).objective,
        "ours_ext": result.objective,
        "ours_source": result.backend,
        "ours_stop": result.stop_reason.value,
        "ours_bound": result.bound,
        "candidate_model_proved": "proved optimal" in result.message,
        "candidate_proof_s": _proof_seconds(result.message),
        **kpath,
        "qcast_s": qcast_s,
        "reps_s": reps_s,
        "ours_s": ours_s,
        # The exact phase (its parts are named after what ran: colgen, highs, reroute).
        "ours_milp_s": sum(
            v for k, v in result.phase_times_s.items() if k not in ("greedy", "explain", "total")
        ),
    }
    checked.result(instance, result)
    for name, solution in (("qcast", qcast), ("reps", reps), ("ours", result.solution)):
        row[f"{name}_sim"] = simulate(
            instance, solution, slots=case["slots"], seed=1000 + seed
        ).weighted
    row["gain_vs_qcast"] = row["ours_ext"] / row["qcast_ext"] - 1 if row["qcast_ext"] else 0.0
    row["slots"] = case["slots"]
    row["load_1min"] = load_1min()
    return [{**row, **checked.columns()}]


def _proof_seconds(message: str) -> float | None:
    """The candidate model's proof time, from the MILP's note ("... proved optimal in X s")."""
    match = re.search(r"proved optimal in ([0-9.]+) s", message)
    return float(match.group(1)) if match else None


def _kpath_model(instance: Any, qcast: Any, options: Any, checked: Any) -> dict[str, Any]:
    """The issue's candidate-path model alone: the k shortest candidate paths per request
    and Q-CAST's paths, no column generation, solved by the same MILP (warm-started from
    Q-CAST, the same time limit): its EXT (the checker's), whether it was proved, and the
    seconds."""

    t0 = time.perf_counter()
    model = CandidateModel.build(instance, qcast)
    routing, run = solve_throughput(
        instance, model, options, CancellationToken(), options.time_limit_s, qcast
    )
    seconds = time.perf_counter() - t0
    return {
        "kpath_ext": checked(instance, routing or qcast).objective,
        "kpath_proved": run.status == RunStatus.OPTIMAL,
        "kpath_s": seconds,
        "kpath_binaries": len(model.items),
    }


def _qcast_tables(rows: list[dict[str, Any]]) -> list[str]:
    """The per-topology table and the means per setting, as the script wrote them."""
    lines = [
        "| n | p | seed | k | Q-CAST EXT | REPS EXT | ours EXT | gain vs Q-CAST | Q-CAST sim "
        "| REPS sim | ours sim | k-path model EXT (proof s) | ours: model proof s "
        "| ours s | bound | invalid |",
        rule(16),
    ]
    for r in rows:
        lines.append(
            f"| {r['nodes']} | {r['success']} | {r['seed']} | {r['candidate_paths']} | "
            f"{_fmt(r['qcast_ext'])} | {_fmt(r['reps_ext'])} | {_fmt(r['ours_ext'])} | "
            f"{100 * r['gain_vs_qcast']:+.1f}% | {_fmt(r['qcast_sim'])} | {_fmt(r['reps_sim'])} | "
            f"{_fmt(r['ours_sim'])} | {_kpath(r)} | "
            f"{_fmt_s(r['candidate_proof_s'])} | {r['ours_s']:.1f} | "
            f"{'-' if r['ours_bound'] is None else _fmt(r['ours_bound'])} | {r['invalid']} |"
        )
    lines += ["", "Means per setting:", ""]
    lines.append(
        "| n | p | k | topologies | Q-CAST EXT | REPS EXT | ours EXT | mean gain vs Q-CAST "
        "| min / max gain | ours sim | k-path model EXT | k-path model proved (max s) "
        "| ours: model proved (max s) | max ours s | bound vs Q-CAST (mean) "
        "| ours vs bound (mean) |"
    )
    lines.append(rule(16))
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["nodes"], r["success"], r["candidate_paths"]), []).append(r)
    for (n, p, k), rs in groups.items():
        gains = [r["gain_vs_qcast"] for r in rs]
        lines.append(
            f"| {n} | {p} | {k} | {len(rs)} | {_fmt(statistics.mean(r['qcast_ext'] for r in rs))} "
            f"| {_fmt(statistics.mean(r['reps_ext'] for r in rs))} | "
            f"{_fmt(statistics.mean(r['ours_ext'] for r in rs))} | "
            f"{100 * statistics.mean(gains):+.1f}% | {100 * min(gains):+.1f}% / "
            f"{100 * max(gains):+.1f}% | {_fmt(statistics.mean(r['ours_sim'] for r in rs))} | "
            f"{_fmt(statistics.mean(r['kpath_ext'] for r in rs))} | "
            f"{_proved(rs, 'kpath_proved', 'kpath_s')} | "
            f"{_proved(rs, 'candidate_model_proved', 'candidate_proof_s')} | "
            f"{max(r['ours_s'] for r in rs):.1f} | {_bound_gap(rs, 'qcast_ext')} | "
            f"{_bound_gap(rs, 'ours_ext')} |"
        )
    return lines


def _kpath(row: dict[str, Any]) -> str:
    """The k-path model's EXT and its proof time, or 'not proved'."""
    proof = f"{row['kpath_s']:.1f}" if row["kpath_proved"] else "not proved"
    return f"{_fmt(row['kpath_ext'])} ({proof})"


def _proved(rows: list[dict[str, Any]], proved: str, seconds: str) -> str:
    """'proved/total (max proof s)' over the rows."""
    times = [r[seconds] or 0.0 for r in rows if r[proved]]
    return f"{len(times)}/{len(rows)} ({_fmt_s(max(times, default=None))})"


def _bound_gap(rows: list[dict[str, Any]], key: str) -> str:
    """Mean of bound / ``key`` - 1 over the rows (the most any routing could gain over it);
    '-' when a row has no bound."""
    if any(r["ours_bound"] is None or not r[key] for r in rows):
        return "-"
    return f"{100 * statistics.mean(r['ours_bound'] / r[key] - 1 for r in rows):+.1f}%"


_TITLES = {
    "default": "Q-CAST's default setting",
    "sweep-n": "Sweep over the number of nodes n",
    "sweep-p": "Sweep over the mean link success p",
}


def report_qcast(rows: list[dict[str, Any]], config: Any) -> str:
    """The three tables (rows in setting, k, seed order) and the plot of the sweeps."""
    ordered = sorted(
        rows, key=lambda r: (r["nodes"], r["success"], r["candidate_paths"], r["seed"])
    )
    slots = rows[0]["slots"]
    out = [
        f"EXT = expected end-to-end pairs per slot (the checker's); sim = mean delivered pairs "
        f"per slot over {slots} simulated slots (Monte Carlo, fixed seeds). Ours = `placement "
        f"solve --backend milp` (HiGHS, 1 thread, time limit {config.time_limit_s:g} s), whose "
        "time includes the greedy phase (Q-CAST); the REPS-style rounding gets 4 x the time "
        "limit (its LP a quarter of it). Topologies from `placement generate entanglement "
        "--nodes N --degree 6 --success P --swap 0.9 --pairs K --seed S --candidate-paths k`. "
        "`invalid` counts the routings of the row the checker rejected.",
        "",
    ]
    for table in TABLES:
        members = [r for r in ordered if table in r["tables"].split()]
        if not members:
            continue
        out += [f"## {_TITLES[table]} ({table})", ""] + _qcast_tables(members) + [""]
    png = _plot_sweeps(ordered, config)
    if png is not None:
        out += [
            "## The sweeps",
            "",
            f"![Mean EXT and simulated delivery against n and p]({png.name})",
            "",
            f"`{png.name}`: mean EXT (solid) and simulated delivery (dashed) of each method "
            "over the topologies of each point.",
            "",
        ]
    return "\n".join(out)


_METHODS = (("qcast", "Q-CAST greedy"), ("reps", "REPS-style rounding"), ("ours", "ours (MILP)"))


def _plot_sweeps(rows: list[dict[str, Any]], config: Any) -> Path | None:
    """``<out>/entanglement-qcast-sweeps.png``: one panel per sweep that has rows."""
    import matplotlib  # plots only: matplotlib is slow to import and only the report draws

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after use("Agg"): pyplot takes that backend

    panels = []
    for table, key, label in (
        ("sweep-n", "nodes", "n (p = 0.6)"),
        ("sweep-p", "success", "mean link success p"),
    ):
        members = [r for r in rows if table in r["tables"].split()]
        if members:
            panels.append((members, key, label))
    if not panels:
        return None
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4.8), squeeze=False)
    for ax, (members, key, label) in zip(axes[0], panels, strict=True):
        xs = sorted({float(r[key]) for r in members})
        for m, name in _METHODS:
            ext = [statistics.mean(r[f"{m}_ext"] for r in members if r[key] == x) for x in xs]
            sim = [statistics.mean(r[f"{m}_sim"] for r in members if r[key] == x) for x in xs]
            line = ax.plot(xs, ext, marker="o", label=f"{name}: EXT")[0]
            ax.plot(
                xs, sim, ls="--", marker="x", color=line.get_color(), label=f"{name}: simulated"
            )
        ax.set_xlabel(label)
        ax.set_ylabel("pairs per slot (mean over topologies)")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.text(0.01, 0.01, config.command, fontsize=7, family="monospace")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    path = Path(config.out) / "entanglement-qcast-sweeps.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


# --- entanglement-topologies ------------------------------------------------------------------

TOPOLOGIES = {"SURFnet": ("Surfnet.gml", None), "GEANT": ("Geant2012.graphml", 100.0)}
"""Name -> (file, default link length in km: GEANT 2012's GraphML has no coordinates)."""
THRESHOLDS_FULL = (0.0, 0.85, 0.9, 0.95)
THRESHOLDS_QUICK = (0.0, 0.9)
PAIRS_FULL, PAIRS_QUICK = 10, 4
SLOTS_FULL, SLOTS_QUICK = 1000, 100


def cases_topologies(config: Any) -> list[dict[str, Any]]:
    """One case per (topology, threshold)."""
    thresholds = THRESHOLDS_QUICK if config.quick else THRESHOLDS_FULL
    return [
        {
            "case": f"{name} {threshold:g}",
            "topology": name,
            "file": str(config.data_dir(TOPOLOGY_DATA) / file),
            "default_length_km": length,
            "min_fidelity": threshold,
            "pairs": PAIRS_QUICK if config.quick else PAIRS_FULL,
            "slots": SLOTS_QUICK if config.quick else SLOTS_FULL,
        }
        for name, (file, length) in TOPOLOGIES.items()
        for threshold in thresholds
    ]


def run_topologies(case: dict[str, Any], config: Any) -> list[dict[str, Any]]:
    """Q-CAST's greedy, the REPS-style rounding and ours (throughput, then max-min fairness)
    on one imported topology at one threshold."""

    checked = Rechecker("entanglement")
    threshold = case["min_fidelity"]
    instance = load_topology(
        case["file"],
        min_fidelity=threshold,
        default_length_km=case["default_length_km"],
        pairs=case["pairs"],
    )
    options = SolveOptions(time_limit_s=config.time_limit_s, backend="milp", threads=1)
    qcast = qcast_greedy(instance)
    reps = reps_rounding(instance, SolveOptions(time_limit_s=4 * config.time_limit_s, threads=1))
    t0 = time.perf_counter()
    result = solve(instance, options)
    wall = time.perf_counter() - t0
    ours = checked.result(instance, result)
    row: dict[str, Any] = {
        "topology": case["topology"],
        "nodes": len(instance.nodes),
        "links": len(instance.links),
        "min_fidelity": threshold,
    }
    for label, sol in (("qcast", qcast), ("reps", reps), ("ours", result.solution)):
        served = request_throughputs(instance, sol)
        row[f"{label}_served"] = sum(1 for t in served if t > 1e-12)
        report = checked(instance, sol) if label != "ours" else ours
        row[f"{label}_ext"] = report.objective if report is not None else 0.0
        row[f"{label}_sim"] = simulate(instance, sol, case["slots"], seed=7).weighted
    row.update(
        {
            "ours_status": result.status.value,
            "ours_stop": result.stop_reason.value,
            "ours_bound": result.bound,
            "ours_s": wall,
        }
    )
    # The alternative objective on the same instance: max-min fairness first.
    instance.objective = "max_min"
    fair = solve(instance, options)
    checked.result(instance, fair)
    served = request_throughputs(instance, fair.solution)
    row.update(
        {
            "fair_served": sum(1 for t in served if t > 1e-12),
            "fair_min": fair.objective_terms["min_throughput"],
            "fair_ext": fair.objective_terms["weighted_throughput"],
            "fair_status": fair.status.value,
        }
    )
    instance.objective = "throughput"
    row["unserved"] = json.dumps(result.unplaced, sort_keys=True)
    row["pairs"] = case["pairs"]
    row["slots"] = case["slots"]
    row["load_1min"] = load_1min()
    return [{**row, **checked.columns()}]


def report_topologies(rows: list[dict[str, Any]], config: Any) -> str:
    """Served requests and throughput, the max-min variant, and the unserved requests."""
    order = list(TOPOLOGIES)
    rows = sorted(rows, key=lambda r: (order.index(r["topology"]), r["min_fidelity"]))
    pairs, slots = rows[0]["pairs"], rows[0]["slots"]
    lines = [
        f"{pairs} random S-D pairs (seed 0), 12 qubits per node, 5 channels per link, success",
        "exp(-0.01 x km) (SURFnet: haversine lengths; GEANT 2012: no coordinates in the file,",
        "100 km per link), link fidelity 0.97, swap 0.9 (`placement import quantum-topology`",
        "defaults). served = requests with throughput > 0; EXT = expected pairs per slot; sim =",
        f"mean delivered over {slots} simulated slots. Ours = `placement solve --backend milp`",
        f"(HiGHS, 1 thread, {config.time_limit_s:g} s); REPS-style rounding gets 4 x that.",
        "`invalid` counts the routings of the row (the four methods) the checker rejected.",
        "",
        "| topology | min fidelity | Q-CAST served / EXT / sim | REPS served / EXT / sim "
        "| ours served / EXT / sim | ours status | bound | time s | invalid |",
        rule(9),
    ]
    for r in rows:
        cells = [
            f"{r[f'{m}_served']} / {r[f'{m}_ext']:.3f} / {r[f'{m}_sim']:.3f}"
            for m in ("qcast", "reps", "ours")
        ]
        bound = "-" if r["ours_bound"] is None else f"{r['ours_bound']:.3f}"
        lines.append(
            f"| {r['topology']} | {r['min_fidelity']:g} | {' | '.join(cells)} | "
            f"{r['ours_status']} ({r['ours_stop']}) | {bound} | {r['ours_s']:.1f} | "
            f"{r['invalid']} |"
        )
    lines += [
        "",
        "The alternative objective, max-min fairness (smallest request throughput first, then",
        "the weighted throughput), with the same MILP and time limit:",
        "",
        "| topology | min fidelity | served | min throughput | weighted throughput | status |",
        rule(6),
    ]
    for r in rows:
        lines.append(
            f"| {r['topology']} | {r['min_fidelity']:g} | {r['fair_served']} | "
            f"{r['fair_min']:.3f} | {r['fair_ext']:.3f} | {r['fair_status']} |"
        )
    lines += [
        "",
        "Unserved requests of our solution, with the best fidelity any path reaches:",
        "",
        "| topology | min fidelity | request | reason | best fidelity | message |",
        rule(6),
    ]
    for r in rows:
        for u in json.loads(r["unserved"]):
            lines.append(
                f"| {r['topology']} | {r['min_fidelity']:g} | {u['name']} | {u['kind']} | "
                f"{u['best_fidelity']:.4f} | {u['message']} |"
            )
    return "\n".join(lines) + "\n"
