"""Greedy vs CP-SAT vs MILP-HiGHS vs MILP-CBC on generated GPU-allocation instances.

Each (size, seed, backend) solve runs in its own fresh process, so that peak memory (max RSS)
is that solve's alone. Writes docs/benchmarks/gpu-backends.csv and the Markdown table
docs/benchmarks/gpu-backends.md, and prints the command that reproduces them.

    python benchmarks/gpu_backends.py [--sizes 1024x200,10240x2000] [--seeds 1,2,3]
        [--time-limits 5,30] [--backends greedy,cpsat,milp-highs,milp-cbc]
"""

from __future__ import annotations

import argparse
import csv
import json
import multiprocessing as mp
import resource
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT_DIR = REPO / "docs" / "benchmarks"


def _solve_in_child(
    size: tuple[int, int], seed: int, backend: str, time_limit: float, queue: mp.Queue
) -> None:
    from placement.models.gpu.generate import generate
    from placement.models.gpu.greedy import best_fit
    from placement.solver import SolveOptions, solve

    gpus, jobs = size
    instance = generate(gpus, jobs, seed)
    # The fallback greedy alone (best of 3), apart from the portfolio's greedy phase, which
    # also runs FGD and checks both.
    fallback_s = []
    for _ in range(3):
        t0 = time.perf_counter()
        best_fit(instance)
        fallback_s.append(time.perf_counter() - t0)
    kind, _, milp = backend.partition("-")
    options = SolveOptions(
        time_limit_s=time_limit,
        backend=kind,
        milp_solver=milp or "highs",
        seed=seed,
    )
    t0 = time.perf_counter()
    result = solve(instance, options)
    wall = time.perf_counter() - t0
    greedies = [h for h in result.history if h.source.startswith("greedy")]
    greedy = greedies[-1] if greedies else None  # the best greedy (history only improves)
    queue.put(
        {
            "gpus": gpus,
            "jobs": jobs,
            "seed": seed,
            "backend": backend,
            "time_limit_s": time_limit,
            "status": result.status.value,
            "stop_reason": result.stop_reason.value,
            "placed_gpu_weighted": result.objective_terms.get("placed_gpu_weighted"),
            "comm_cost": result.objective_terms.get("comm_cost"),
            "fragmentation": result.objective_terms.get("fragmentation"),
            "bound": result.bound,
            "gap": result.gap,
            "greedy_objective": greedy.objective if greedy else None,
            "greedy_s": result.phase_times_s.get("greedy"),
            "best_fit_s": min(fallback_s),
            "source": result.backend,
            "wall_s": wall,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "unplaced": len(result.unplaced),
            "message": result.message,
        }
    )


def run_one(size: tuple[int, int], seed: int, backend: str, time_limit: float) -> dict:
    ctx = mp.get_context("spawn")
    queue: mp.Queue = ctx.Queue()
    proc = ctx.Process(target=_solve_in_child, args=(size, seed, backend, time_limit, queue))
    proc.start()
    # Hard wall: the time limit plus room for model building and the greedy phase.
    try:
        row = queue.get(timeout=time_limit * 3 + 120)
    except Exception:  # noqa: BLE001
        proc.kill()
        row = {
            "gpus": size[0],
            "jobs": size[1],
            "seed": seed,
            "backend": backend,
            "time_limit_s": time_limit,
            "status": "killed",
            "message": "overran 3x the time limit + 120 s",
        }
    proc.join()
    return row


