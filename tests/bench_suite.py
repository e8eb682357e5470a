"""A small benchmark suite for the runner's tests: real GPU instances, the real greedy and the
real checker; module-level functions so that worker processes and Ray tasks import them."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from placement.benchmarks.runner import BenchConfig, Suite, recheck, run_suite


def cases(config: Any) -> list[dict[str, Any]]:
    return [{"case": f"seed {s}", "seed": s, "mode": config.suite} for s in range(1, 4)]


def run(case: dict[str, Any], config: Any) -> list[dict[str, Any]]:
    from placement.models.gpu.generate import generate
    from placement.models.gpu.greedy import best_fit
    from placement.models.gpu.instance import GpuSolution

    instance = generate(32, 6, case["seed"])
    solution = best_fit(instance)
    mode = case["mode"]
    if mode == "broken" and case["seed"] == 2:
        # Every job gets the first placed job's workers: GPUs overcommitted, worker counts
        # wrong. The checker must reject it.
        first = next(iter(solution.placements.values()))
        solution = GpuSolution({j: first for j in range(len(instance.jobs))})
    if mode == "failing" and case["seed"] == 2:
        raise RuntimeError("this case fails on purpose")
    if mode == "slow" and case["seed"] > 1:
        time.sleep(60)
    report, invalid = recheck("gpu", instance, solution)
    row = {"seed": case["seed"], "objective": report.objective, "invalid": invalid}
    if mode == "no-invalid-column":
        del row["invalid"]
    return [row]


def report(rows: list[dict[str, Any]], config: Any) -> str:
    lines = ["| seed | objective | invalid |", "|---|---|---|"]
    lines += [f"| {r['seed']} | {r['objective']} | {r['invalid']} |" for r in rows]
    return "\n".join(lines) + "\n"


def suite(mode: str) -> Suite:
    return Suite(
        name=mode,
        family="gpu",
        help=f"runner test suite ({mode})",
        cases=cases,
        run=run,
        report=report,
    )


def config(mode: str, out: Path, jobs: int = 2, ray: str | None = None) -> BenchConfig:
    return BenchConfig(
        suite=mode,
        time_limit_s=1.0,
        quick=True,
        out=out,
        data=out,
        jobs=jobs,
        ray=ray,
        command=f"test {mode}",
    )


if __name__ == "__main__":
    # python -m tests.bench_suite MODE OUT [JOBS]: run the suite as a real process (the
    # interruption test sends it Ctrl-C).
    mode, out = sys.argv[1], Path(sys.argv[2])
    jobs = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    outcome = run_suite(suite(mode), config(mode, out, jobs), progress=False)
    print(f"finished={outcome.finished} interrupted={outcome.interrupted}", flush=True)
