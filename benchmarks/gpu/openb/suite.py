"""``placement bench gpu-openb``: the cases, the run of one case and the report.

``--trace FILE`` (repeatable), ``--seeds A-B`` and ``--modes LIST`` choose the traces, seeds
and modes (:data:`MODE_HELP`); each mode word becomes cases of one experiment, each run
re-checks every placement it made, and the report puts the experiments' tables together.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

import numpy as np

from placement.benchmarks.gpu.openb.bounds import CONFIG_BOUND_MODES, bound_table
from placement.benchmarks.gpu.openb.curve import CURVE_STARTS, curve_table, plot_curve, run_curve
from placement.benchmarks.gpu.openb.defragmentation import DEFRAG_BUDGETS, defrag_tables
from placement.benchmarks.gpu.openb.departures import (
    DEPARTURE_MODES,
    departure_repack_settings,
    departure_tables,
    plot_departures,
    run_departures,
)
from placement.benchmarks.gpu.openb.latency import latency_table, run_latency
from placement.benchmarks.gpu.openb.modes import modes_section, plot_modes
from placement.benchmarks.gpu.openb.peers import (
    ablation_section,
    peers_section,
    plot,
    published,
    summary,
)
from placement.benchmarks.gpu.openb.repacking import repack_settings, repack_table
from placement.benchmarks.gpu.openb.replays import run_case
from placement.benchmarks.gpu.openb.shared import (
    OPENB_DATA,
    OURS,
    TOTAL_GPUS,
    TRACES,
    VARIANT,
    trace_of,
    variant_of,
)
from placement.benchmarks.gpu.openb.variants import variant_traces, variants_section
from placement.solver import InputError

QUICK_MODES = ("Random", "BestFit", "FGD", "online", "batch:64", "bound")
FULL_MODES = (
    "peers",
    "online",
    "batch:8",
    "batch:64",
    "batch:512",
    "bound",
    "ablation",
    *(f"defrag:{'unlimited' if b is None else f'{b:g}'}" for b in DEFRAG_BUDGETS),
    "departures",
    "latency",
)
MODE_HELP = (
    "peers (the six peers online), a peer's name (FGD, BestFit, ...), online (ours), "
    "batch:B, defrag:F[:K] (migrations within a fraction F of the arrived pods, or "
    "unlimited; a consolidation cycle every K arrivals), bound (the class LP), bound:config "
    "(the configuration LP at 100 percent arrived), bound:never-refusing (the same over "
    "the packings that hold what every policy that never refuses a pod that fits after "
    "any migration holds), ablation, departures (the trace with departures: no moves, "
    "migrations, preemption, re-packing cycles; --param repack_every=N, repack_time=S set "
    "its cycles), latency (one cycle on the whole cluster), curve[:POLICY] (from "
    "the end state of ours online and FGD, or of POLICY: the best placement reachable with "
    "at most K migrations, K = 0 to 10 percent of the arrived pods and unlimited), "
    "repack[:POLICY] (ours online, or POLICY, with re-packing cycles within a migration "
    "budget: --param repack_budget=F,... (default 0.005,0.01,0.02,0.05), repack_every=N, "
    "repack_time=S, repack_nodes=M, repack_moves=C)"
)
QUICK_SEEDS = (42,)
FULL_SEEDS = tuple(range(42, 52))


def _budget(text: str, word: str) -> float | None:
    if text == "unlimited":
        return None
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1:
        raise InputError.single("--modes", word, "defrag:F with F in [0, 1] or 'unlimited'")
    return value


def _mode_cases(
    word: str, trace: str, pods_file: str | None, seeds, params: dict | None = None
) -> list[dict[str, Any]]:
    """The cases of one ``--modes`` word on one trace (InputError naming a bad word);
    ``params``: the suite's ``--param`` values (the repack mode's settings)."""
    # On use: the models load only when cases are made, not for placement bench --list.
    from placement.models.gpu.peers.fgd import POLICIES
    from placement.models.gpu.sim.openb.online import OURS as OUR_POLICIES

    base = {"trace": trace, "pods_file": pods_file}
    name, _, arg = word.partition(":")
    out: list[dict[str, Any]] = []
    if name in ("peers", *POLICIES, *OUR_POLICIES, "online") and not arg:
        chosen = list(POLICIES) if name == "peers" else [OURS if name == "online" else name]
        for policy in chosen:
            out += [
                {**base, "case": f"{trace} {policy} seed {s}", "policy": policy, "seed": s}
                for s in seeds
            ]
    elif name == "batch" and arg.isdigit() and int(arg) > 0:
        b = int(arg)
        out += [
            {
                **base,
                "case": f"{trace} batch {b} seed {s}",
                "policy": OURS,
                "seed": s,
                "mode": "batch",
                "batch": b,
            }
            for s in seeds
        ]
    elif name == "defrag" and arg:
        budget_text, _, every = arg.partition(":")
        if every and not every.isdigit():
            raise InputError.single("--modes", word, "defrag:F:K with K a whole number")
        budget = _budget(budget_text, word)
        out += [
            {
                **base,
                "case": f"{trace} defrag {budget_text} seed {s}",
                "policy": OURS,
                "seed": s,
                "mode": "defrag",
                "budget": budget,
                "every": int(every or 0),
            }
            for s in seeds
        ]
    elif word == "bound":
        out += [
            {
                **base,
                "case": f"{trace} bound seed {s}",
                "policy": "bound",
                "seed": s,
                "mode": "bound",
            }
            for s in seeds
        ]
    elif word in CONFIG_BOUND_MODES:
        mode, policy = CONFIG_BOUND_MODES[word]
        out += [
            {
                **base,
                "case": f"{trace} {policy} seed {s}",
                "policy": policy,
                "seed": s,
                "mode": mode,
            }
            for s in seeds
        ]
    elif word == "ablation":
        for policy in ("BestFit", "FGD"):
            for tie_break, protocol in (("uniform", "simulator"), ("rank", "resample")):
                out += [
                    {
                        **base,
                        "case": f"{trace} ablation {policy} {tie_break} {protocol} seed {s}",
                        "policy": policy,
                        "seed": s,
                        "tie_break": tie_break,
                        "protocol": protocol,
                        "ablation": True,
                    }
                    for s in seeds
                ]
    elif word == "departures":
        for policy, mode, budget in DEPARTURE_MODES:
            out += [
                {
                    **base,
                    "case": f"{trace} departures {policy} {mode} seed {s}",
                    "kind": "departures",
                    "policy": policy,
                    "dmode": mode,
                    "budget": budget,
                    "seed": s,
                    **(
                        {"repack": departure_repack_settings(params or {})}
                        if mode == "repack"
                        else {}
                    ),
                }
                for s in seeds
            ]
    elif word == "latency":
        out += [
            {**base, "case": f"{trace} latency seed {s}", "kind": "latency", "seed": s}
            for s in seeds
        ]
    elif name == "curve":
        starts = [arg] if arg else list(CURVE_STARTS)
        for start in starts:
            if start not in (*POLICIES, *OUR_POLICIES):
                raise InputError.single("--modes", word, "curve or curve:POLICY (a policy name)")
            out += [
                {
                    **base,
                    "case": f"{trace} curve from {start} seed {s}",
                    "kind": "curve",
                    "policy": start,
                    "seed": s,
                }
                for s in seeds
            ]
    elif name == "repack":
        start = arg or OURS
        if start not in (*POLICIES, *OUR_POLICIES):
            raise InputError.single("--modes", word, "repack or repack:POLICY (a policy name)")
        settings = repack_settings(params or {})
        budgets = settings.pop("budgets")
        every = settings.pop("every")
        for budget in budgets:
            out += [
                {
                    **base,
                    "case": f"{trace} repack {start} {budget:g} seed {s}",
                    "policy": start,
                    "seed": s,
                    "mode": "repack",
                    "budget": budget,
                    "every": every,
                    "repack": settings,
                }
                for s in seeds
            ]
    else:
        raise InputError.single("--modes", word, MODE_HELP)
    return out


def cases_openb(config: Any) -> list[dict[str, Any]]:
    """Per trace and mode (``--modes``, default: the full protocol, or the quick one) and
    seed (``--seeds``), one case. Traces: ``--trace FILE`` (pod lists; the cluster is the
    trace's node list), else both traces of the data (quick: the default one)."""
    # On use: the models load only when cases are made, not for placement bench --list.
    from placement.models.gpu.formats.openb import read_openb_pods

    params = config.params
    files = params.get("trace") or []
    if isinstance(files, str):  # given as --param trace=FILE
        files = [files]
    traces: list[tuple[str, str | None]] = []
    for f in files:
        if f.startswith(VARIANT):
            traces += [(t, t) for t in variant_traces(f, config.data_dir(OPENB_DATA))]
            continue
        path = Path(f)
        if not path.is_file():
            raise InputError.single("--trace", f, "an existing pod list CSV (openb layout)")
        try:
            read_openb_pods(path)
        except InputError as exc:
            raise InputError.single(
                "--trace", f, f"a pod list in the openb layout: {exc}"
            ) from None
        known = {v: k for k, v in TRACES.items()}
        traces.append((known.get(path.name, path.stem), str(path.resolve())))
    if not traces:
        traces = [(t, None) for t in (("default",) if config.quick else TRACES)]
    seeds = params.get("seeds") or (QUICK_SEEDS if config.quick else FULL_SEEDS)
    modes = params.get("modes") or (QUICK_MODES if config.quick else FULL_MODES)
    out: list[dict[str, Any]] = []
    for trace, pods_file in traces:
        for word in modes:
            if word in ("ablation",) and trace != "default":
                continue
            if word == "departures" and variant_of(pods_file):
                if not params.get("modes"):
                    continue  # the full protocol: a variant's pods have no times
                raise InputError.single(
                    "--modes", word, "no departures on a variant (its pods have no times)"
                )
            out += _mode_cases(word, trace, pods_file, seeds, params)
    return out


def run_openb(case: dict[str, Any], config: Any) -> list[dict[str, Any]]:
    """One replay (or the bound, a replay with departures, a latency measurement) and the
    independent re-check of every placement it made."""
    # On use: a child process imports this module and its peak RSS is one solve's.
    from placement.models.gpu.sim.openb.batch import check_placement
    from placement.models.gpu.sim.openb.replay import TraceState

    data = config.data_dir(OPENB_DATA)
    kind = case.get("kind")
    if kind == "departures":
        return [run_departures(case, config, data)]
    if kind == "latency":
        return run_latency(case, config, data)
    if kind == "curve":
        return run_curve(case, config, data)
    row = run_case(
        case["trace"],
        case["policy"],
        case["seed"],
        data,
        mode=case.get("mode", "online"),
        batch=case.get("batch"),
        time_limit=config.time_limit_s,
        tie_break=case.get("tie_break", "rank"),
        protocol=case.get("protocol", "simulator"),
        pods_file=case.get("pods_file"),
        budget=case.get("budget"),
        every=case.get("every", 0),
        repack=case.get("repack"),
    )
    placements = row.pop("placements", None)
    if placements is not None:
        # Pods are never removed, so the run is valid iff every placement it holds at the
        # end (after the migrations, for defrag), applied at once to the empty cluster,
        # fits: recomputed from scratch.
        cluster, pods = trace_of(data, case["trace"], case.get("pods_file"))
        items, placement = placements
        errors = check_placement(TraceState(cluster), pods, items, placement)
        row["invalid"] = int(row.get("invalid") or 0) + (1 if errors else 0)
        row["placements_checked"] = len(placement)
    row.setdefault("invalid", 0)
    row["ablation"] = bool(case.get("ablation"))
    row["kind"] = "replay"
    row["curve"] = json.dumps([None if math.isnan(v) else round(float(v), 4) for v in row["curve"]])
    return [row]


def markdown(
    tables: dict[str, list[dict]],
    ablation: list[dict],
    command: str,
    load: str,
    rows: list[dict] | None = None,
    fgd_published: dict[str, float] | None = None,
) -> str:
    """The report's Markdown: our modes, the peers against the published figures, the
    ablation."""
    lines = [
        "# GPU allocation on the Alibaba openb trace (FGD protocol)",
        "",
        "Generated by `placement bench gpu-openb`; do not edit by hand. Reproduce with:",
        "",
        f"    {command}",
        "",
        f"Machine: 2 shared cores, {load}.",
        "",
    ]
    lines += modes_section(rows, fgd_published)
    lines += peers_section(tables)
    lines += ablation_section(tables, ablation)
    return "\n".join(lines)


def report_openb(rows: list[dict[str, Any]], config: Any) -> str:
    """The tables (ours vs FGD and the bound, the defragmentation curve, the peers vs the
    published means, the ablation, the trace with departures, the cycle latency) and the
    figures ``gpu-openb.png``, ``gpu-openb-modes.png``, ``gpu-openb-departures.png``."""
    departures = [r for r in rows if r.get("kind") == "departures"]
    latency = [r for r in rows if r.get("kind") == "latency"]
    curve_rows = [r for r in rows if r.get("kind") == "curve"]
    rows = [
        {**r, "curve": np.array([math.nan if v is None else v for v in json.loads(r["curve"])])}
        for r in rows
        if r.get("kind", "replay") == "replay"
    ]
    data = config.data_dir(OPENB_DATA)
    main = [r for r in rows if not r["ablation"]]
    ablation = [r for r in rows if r["ablation"]]
    traces = list(dict.fromkeys(r["trace"] for r in main))
    pubs = {t: published(data, t) if t in TRACES else {} for t in traces}
    online = {t: [r for r in main if r["trace"] == t and r["mode"] == "online"] for t in traces}
    tables = {
        t: summary(rs, pubs[t], rs[0].get("total_gpus", TOTAL_GPUS))
        for t, rs in online.items()
        if rs
    }
    fgd_pub = {
        t: statistics.fmean(float(c[100]) for c in pubs[t]["FGD"].values())
        for t in traces
        if pubs[t].get("FGD")
    }
    text = markdown(tables, ablation, config.command, "see above", main, fgd_pub)
    peers = {t: [r for r in online[t] if r["policy"] in pubs[t]] for t in traces}
    if any(peers.values()):
        plot(
            {t: rs for t, rs in peers.items() if rs},
            pubs,
            config.out / "gpu-openb.png",
            config.command,
        )
    if main:
        plot_modes(main, config.out / "gpu-openb-modes.png", config.command)
    if curve_rows:
        plot_curve(curve_rows, config.out / "gpu-openb-curve.png", config.command)
    extra = (
        variants_section(main, data)
        + curve_table(curve_rows)
        + bound_table(main)
        + repack_table(main, curve_rows)
        + defrag_tables(main)
        + departure_tables(departures)
        + latency_table(latency)
    )
    if departures:
        plot_departures(departures, config.out / "gpu-openb-departures.png", config.command)
    # The runner writes the title, the command and the machine: keep the tables.
    body = text[text.index("\n## ") + 1 :] if "\n## " in text else ""
    return "\n".join([*extra, body])