def _from_csv(path: Path) -> list[dict]:
    rows = []
    with path.open() as fh:
        for raw in csv.DictReader(fh):
            row: dict = {}
            for k, v in raw.items():
                try:
                    row[k] = int(v)
                except ValueError:
                    try:
                        row[k] = float(v)
                    except ValueError:
                        row[k] = v or None
            rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sizes", default="1024x200,10240x2000")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--time-limits", default="5,30", help="one per size")
    ap.add_argument("--backends", default="greedy,cpsat,milp-highs,milp-cbc")
    ap.add_argument("--out", default=str(OUT_DIR))
    ap.add_argument(
        "--table-only",
        action="store_true",
        help="re-render the Markdown table from the CSV in --out without solving",
    )
    args = ap.parse_args(argv)
    sizes = [tuple(int(x) for x in s.split("x")) for s in args.sizes.split(",")]
    seeds = [int(s) for s in args.seeds.split(",")]
    limits = [float(t) for t in args.time_limits.split(",")]
    if len(limits) == 1:
        limits = limits * len(sizes)
    backends = args.backends.split(",")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    command = "python benchmarks/gpu_backends.py " + " ".join(
        f"--{k.replace('_', '-')} {v}"
        for k, v in [
            ("sizes", args.sizes),
            ("seeds", args.seeds),
            ("time_limits", args.time_limits),
            ("backends", args.backends),
        ]
    )
    print(f"reproduce with: {command}", file=sys.stderr)
    rows = []
    csv_path = out / "gpu-backends.csv"
    if args.table_only:
        (out / "gpu-backends.md").write_text(markdown(_from_csv(csv_path), command))
        return 0
    for size, limit in zip(sizes, limits, strict=True):
        for seed in seeds:
            for backend in backends:
                row = run_one(size, seed, backend, limit)
                rows.append(row)
                print(json.dumps(row), file=sys.stderr)
                # Keep partial results: rewrite the CSV after every solve.
                fields = sorted({k for r in rows for k in r})
                with csv_path.open("w", newline="") as fh:
                    w = csv.DictWriter(fh, fieldnames=fields)
                    w.writeheader()
                    w.writerows(rows)
    (out / "gpu-backends.md").write_text(markdown(rows, command))
    print(f"wrote {csv_path} and {out / 'gpu-backends.md'}", file=sys.stderr)
    return 0


def _fmt(v: object, spec: str = ".3f") -> str:
    if v is None or v == "":
        return "-"
    if isinstance(v, float):
        return format(v, spec)
    return str(v)


def markdown(rows: list[dict], command: str) -> str:
    lines = [
        "# GPU allocation: greedy vs CP-SAT vs MILP (HiGHS, CBC)",
        "",
        f"Reproduce: `{command}`",
        "",
        "Objective tiers are the checker's: placed priority-weighted GPUs (max), then",
        "communication cost (min), then fragmentation (min). `gap` is on the first tier,",
        "against the best bound proved for the whole instance. Each solve runs in a fresh",
        "process; `peak RSS` is that process's maximum resident memory.",
        "",
        "| GPUs | jobs | seed | backend | limit s | status | stop | placed | comm | frag | bound | gap | greedy placed | best-fit ms | greedy phase ms | wall s | peak RSS MiB | source |",
        "|---:|---:|---:|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            "| "
            + " | ".join(
                [
                    _fmt(r.get("gpus")),
                    _fmt(r.get("jobs")),
                    _fmt(r.get("seed")),
                    _fmt(r.get("backend")),
                    _fmt(r.get("time_limit_s"), ".0f"),
                    _fmt(r.get("status")),
                    _fmt(r.get("stop_reason")),
                    _fmt(r.get("placed_gpu_weighted"), ".1f"),
                    _fmt(r.get("comm_cost"), ".3f"),
                    _fmt(r.get("fragmentation"), ".2f"),
                    _fmt(r.get("bound"), ".1f"),
                    _fmt(r.get("gap"), ".4f"),
                    _fmt(r.get("greedy_objective"), ".1f"),
                    _fmt(r["best_fit_s"] * 1000 if r.get("best_fit_s") else None, ".1f"),
                    _fmt(r["greedy_s"] * 1000 if r.get("greedy_s") else None, ".1f"),
                    _fmt(r.get("wall_s"), ".2f"),
                    _fmt(r.get("peak_rss_mib"), ".0f"),
                    _fmt(r.get("source")),
                ]
            )
            + " |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
