"""WfCommons workflows on a heterogeneous machine set: HEFT, PEFT and the exact backend.

Each of the eight Pegasus workflows in ../shared/benchmarks/dag/wfcommons runs on
``default_machine_set()`` (eight machines of three types in two zones; 1.25 GB/s inside a
zone, 125 MB/s and 20 ms between zones). Writes docs/benchmarks/dag-wfcommons.{csv,md}.

    python benchmarks/dag_wfcommons.py [--time-limit 30] [--backend cpsat] [--threads 2]
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "benchmarks" / "dag" / "wfcommons"
OUT_DIR = REPO / "docs" / "benchmarks"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--time-limit", type=float, default=30.0)
    parser.add_argument("--backend", default="cpsat")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", default="dag-wfcommons")
    args = parser.parse_args()
    if not DATA.is_dir():
        print(f"public benchmark data not found at {DATA}", file=sys.stderr)
        return 2
    from placement.models.dag.check import check
    from placement.models.dag.greedy import cpop, heft, peft
    from placement.models.dag.loaders import load_wfcommons
    from placement.solver import SolveOptions, solve

    command = (
        f"python benchmarks/dag_wfcommons.py --time-limit {args.time_limit:g} "
        f"--backend {args.backend} --threads {args.threads}"
    )
    rows = []
    for path in sorted(DATA.glob("*.json")):
        instance = load_wfcommons(path)
        h = check(instance, heft(instance)).objective
        p = check(instance, peft(instance)).objective
        c = check(instance, cpop(instance)).objective
        load = os.getloadavg()[0]
        t0 = time.perf_counter()
        result = solve(
            instance,
            SolveOptions(time_limit_s=args.time_limit, backend=args.backend, threads=args.threads),
        )
        wall = time.perf_counter() - t0
        rows.append(
            {
                "workflow": path.stem,
                "tasks": len(instance.tasks),
                "edges": len(instance.edges),
                "heft_s": round(h, 2),
                "peft_s": round(p, 2),
                "cpop_s": round(c, 2),
                "ours_s": round(result.objective, 2),
                "vs_heft_pct": round(100 * (result.objective - h) / h, 2),
                "bound_s": round(result.bound, 2) if result.bound is not None else "",
                "status": result.status.value,
                "source": result.backend,
                "wall_s": round(wall, 2),
                "load_1min": round(load, 2),
            }
        )
        print(rows[-1], flush=True)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    with open(OUT_DIR / f"{args.out}.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    mean = sum(r["vs_heft_pct"] for r in rows) / len(rows)
    lines = [
        f"# WfCommons workflows on 8 machines (3 types, 2 zones): {args.backend}, "
        f"{args.time_limit:g} s, {args.threads} threads",
        "",
        f"Reproduce: `{command}`. Makespans in seconds. The machine (2 cores) was shared with "
        "other engineers' work; `load` is the 1-minute load average before each solve.",
        "",
        "| workflow | tasks | edges | HEFT | PEFT | CPOP | ours | vs HEFT | bound | status | "
        "source | wall | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['workflow']} | {r['tasks']} | {r['edges']} | {r['heft_s']:,} | "
            f"{r['peft_s']:,} | {r['cpop_s']:,} | {r['ours_s']:,} | {r['vs_heft_pct']:+.2f} % | "
            f"{r['bound_s']} | {r['status']} | {r['source']} | {r['wall_s']} s | "
            f"{r['load_1min']} |"
        )
    lines += ["", f"Mean change vs HEFT: {mean:+.2f} %."]
    (OUT_DIR / f"{args.out}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(command)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
