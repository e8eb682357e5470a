"""Standard Task Graph Set (Kasahara): P|prec|Cmax against the published optima and bounds.

For every case (graph, processors) of the chosen sizes: a portfolio solve (HEFT/PEFT/CPOP,
then the exact backend) with a time limit; on closed cases, whether the optimum is reached
and proven; on open cases (``lb,ub`` in the CSV), whether we lower the published upper bound,
raise the lower bound, or prove an optimum. Reads ../shared/benchmarks/dag/stg; writes
docs/benchmarks/dag-stg.{csv,md}.

    python benchmarks/dag_stg.py [--sizes 50,100] [--procs 2,4,8,16] [--time-limit 10]
        [--backend cpsat] [--threads 1] [--graphs 0-179]
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "benchmarks" / "dag" / "stg"
OUT_DIR = REPO / "docs" / "benchmarks"


def cases(sizes: list[int], procs: list[int], graphs: range) -> list[dict[str, object]]:
    """Every (path, m, opt | lb, ub) row of the chosen sizes and processor counts."""
    out = []
    for size in sizes:
        for m in procs:
            with open(DATA / "optimal" / f"Case{size}_{m}_OPT.csv", encoding="utf-8") as fh:
                for row in csv.reader(fh):
                    if not row or not row[0].endswith(".stg"):
                        continue
                    index = int(Path(row[0]).stem.removeprefix("rand"))
                    if index not in graphs:
                        continue
                    if len(row) == 3:
                        out.append({"path": row[0], "m": m, "opt": float(row[2])})
                    else:
                        out.append(
                            {"path": row[0], "m": m, "lb": float(row[2]), "ub": float(row[3])}
                        )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="50,100")
    parser.add_argument("--procs", default="2,4,8,16")
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("--backend", default="cpsat")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--graphs", default="0-179", help="graph indices, e.g. 0-179")
    parser.add_argument("--out", default="dag-stg")
    args = parser.parse_args()
    if not DATA.is_dir():
        print(f"public benchmark data not found at {DATA}", file=sys.stderr)
        return 2
    from placement.models.dag.loaders import load_stg
    from placement.solver import SolveOptions, solve

    lo, _, hi = args.graphs.partition("-")
    graphs = range(int(lo), int(hi or lo) + 1)
    sizes = [int(s) for s in args.sizes.split(",")]
    procs = [int(p) for p in args.procs.split(",")]
    command = (
        f"python benchmarks/dag_stg.py --sizes {args.sizes} --procs {args.procs} "
        f"--time-limit {args.time_limit:g} --backend {args.backend} --threads {args.threads} "
        f"--graphs {args.graphs}"
    )
    rows = []
    loads = []
    for case in cases(sizes, procs, graphs):
        instance = load_stg(DATA / str(case["path"]), int(case["m"]))
        loads.append(os.getloadavg()[0])
        t0 = time.perf_counter()
        result = solve(
            instance,
            SolveOptions(time_limit_s=args.time_limit, backend=args.backend, threads=args.threads),
        )
        wall = time.perf_counter() - t0
        proven = result.status.value == "optimal"
        # Costs are integers, so the optimum is too: the bound rounds up.
        bound = math.ceil(result.bound - 1e-6) if result.bound is not None else None
        row = {
            "graph": case["path"],
            "m": case["m"],
            "opt": case.get("opt", ""),
            "lb": case.get("lb", ""),
            "ub": case.get("ub", ""),
            "ours": result.objective,
            "bound": bound,
            "proven": proven,
            "source": result.backend,
            "wall_s": round(wall, 3),
        }
        rows.append(row)
        print(row, flush=True)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    with open(OUT_DIR / f"{args.out}.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)

    closed = [r for r in rows if r["opt"] != ""]
    reached = [r for r in closed if r["ours"] <= r["opt"] + 1e-9]
    proven = [r for r in closed if r["proven"]]
    wrong = [r for r in closed if r["ours"] < r["opt"] - 1e-9]
    open_ = [r for r in rows if r["opt"] == ""]
    lower_ub = [r for r in open_ if r["ours"] < r["ub"] - 1e-9]
    raise_lb = [r for r in open_ if r["bound"] is not None and r["bound"] > r["lb"] + 1e-9]
    new_proof = [r for r in open_ if r["proven"]]
    times = [r["wall_s"] for r in closed]
    lines = [
        f"# STG (Kasahara), sizes {args.sizes}, {args.procs} processors: {args.backend}, "
        f"{args.time_limit:g} s, {args.threads} thread(s)",
        "",
        f"Reproduce: `{command}`. Machine: {os.cpu_count()} cores; 1-minute load average "
        f"during the run: median {statistics.median(loads):.2f}, max {max(loads):.2f} (above "
        "the thread count, other work competed for the cores).",
        "",
        "| cases | closed | optimum reached | optimum proven | median time (closed) | "
        "open | open: UB lowered | open: LB raised | open: new proofs |",
        "|---|---|---|---|---|---|---|---|---|",
        f"| {len(rows)} | {len(closed)} | {len(reached)} ({100 * len(reached) / max(len(closed), 1):.1f} %) | "
        f"{len(proven)} ({100 * len(proven) / max(len(closed), 1):.1f} %) | "
        f"{statistics.median(times) if times else 0:.2f} s | {len(open_)} | {len(lower_ub)} | "
        f"{len(raise_lb)} | {len(new_proof)} |",
        "",
    ]
    if wrong:
        lines += [
            "**Below a published optimum (a bug or a wrong optimum):** "
            + ", ".join(f"{r['graph']}/{r['m']}" for r in wrong),
            "",
        ]
    misses = [r for r in closed if not r["proven"]]
    lines += ["## Closed cases not proven optimal within the limit", ""]
    if misses:
        lines += ["| graph | m | optimum | ours | our bound |", "|---|---|---|---|---|"]
        lines += [
            f"| {r['graph']} | {r['m']} | {r['opt']:g} | {r['ours']:g} | "
            f"{r['bound'] if r['bound'] is None else format(r['bound'], 'g')} |"
            for r in misses
        ]
    else:
        lines.append("None.")
    lines += ["", "## Open cases", ""]
    if open_:
        lines += [
            "| graph | m | published LB | published UB | ours | our bound | note |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in open_:
            notes = []
            if r["ours"] < r["ub"] - 1e-9:
                notes.append("UB lowered")
            if r["bound"] is not None and r["bound"] > r["lb"] + 1e-9:
                notes.append("LB raised")
            if r["proven"]:
                notes.append("**proven optimal**")
            lines.append(
                f"| {r['graph']} | {r['m']} | {r['lb']:g} | {r['ub']:g} | {r['ours']:g} | "
                f"{r['bound'] if r['bound'] is None else format(r['bound'], 'g')} | "
                f"{', '.join(notes)} |"
            )
    else:
        lines.append("None in this selection.")
    (OUT_DIR / f"{args.out}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(command)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
