"""``grid-hcsp``: Braun-protocol ETC files as large as the hcsp collection's, written in the
published text format and read back through ``placement import braun``.

The hcsp collection (chgogos/hcsp, the source of the bundled 512 x 16 set) also publishes
2,048 x 64 instances whose values are far beyond the 512 x 16 ones: its ``u_s_hihi`` sums to
1.02e10 s of worst-machine time, with a published (CPR) makespan near 9.2e6. Those files are
not in the shared data, so this suite draws the 12 classes at 2,048 x 64 and 4,096 x 128 by
the same protocol (:mod:`placement.models.dag.braun`) in ETC units times
:data:`~placement.models.dag.braun.HCSP_FACTOR` (at least as large as hcsp's), writes each as
an ETC file in a temporary folder (never in the repository), imports it with the command line, and solves the imported file
(``--backend auto``) at the time limit. It measures that the family's range guard takes
these instances and what a solve reaches on them; the reference is our own bound.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from placement.api.files import read_instance
from placement.benchmarks.dag.grid_large import parse_size
from placement.benchmarks.runner import load_1min, recheck
from placement.models.dag.braun import CLASSES, HCSP_FACTOR, BraunClass, braun_etc, write_etc
from placement.solver import SolveOptions, solve

FAMILY_NAME = "dag"
HCSP_SIZES = ("2048x64", "4096x128")
HCSP_QUICK = {"sizes": ("64x4",), "classes": ("u_s_hihi",)}


def _settings(config: Any) -> dict[str, Any]:
    params: dict[str, Any] = {
        "sizes": HCSP_SIZES,
        "classes": tuple(c.name for c in CLASSES),
        "seed": 0,
        "factor": HCSP_FACTOR,
        "threads": 2,
    }
    if config.quick:
        params.update(HCSP_QUICK)
    params.update(config.params or {})
    return params


def cases_grid_hcsp(config: Any) -> list[dict[str, Any]]:
    """One case per (size, class), the largest size first."""
    s = _settings(config)
    sizes = sorted((parse_size(v) for v in s["sizes"]), key=lambda nk: -nk[0] * nk[1])
    return [
        {
            "case": f"{BraunClass.parse(c).name}-{n}x{k}",
            "klass": BraunClass.parse(c).name,
            "tasks": n,
            "machines": k,
            "seed": int(s["seed"]),
            "factor": float(s["factor"]),
            "threads": int(s["threads"]),
        }
        for n, k in sizes
        for c in s["classes"]
    ]


def run_grid_hcsp(case: dict[str, Any], config: Any) -> list[dict[str, Any]]:
    """Write the ETC file, ``placement import braun`` it, solve the imported instance."""
    n, k = int(case["tasks"]), int(case["machines"])
    etc = braun_etc(n, k, BraunClass.parse(case["klass"]), int(case["seed"])) * case["factor"]
    with tempfile.TemporaryDirectory(prefix="grid-hcsp-") as tmp:
        src = write_etc(Path(tmp) / f"{case['case']}.etc", etc)
        dst = Path(tmp) / f"{case['case']}.json"
        t0 = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "placement.api.cli", "import", "braun", str(src)]
            + ["--out", str(dst)],
            capture_output=True,
            text=True,
            timeout=600,
        )
        import_s = time.perf_counter() - t0
        instance = None if done.returncode else read_instance(dst).instance
    row: dict[str, Any] = {
        "class": case["klass"],
        "size": f"{n}x{k}",
        "worst_sum": float(etc.max(axis=1).sum()),
        "import_s": round(import_s, 2),
        "import_error": done.stderr.strip() if done.returncode else "",
        "makespan": "",
        "bound": "",
        "gap_pct": "",
        "status": "refused" if done.returncode else "",
        "stop": "",
        "wall_s": "",
        "load_1min": load_1min(),
        "invalid": 0,
    }
    if instance is None:
        return [row]
    t0 = time.perf_counter()
    result = solve(
        instance,
        SolveOptions(
            time_limit_s=config.time_limit_s, backend="auto", threads=int(case["threads"])
        ),
    )
    wall = time.perf_counter() - t0
    report, invalid = recheck(FAMILY_NAME, instance, result.solution)
    ours = None if report is None else float(report.objective)
    bound = result.bound
    row.update(
        makespan="" if ours is None else round(ours, 1),
        bound="" if bound is None else round(float(bound), 1),
        gap_pct=""
        if ours is None or bound is None
        else round(100 * (ours - float(bound)) / ours, 3),
        status=result.status.value,
        stop=result.stop_reason.value,
        wall_s=round(wall, 1),
        invalid=invalid,
    )
    return [row]


def report_grid_hcsp(rows: list[dict[str, Any]], config: Any) -> str:
    """One line per file: class, size, worst-machine sum, makespan, bound, gap, status."""
    lines = [
        f"Braun-protocol ETC files at hcsp scale (ETC units x {_settings(config)['factor']:g}), "
        "written in the published format, read back with `placement import braun` and solved "
        f"(`--backend auto`, {config.time_limit_s:g} s). `worst sum` is every task's slowest "
        "time added up (what the old guard measured); `gap` is (makespan - bound) / makespan "
        "with our bound (valid for the whole instance); `load` the 1-minute load average "
        "before the solve.",
        "",
        "| class | size | worst sum | makespan | bound | gap | status | time | load |",
        "|---|---|--:|--:|--:|--:|---|--:|--:|",
    ]
    order = {s: i for i, s in enumerate(HCSP_SIZES)}
    for r in sorted(rows, key=lambda r: (order.get(r["size"], 99), r["class"])):
        gap = r["gap_pct"]
        lines.append(
            f"| {r['class']} | {r['size']} | {float(r['worst_sum']):.3g} | "
            + (f"{float(r['makespan']):,.1f}" if r["makespan"] != "" else "")
            + " | "
            + (f"{float(r['bound']):,.1f}" if r["bound"] != "" else "")
            + f" | {'' if gap == '' else f'{float(gap):.3f} %'} | {r['status']} "
            f"({r['stop']}) | {r['wall_s']} s | {r['load_1min']} |"
        )
    refused = [r for r in rows if r["import_error"]]
    if refused:
        lines += ["", "Refused by `placement import braun`:", ""]
        lines += [f"- {r['class']} {r['size']}: {r['import_error']}" for r in refused]
    return "\n".join(lines) + "\n"
