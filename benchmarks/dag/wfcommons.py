"""``dag-wfcommons``: the WfCommons workflows on heterogeneous machine sets.

The public workflows and, when the wfcommons package is installed, workflows its WfChef
recipes generate (:mod:`.wfcommons_recipes`), against HEFT, PEFT and CPOP and our bound.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from placement.benchmarks.dag.shared import (
    bar_plot,
    checked_makespan,
    chosen_cases,
    number_text,
    rounded,
    timed_solve,
)
from placement.benchmarks.dag.wfcommons_recipes import available, generate_workflow
from placement.benchmarks.tables import rule
from placement.models.dag.formats.loaders import load_wfcommons
from placement.models.dag.generate import machine_set
from placement.models.dag.greedy import cpop, heft, peft

WFCOMMONS_BACKEND = "cpsat"
WFCOMMONS_THREADS = 2
WFCOMMONS_QUICK = ["srasearch-chameleon-10a-001"]
WFCOMMONS_MACHINE_SETS: list[int | None] = [None, 1, 2]
"""The machine sets: None is ``default_machine_set()``, an integer the seed of
``generate.machine_set`` (--quick: the default one only)."""
WFCOMMONS_GENERATED = [
    ("blast", 300),
    ("cycles", 400),
    ("epigenomics", 500),
    ("1000genome", 600),
    ("montage", 700),
    ("seismology", 800),
    ("soykb", 900),
    ("srasearch", 1000),
]
"""Synthetic workflows drawn at run time by the wfcommons package's WfChef recipes
(:mod:`.wfcommons_recipes`), seed :data:`WFCOMMONS_SEED`: (recipe, at most this many tasks).
Skipped, with a note, when wfcommons is not installed; --quick: none."""
WFCOMMONS_SEED = 1


def _machine_set_name(seed: int | None) -> str:
    return "default" if seed is None else f"seed {seed}"


def cases_wfcommons(config: Any) -> list[dict[str, Any]]:
    """Each workflow JSON in the data folder (the smallest in --quick) and each generated
    workflow (:data:`WFCOMMONS_GENERATED`, when wfcommons is installed) on each machine
    set."""
    names = sorted(p.stem for p in config.data_dir("dag/wfcommons").glob("*.json"))
    sets = WFCOMMONS_MACHINE_SETS
    if config.quick:
        names = [n for n in names if n in WFCOMMONS_QUICK]
        sets = sets[:1]
        generated = []
    else:
        # available() imports wfcommons: seconds, and nothing --quick needs.
        generated = WFCOMMONS_GENERATED if available() is None else []
    out = [
        {"case": f"{name}@{_machine_set_name(seed)}", "workflow": name, "machine_seed": seed}
        for seed in sets
        for name in names
    ]
    out += [
        {
            "case": f"{recipe}-{tasks}-s{WFCOMMONS_SEED}@{_machine_set_name(seed)}",
            "workflow": f"{recipe}-{tasks}-s{WFCOMMONS_SEED}",
            "recipe": recipe,
            "tasks": tasks,
            "machine_seed": seed,
        }
        for seed in sets
        for recipe, tasks in generated
    ]
    return chosen_cases(out, config)


def run_wfcommons(case: dict[str, Any], config: Any) -> list[dict[str, Any]]:
    """HEFT (timed), PEFT, CPOP, then a portfolio solve (CP-SAT, 2 threads) of one workflow
    on one machine set; the gap between our schedule and our bound."""

    seed = case.get("machine_seed")
    machines, links = (None, None) if seed is None else machine_set(seed)
    if case.get("recipe"):
        instance = generate_workflow(
            case["recipe"], int(case["tasks"]), WFCOMMONS_SEED, machines, links
        )
    else:
        path = config.data_dir("dag/wfcommons") / f"{case['workflow']}.json"
        instance = load_wfcommons(path, machines, links)
    t0 = time.perf_counter()
    heft_solution = heft(instance)
    heft_wall = time.perf_counter() - t0
    h, h_invalid = checked_makespan(instance, heft_solution)
    p, p_invalid = checked_makespan(instance, peft(instance))
    c, c_invalid = checked_makespan(instance, cpop(instance))
    result, wall, load = timed_solve(
        instance, config.time_limit_s, WFCOMMONS_BACKEND, WFCOMMONS_THREADS
    )
    _, invalid = checked_makespan(instance, result.solution)
    ours = result.objective
    return [
        {
            "workflow": case["workflow"],
            "machines": _machine_set_name(seed),
            "tasks": len(instance.tasks),
            "edges": len(instance.edges),
            "heft_s": round(h, 4),
            "heft_wall_s": round(heft_wall, 3),
            "peft_s": round(p, 4),
            "cpop_s": round(c, 4),
            "ours_s": round(ours, 6),
            "vs_heft_pct": round(100 * (ours - h) / h, 3),
            "bound_s": rounded(result.bound, 6),
            "gap_pct": rounded(
                None if result.bound is None else 100 * (ours - result.bound) / ours, 4
            ),
            "room_pct": rounded(None if result.bound is None else 100 * (result.bound - h) / h, 2),
            "status": result.status.value,
            "source": result.backend,
            "wall_s": round(wall, 2),
            "load_1min": load,
            "invalid": h_invalid + p_invalid + c_invalid + invalid,
        }
    ]


def report_wfcommons(rows: list[dict[str, Any]], config: Any) -> str:
    """Per workflow and machine set: the three heuristics, ours, the change vs HEFT, our
    bound and the gap between our schedule and it; per machine set and overall the mean and
    largest gap and the workflows proved optimal."""

    lines = [
        "Machine sets: `default` is `default_machine_set()`: eight machines of three types "
        "(speed 2 / 1 / 0.5) in two zones (1.25 GB/s inside a zone, 125 MB/s and 20 ms "
        "between); `seed N` is `generate.machine_set(N)` (`placement import wfcommons PATH "
        "--machine-seed N`): eight machines, three types, two zones, speeds, slots and the "
        "inter-zone link drawn. Workflows: the eight public Pegasus instances of the data "
        "folder, and synthetic ones named `RECIPE-N-s1`, drawn at run time by the wfcommons "
        "package's WfChef recipe with at most N tasks, seed 1 "
        "(`benchmarks/dag/wfcommons_recipes.py`). Portfolio solves: "
        f"{WFCOMMONS_BACKEND}, {WFCOMMONS_THREADS} threads, {config.time_limit_s:g} s. "
        "Makespans in seconds; `gap` is (ours - bound) / ours, the most our schedule can be "
        "above the optimum; `room` is (bound - HEFT) / HEFT; `HEFT time` is HEFT alone; "
        "`load` is the 1-minute load average before each solve. `optimal` is proved on the "
        "real-valued times (formulation 5.1.1).",
    ]
    described = []
    for seed in WFCOMMONS_MACHINE_SETS:
        if seed is None or not any(r["machines"] == _machine_set_name(seed) for r in rows):
            continue
        machines, links = machine_set(seed)
        kinds = sorted({(m.type, m.speed) for m in machines}, key=lambda k: -k[1])
        described.append(
            f"- `seed {seed}`: "
            + ", ".join(
                f"{sum(m.type == k for m in machines)} {k} (speed {v:g}, slots "
                f"{'/'.join(str(m.slots) for m in machines if m.type == k)})"
                for k, v in kinds
            )
            + f"; zones a/b: {sum(m.zone == 'a' for m in machines)}/"
            f"{sum(m.zone == 'b' for m in machines)} machines, "
            f"{links[2].bandwidth_bytes_per_s / 1e6:g} MB/s and "
            f"{links[2].latency_s * 1e3:g} ms between."
        )
    if described:
        lines += ["", *described]
    lines += [
        "",
        "| workflow | machines | tasks | edges | HEFT | HEFT time | PEFT | CPOP | ours | "
        "vs HEFT | bound | gap | status | source | wall | load |",
        rule(16),
    ]
    for r in rows:
        gap = "" if r.get("gap_pct") in ("", None) else f"{float(r['gap_pct']):.3f} %"
        lines.append(
            f"| {r['workflow']} | {r['machines']} | {r['tasks']} | "
            f"{r['edges']} | {number_text(r['heft_s'])} | {float(r.get('heft_wall_s') or 0):.2f} s | "
            f"{number_text(r['peft_s'])} | {number_text(r['cpop_s'])} | {number_text(r['ours_s'])} | "
            f"{float(r['vs_heft_pct']):+.2f} % | {number_text(r['bound_s'])} | {gap} | {r['status']} | "
            f"{r['source']} | {r['wall_s']} s | {r['load_1min']} |"
        )
    lines.append("")

    def summary(label: str, mine: list[dict[str, Any]]) -> str:
        gaps = [float(r["gap_pct"]) for r in mine if r.get("gap_pct") not in ("", None)]
        ours = statistics.fmean(float(r["vs_heft_pct"]) for r in mine)
        proven = sum(str(r["status"]) == "optimal" for r in mine)
        worse = sum(float(r["vs_heft_pct"]) > 1e-9 for r in mine)
        text = f"- {label}: {len(mine)} solves, mean change vs HEFT {ours:+.2f} %"
        if gaps:
            text += (
                f"; gap to our bound mean **{statistics.fmean(gaps):.2f} %**, largest "
                f"{max(gaps):.2f} %"
            )
        text += f"; **{proven} proved optimal**; worse than HEFT: {worse}."
        return text

    for name in dict.fromkeys(str(r["machines"]) for r in rows):
        lines.append(summary(f"`{name}`", [r for r in rows if str(r["machines"]) == name]))
    public = [r for r in rows if "-chameleon-" in str(r["workflow"])]
    generated = [r for r in rows if "-chameleon-" not in str(r["workflow"])]
    if public and generated:
        lines.append(summary("public workflows", public))
        lines.append(summary("generated workflows (300-1,000 tasks)", generated))
    if not generated and not config.quick:
        why = available()
        if why:
            lines.append(f"- No generated workflows: {why}.")
    if generated:
        times = [float(r.get("heft_wall_s") or 0) for r in generated]
        lines.append(
            f"- HEFT on the generated workflows: at most {max(times):.2f} s "
            f"(median {statistics.median(times):.2f} s)."
        )
    lines += ["", summary("all", rows)]
    plot = f"{config.suite}.png"

    def rel(column: str) -> list[float | None]:
        return [
            None if r[column] in ("", None) else float(r[column]) / float(r["heft_s"]) for r in rows
        ]

    bar_plot(
        config.out / plot,
        "WfCommons workflows: makespan relative to HEFT",
        [
            str(r["workflow"]).replace("-chameleon", "").removesuffix("-001")
            + ("" if r["machines"] == "default" else f" ({r['machines']})")
            for r in rows
        ],
        {
            "PEFT": rel("peft_s"),
            "CPOP": rel("cpop_s"),
            "ours": rel("ours_s"),
            "bound": rel("bound_s"),
        },
        "makespan / HEFT's",
        config.command,
        hline=(1.0, "HEFT"),
    )
    lines += ["", f"![{plot}]({plot})"]
    return "\n".join(lines) + "\n"
