"""Fan-out workflows (BLAST, BWA, seismology) before and after a change, in one run.

Each case is solved twice, one after the other: by the code of an older tree (``--before``,
a folder holding a ``placement`` package, e.g. ``git archive COMMIT placement api benchmarks
models solver`` unpacked with the four folders moved under ``placement/``) and by the
installed one. Every solve is a portfolio solve (CP-SAT, 2 threads, ``--time-limit``
seconds) in its own process; its schedule goes through the checker. One CSV row per solve
(``--out``) and a Markdown table on stdout. Generated workflows need the wfcommons package.

    python -m placement.benchmarks.dag.fanout_before_after --before /tmp/base --out rows.csv
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys

CASES = [
    "blast:50:1",
    "blast:100:1",
    "blast:200:1",
    "blast:300:1",
    "bwa:110:1",
    "bwa:200:1",
    "bwa:300:1",
    "seismology-chameleon-100p-001",
    "blast:50:1@1",
    "blast:100:1@1",
    "blast:100:1@2",
]
"""``RECIPE:TASKS:SEED[@MACHINE_SEED]`` (generated, seed ``SEED``; the default machine set or
``generate.machine_set(MACHINE_SEED)``) or a public workflow of ``dag/wfcommons``. BWA's
recipe draws at least 106 tasks."""

_ONE = r"""
import json, os, sys, time
from placement.benchmarks.dag.shared import checked_makespan
from placement.models.dag.generate import machine_set
from placement.models.dag.greedy import heft
from placement.solver import SolveOptions, solve
spec, limit, data = sys.argv[1], float(sys.argv[2]), sys.argv[3]
seed = None
if "@" in spec:
    spec, seed = spec.split("@")
    seed = int(seed)
machines, links = (None, None) if seed is None else machine_set(seed)
if ":" in spec:
    from placement.benchmarks.dag.wfcommons_recipes import generate_workflow
    recipe, tasks, wseed = spec.split(":")
    instance = generate_workflow(recipe, int(tasks), int(wseed), machines, links)
else:
    from placement.models.dag.formats.loaders import load_wfcommons
    instance = load_wfcommons(os.path.join(data, spec + ".json"), machines, links)
h, _ = checked_makespan(instance, heft(instance))
load = os.getloadavg()[0]
t0 = time.perf_counter()
result = solve(instance, SolveOptions(time_limit_s=limit, backend="cpsat", threads=2))
wall = time.perf_counter() - t0
ours, invalid = checked_makespan(instance, result.solution)
print(json.dumps({"tasks": len(instance.tasks), "heft": h, "ours": ours, "bound": result.bound,
                  "status": result.status.value, "source": result.backend, "wall": wall,
                  "load": load, "invalid": invalid}))
"""


def _solve(spec: str, limit: float, data: str, tree: str | None) -> dict:
    env = dict(os.environ)
    if tree:
        env["PYTHONPATH"] = tree
    out = subprocess.run(
        [sys.executable, "-c", _ONE, spec, str(limit), data],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd="/",
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, help="folder holding the older placement")
    parser.add_argument("--out", required=True, help="CSV file to write")
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--data", default="/work/shared/benchmarks/dag/wfcommons")
    parser.add_argument("--cases", nargs="*", default=CASES)
    args = parser.parse_args(argv)
    rows = []
    for spec in args.cases:
        for side, tree in (("before", args.before), ("after", None)):
            r = _solve(spec, args.time_limit, args.data, tree)
            gap = None if r["bound"] is None else 100 * (r["ours"] - r["bound"]) / r["ours"]
            row = {"case": spec, "side": side, **r, "gap_pct": gap}
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    with open(args.out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(
        "| workflow | tasks | HEFT | before: ours | bound | gap | load | after: ours | bound "
        "| gap | load |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for i in range(0, len(rows), 2):
        b, a = rows[i], rows[i + 1]
        print(
            f"| {b['case']} | {b['tasks']} | {b['heft']:,.2f} | {b['ours']:,.2f} | "
            f"{b['bound']:,.2f} | {b['gap_pct']:.2f} % | {b['load']:.1f} | {a['ours']:,.2f} | "
            f"{a['bound']:,.2f} | {a['gap_pct']:.2f} % | {a['load']:.1f} |"
        )


if __name__ == "__main__":
    main()
