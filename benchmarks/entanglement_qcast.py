"""Q-CAST's setting: our candidate-path MILP vs Q-CAST's greedy vs REPS-style rounding.

For each generated topology (Q-CAST's setup, seeds 0..T-1) it runs the Q-CAST greedy, the
REPS-style LP rounding, and ``placement solve --backend milp`` (HiGHS, 1 thread; the
portfolio's greedy phase included in the time), reports each routing's EXT (the checker's)
and its delivered pairs per slot simulated over ``--slots`` slots (fixed seed), and whether
the candidate-path model was proved optimal. Writes ``docs/benchmarks/entanglement-<name>``
``.csv`` / ``.md`` and prints the command that reproduces them.

    python benchmarks/entanglement_qcast.py default            # n=100, d=6, p=0.6, q=0.9
    python benchmarks/entanglement_qcast.py sweep-n --topologies 5
    python benchmarks/entanglement_qcast.py sweep-p --topologies 5
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT_DIR = REPO / "docs" / "benchmarks"

SETTINGS = {
    "default": [dict(nodes=100, degree=6, success=0.6, swap=0.9, pairs=10)],
    "sweep-n": [
        dict(nodes=n, degree=6, success=0.6, swap=0.9, pairs=10) for n in (50, 100, 200, 400)
    ],
    "sweep-p": [dict(nodes=100, degree=6, success=p, swap=0.9, pairs=10) for p in (0.3, 0.6, 0.9)],
}


def run_one(setting: dict, seed: int, k: int, time_limit: float, slots: int) -> dict:
    """One topology: the three routings, their EXT and simulated delivery."""
    from placement.models.entanglement import check
    from placement.models.entanglement.generate import generate
    from placement.models.entanglement.greedy import qcast_greedy
    from placement.models.entanglement.reps import reps_rounding
    from placement.models.entanglement.simulate import simulate
    from placement.solver import SolveOptions, solve

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
    row = {
        **setting,
        "seed": seed,
        "candidate_paths": k,
        "links": len(instance.links),
        "qcast_ext": check(instance, qcast).objective,
        "reps_ext": check(instance, reps).objective,
        "ours_ext": result.objective,
        "ours_source": result.backend,
        "ours_stop": result.stop_reason.value,
        "ours_bound": result.bound,
        "candidate_model_proved": "proved optimal" in result.message,
        "candidate_proof_s": _proof_seconds(result.message),
        "qcast_s": qcast_s,
        "reps_s": reps_s,
        "ours_s": ours_s,
        "ours_milp_s": result.phase_times_s.get("milp", 0.0),
    }
    for name, solution in (("qcast", qcast), ("reps", reps), ("ours", result.solution)):
        row[f"{name}_sim"] = simulate(instance, solution, slots=slots, seed=1000 + seed).weighted
    row["gain_vs_qcast"] = row["ours_ext"] / row["qcast_ext"] - 1 if row["qcast_ext"] else 0.0
    return row


def _proof_seconds(message: str) -> float | None:
    """The candidate model's proof time, from the MILP's note ("... proved optimal in X s")."""
    match = re.search(r"proved optimal in ([0-9.]+) s", message)
    return float(match.group(1)) if match else None


def _fmt_s(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


def _fmt(v: float) -> str:
    return f"{v:.3f}"


def write(name: str, rows: list[dict], command: str, load: str) -> None:
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    csv_path = OUT_DIR / f"entanglement-{name}.csv"
    with csv_path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    lines = [
        f"# Entanglement routing: {name}",
        "",
        f"Command: `{command}`",
        "",
        f"Machine: 2 cores shared with three other engineers' work; load at the start: {load}.",
        "EXT = expected end-to-end pairs per slot (the checker's); sim = mean delivered pairs",
        "per slot over the simulated slots (Monte Carlo, fixed seeds). Ours = `placement solve",
        "--backend milp` (HiGHS, 1 thread), whose time includes the greedy phase (Q-CAST).",
        "",
        "| n | p | seed | k | Q-CAST EXT | REPS EXT | ours EXT | gain vs Q-CAST | Q-CAST sim | REPS sim "
        "| ours sim | candidate model proved | ours s (proof s) | bound |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['nodes']} | {r['success']} | {r['seed']} | {r['candidate_paths']} | "
            f"{_fmt(r['qcast_ext'])} | {_fmt(r['reps_ext'])} | {_fmt(r['ours_ext'])} | "
            f"{100 * r['gain_vs_qcast']:+.1f}% | {_fmt(r['qcast_sim'])} | {_fmt(r['reps_sim'])} | "
            f"{_fmt(r['ours_sim'])} | {'yes' if r['candidate_model_proved'] else 'no'} | "
            f"{r['ours_s']:.1f} ({_fmt_s(r['candidate_proof_s'])}) | "
            f"{'-' if r['ours_bound'] is None else _fmt(r['ours_bound'])} |"
        )
    lines += ["", "Means per setting:", ""]
    lines.append(
        "| n | p | k | topologies | Q-CAST EXT | REPS EXT | ours EXT | mean gain vs Q-CAST "
        "| min / max gain | ours sim | proved | max proof s | max ours s |"
    )
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["nodes"], r["success"], r["candidate_paths"]), []).append(r)
    for (n, p, k), rs in groups.items():
        gains = [r["gain_vs_qcast"] for r in rs]
        lines.append(
            f"| {n} | {p} | {k} | {len(rs)} | {_fmt(statistics.mean(r['qcast_ext'] for r in rs))} | "
            f"{_fmt(statistics.mean(r['reps_ext'] for r in rs))} | "
            f"{_fmt(statistics.mean(r['ours_ext'] for r in rs))} | "
            f"{100 * statistics.mean(gains):+.1f}% | {100 * min(gains):+.1f}% / {100 * max(gains):+.1f}% | "
            f"{_fmt(statistics.mean(r['ours_sim'] for r in rs))} | "
            f"{sum(r['candidate_model_proved'] for r in rs)}/{len(rs)} | "
            f"{_fmt_s(max((r['candidate_proof_s'] or 0.0) for r in rs))} | "
            f"{max(r['ours_s'] for r in rs):.1f} |"
        )
    (OUT_DIR / f"entanglement-{name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("setting", choices=sorted(SETTINGS))
    parser.add_argument("--topologies", type=int, default=10)
    parser.add_argument("--candidate-paths", default="8", help="comma-separated k values")
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("--slots", type=int, default=1000)
    args = parser.parse_args(argv)
    command = "python benchmarks/entanglement_qcast.py " + " ".join(argv or sys.argv[1:])
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    load = load[load.find("load average") :] if "load average" in load else load
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    rows = []
    for setting in SETTINGS[args.setting]:
        for k in (int(v) for v in args.candidate_paths.split(",")):
            for seed in range(args.topologies):
                row = run_one(setting, seed, k, args.time_limit, args.slots)
                print(
                    f"n={row['nodes']} p={row['success']} k={k} seed={seed}: qcast "
                    f"{row['qcast_ext']:.3f} reps {row['reps_ext']:.3f} ours {row['ours_ext']:.3f} "
                    f"({100 * row['gain_vs_qcast']:+.1f}%, {row['ours_stop']}, {row['ours_s']:.1f} s)",
                    file=sys.stderr,
                )
                rows.append(row)
    write(args.setting, rows, command, load)
    return 0


if __name__ == "__main__":
    sys.exit(main())
