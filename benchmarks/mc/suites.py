"""The mc family's benchmark suite (``placement bench mc-partition``).

Schedulability ratio against normalised utilisation, the experiment of the partitioned
mixed-criticality literature (e.g. Ramanathan and Easwaran, DATE 2017, Section V): for each
platform (cores) and task count, for each normalised utilisation bound ``U`` (0.5 to 1.0 in
steps of 0.05), ``sets`` task sets from :func:`placement.models.mc.generate.generate` (seeded:
set ``j`` of point ``p`` has seed ``10_000 p + j``), and for each set:

* HI tasks with probability 0.5, each with a criticality factor C(HI)/C(LO) uniform in
  [1, 4], periods log-uniform in [10, 1000] ms;
* every heuristic of :mod:`placement.models.mc.greedy` (FFD, BFD, WFD, their
  criticality-aware variants, and MC-UDP, the paper's): schedulable or not;
* each exact backend on its own (no heuristic incumbent), asked the schedulability question
  only (``feasibility_only``), within the time limit: schedulable, proved unschedulable, or
  undecided.

A case is a chunk of sets of one point (so a run can be spread over worker processes or Ray).
Every solution goes through the family's checker again (the rows' ``invalid``, must be 0).
The suite's settings (``--param``): ``sets`` per point, ``cores``, ``tasks`` (pairs with
fewer than two tasks per core are skipped), ``utilisations``, ``backends``, ``test``
(``edf_vd`` or ``amc_rtb``: the per-core test of every generated set), ``exact_on``
(``all``, or ``rejected``: the exact backends only on the sets no heuristic schedules),
``seeds`` (only these sets: reruns of single sets) and ``limit`` (the seconds a proof may take to count, on CPU and on wall time); the defaults are
the full protocol.

**Time.** Each exact solve runs on one thread in the worker process, and its row records both
its wall time (``time_s``) and the CPU time the process spent in it (``cpu_s``,
:func:`time.process_time`: every thread of the process, so the solver's one search thread and
the Python around it). On a shared machine a solve's wall time grows with the load, its CPU
time hardly does: "proved within ``limit`` s of CPU" is the load-robust figure, "within
``limit`` s of wall" the figure of a quiet machine. The solve itself stops at
``--time-limit`` (wall), so give that headroom over ``limit`` when the machine is loaded.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from typing import Any

from placement.benchmarks.mc import PARAMETERS
from placement.benchmarks.runner import Rechecker
from placement.models.mc.cpsat import CpSatEncoding
from placement.models.mc.generate import generate
from placement.models.mc.greedy import HEURISTICS
from placement.models.mc.instance import EDF_VD, TESTS
from placement.models.mc.milp import MilpEncoding
from placement.solver import InputError, SolveOptions
from placement.solver.testing import ExactContext

QUICK = {"sets": 2, "cores": ("2",), "tasks": ("6",), "utilisations": ("0.80", "1.00")}
CRITICALITY = (1.0, 4.0)
"""Each HI task's C(HI)/C(LO) is drawn uniformly in this range (our choice; one factor for
every task would make MC-UDP coincide with criticality-aware worst fit)."""
ENCODINGS = {"cpsat": CpSatEncoding, "milp": MilpEncoding}
HEURISTIC_ORDER = ("ffd", "bfd", "wfd", "ca-ffd", "ca-bfd", "ca-wfd", "udp")
EXACT_ON = ("all", "rejected")


def _settings(config: Any) -> dict[str, Any]:
    params = {p.name: p.default for p in PARAMETERS}
    if config.quick:
        params.update(QUICK)
    params.update(config.params or {})
    for name in params["backends"]:
        if name not in ENCODINGS:
            raise InputError.single("--param backends", name, "cpsat or milp")
    if params["test"] not in TESTS:
        raise InputError.single("--param test", params["test"], " or ".join(TESTS))
    if params["exact_on"] not in EXACT_ON:
        raise InputError.single("--param exact_on", params["exact_on"], " or ".join(EXACT_ON))
    if not float(params["limit"]) >= 0:
        raise InputError.single("--param limit", params["limit"], "seconds >= 0")
    return params


def _seeds(values: Any) -> set[int] | None:
    """The ``seeds`` param as a set (None: every set); ``A-B`` is a range, both included."""
    if not values:
        return None
    out: set[int] = set()
    for value in values:
        first, _, last = str(value).partition("-")
        try:
            a, b = int(first), int(last or first)
        except ValueError:
            raise InputError.single("--param seeds", value, "seeds or ranges A-B") from None
        out.update(range(a, b + 1))
    return out


def _limit(config: Any) -> float:
    """The seconds a proof may take to count (the ``limit`` param, else the time limit)."""
    return float(_settings(config)["limit"]) or float(config.time_limit_s)


def cases(config: Any) -> list[dict[str, Any]]:
    """One case per chunk of task sets of one (cores, tasks, utilisation) point."""
    s = _settings(config)
    only = _seeds(s["seeds"])
    out = []
    point = 0
    for m in (int(c) for c in s["cores"]):
        for n in (int(t) for t in s["tasks"]):
            if n < 2 * m:
                continue
            for u in s["utilisations"]:
                point += 1
                for first in range(0, s["sets"], s["chunk"]):
                    count = min(s["chunk"], s["sets"] - first)
                    seeds = [10_000 * point + j for j in range(first, first + count)]
                    if only is not None and not only.intersection(seeds):
                        continue
                    out.append(
                        {
                            "cores": m,
                            "tasks": n,
                            "utilisation": float(u),
                            "point": point,
                            "first": first,
                            "count": count,
                            "seeds": None if only is None else sorted(only.intersection(seeds)),
                            "backends": list(s["backends"]),
                            "test": s["test"],
                            "exact_on": s["exact_on"],
                        }
                    )
    return out


def run(case: dict[str, Any], config: Any) -> list[dict[str, Any]]:
    """Every heuristic and exact backend on each task set of the case: one row per (set,
    method)."""
    if case["backends"]:
        # The solver libraries load before the clock starts (1-10 s on a loaded machine),
        # so the first set of a case gets the same time limit as the others.
        import highspy  # noqa: F401
        from ortools.sat.python import cp_model  # noqa: F401
    rows = []
    for j in range(case["first"], case["first"] + case["count"]):
        seed = 10_000 * case["point"] + j
        if case.get("seeds") is not None and seed not in case["seeds"]:
            continue
        inst = generate(
            case["tasks"],
            case["cores"],
            case["utilisation"],
            seed,
            criticality_factor=CRITICALITY[0],
            criticality_factor_max=CRITICALITY[1],
            test=case.get("test", EDF_VD),
        )
        base = {
            "cores": case["cores"],
            "tasks": case["tasks"],
            "utilisation": case["utilisation"],
            "seed": seed,
        }
        scheduled = False
        for name in HEURISTIC_ORDER:
            checker = Rechecker("mc")
            started = time.perf_counter()
            solution = HEURISTICS[name](inst)
            wall = time.perf_counter() - started
            report = checker(inst, solution)
            ok = report is not None and report.feasible
            scheduled = scheduled or ok
            rows.append(
                {
                    **base,
                    "method": name,
                    "schedulable": int(ok),
                    "proved_unschedulable": 0,
                    "time_s": round(wall, 4),
                    **checker.columns(),
                }
            )
        if scheduled and case.get("exact_on", "all") == "rejected":
            continue  # the portfolio's answer is the heuristic's schedule
        for backend in case["backends"]:
            checker = Rechecker("mc")
            encoding = ENCODINGS[backend](feasibility_only=True)
            ctx = ExactContext(
                inst, SolveOptions(time_limit_s=config.time_limit_s, threads=1), backend=backend
            )
            started, cpu = time.perf_counter(), time.process_time()
            outcome = encoding.solve(inst, ctx)
            wall, cpu = time.perf_counter() - started, time.process_time() - cpu
            checker.dropped(len(ctx.rejected))
            report = checker(inst, ctx.best)
            ok = report is not None and report.feasible
            rows.append(
                {
                    **base,
                    "method": backend,
                    "schedulable": int(ok),
                    "proved_unschedulable": int(outcome.proven_infeasible),
                    "time_s": round(wall, 4),
                    "cpu_s": round(cpu, 4),
                    **checker.columns(),
                }
            )
    return rows


def _ratio(values: list[int]) -> float:
    return sum(values) / len(values) if values else float("nan")


def _portfolio(
    point: dict[str, dict[int, dict[str, Any]]], exact: list[str], limit: float = math.inf
) -> dict[int, dict]:
    """Per seed: the portfolio's answer (the heuristics first, then the exact backends on the
    sets none schedules: with no incumbent, exactly the exact-alone run): schedulable, proved
    unschedulable (by any exact backend), or neither; and whether a proof came within
    ``limit`` seconds of CPU (``proved_cpu``) and of wall time (``proved_wall``)."""
    seeds = set().union(*(point[m].keys() for m in point))
    out = {}
    for seed in seeds:
        runs = [point[m][seed] for m in point if seed in point[m]]
        heuristic = any(point[h][seed]["ok"] for h in HEURISTIC_ORDER if seed in point.get(h, {}))
        ok = any(v["ok"] for v in runs)
        proofs = [point[e][seed] for e in exact if point[e].get(seed, {}).get("proved")]
        out[seed] = {
            "ok": int(ok),
            "proved": int(bool(proofs) and not ok),
            "proved_cpu": int(not ok and any(v["cpu"] <= limit for v in proofs)),
            "proved_wall": int(not ok and any(v["wall"] <= limit for v in proofs)),
            "heuristic": heuristic,
        }
    return out


def report(rows: list[dict[str, Any]], config: Any) -> str:
    """Schedulability ratios per platform, the share of rejected sets proved unschedulable,
    the target checks, and one plot per platform."""
    s = _settings(config)
    limit = _limit(config)
    alone = s["exact_on"] == "all"
    methods = [m for m in (*HEURISTIC_ORDER, *s["backends"]) if any(r["method"] == m for r in rows)]
    exact = [m for m in s["backends"] if m in methods]
    # With exact_on=rejected the exact backends ran on part of the sets only: no column.
    shown = methods if alone else [m for m in methods if m not in exact]
    by: dict[tuple[int, int, float], dict[str, dict[int, dict[str, Any]]]] = defaultdict(
        lambda: defaultdict(dict)
    )
    for r in rows:
        key = (int(r["cores"]), int(r["tasks"]), float(r["utilisation"]))
        wall = float(r["time_s"])
        by[key][r["method"]][int(r["seed"])] = {
            "ok": int(r["schedulable"]),
            "proved": int(r["proved_unschedulable"]),
            "wall": wall,
            # Rows of an older csv have no CPU time: their wall time bounds it.
            "cpu": float(r.get("cpu_s") or wall),
        }
    platforms = sorted({(k[0], k[1]) for k in by})
    settings = ", ".join(
        f"{k}={','.join(v) if isinstance(v, tuple | list) else v}" for k, v in s.items()
    )
    full = ", ".join(
        f"{p.name}={','.join(p.default) if isinstance(p.default, tuple) else p.default}"
        for p in PARAMETERS
    )
    lines = [
        f"Settings: {settings}; {config.time_limit_s:g} s per exact solve, 1 thread (the full "
        f"protocol, the default: {full}, 10 s).",
        "",
        "Columns: the share of task sets each method schedules. "
        + (
            "The exact backends run alone (no heuristic incumbent) on the schedulability "
            "question only. "
            if alone
            else "The exact backends ran only on the sets no heuristic schedules "
            "(`exact_on=rejected`), so they have no column of their own. "
        )
        + "`best heuristic` is the best single heuristic's share. `portfolio` is what "
        "`placement solve` does: the heuristics, then an exact backend (either) on the sets none "
        "schedules (with no incumbent: the exact-alone run). `proved / rejected` is, of the sets "
        "the portfolio does not schedule, how many an exact backend proved unschedulable within "
        f"the time limit; `<= {limit:g} s CPU` and `<= {limit:g} s wall` count the proofs whose "
        f"solve took at most {limit:g} s of CPU time (the worker process's, one solver "
        f"thread: load-robust) or of wall time.",
        "",
    ]
    alone_missed = {e: 0 for e in exact}
    strictly_more: list[str] = []
    decided: dict[tuple[int, int], list[dict[str, int]]] = defaultdict(list)
    for m, n in platforms:
        lines += [f"### {m} cores, {n} tasks", ""]
        head = [
            "U",
            *shown,
            "best heuristic",
            "portfolio",
            "proved / rejected",
            f"<= {limit:g} s CPU",
            f"<= {limit:g} s wall",
        ]
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for key in sorted(k for k in by if (k[0], k[1]) == (m, n)):
            point = by[key]
            folio = _portfolio(point, exact, limit)
            cells = [f"{key[2]:.2f}"]
            for method in shown:
                cells.append(f"{_ratio([v['ok'] for v in point[method].values()]):.2f}")
            best_heuristic = max(
                _ratio([v["ok"] for v in point[h].values()]) for h in HEURISTIC_ORDER if h in point
            )
            ratio = _ratio([v["ok"] for v in folio.values()])
            if ratio > best_heuristic:
                strictly_more.append(
                    f"{m}x{n} at U = {key[2]:.2f} ({ratio:.2f} vs {best_heuristic:.2f})"
                )
            rejected = [v for v in folio.values() if not v["ok"]]
            proved = sum(v["proved"] for v in rejected)
            decided[(m, n)] += rejected
            cells += [
                f"{best_heuristic:.3f}",
                f"{ratio:.3f}",
                f"{proved}/{len(rejected)}",
                str(sum(v["proved_cpu"] for v in rejected)),
                str(sum(v["proved_wall"] for v in rejected)),
            ]
            lines.append("| " + " | ".join(cells) + " |")
            for e in exact if alone else ():
                alone_missed[e] += sum(
                    1 for seed, v in point[e].items() if not v["ok"] and folio[seed]["heuristic"]
                )
        lines.append("")
    lines += ["Targets:", ""]
    lines.append(
        "- the portfolio schedules every set a heuristic schedules (by construction); "
        + (
            "the exact backends alone miss, within the limit, "
            + ", ".join(f"{e}: {k}" for e, k in alone_missed.items())
            + " sets some heuristic schedules;"
            if alone
            else "the exact backends did not run alone (`exact_on=rejected`);"
        )
    )
    lines.append(
        "- points where the portfolio schedules strictly more than the best heuristic: "
        + ("; ".join(strictly_more) if strictly_more else "none")
        + ";"
    )
    for (m, n), values in sorted(decided.items()):
        if values:
            count = len(values)
            parts = [
                f"{k}/{count} = {k / count:.1%} {what}"
                for k, what in (
                    (sum(v["proved"] for v in values), "within the time limit"),
                    (sum(v["proved_cpu"] for v in values), f"within {limit:g} s of CPU"),
                    (sum(v["proved_wall"] for v in values), f"within {limit:g} s of wall time"),
                )
            ]
            lines.append(
                f"- {m} cores x {n} tasks: of the rejected sets, proved unschedulable "
                + "; ".join(parts)
                + " (target at 8 x 40: 95 % within 10 s)."
            )
    _plot(by, platforms, shown, exact, config)
    lines += ["", f"![schedulability ratio]({config.suite}.png)", ""]
    return "\n".join(lines)


def _plot(
    by: Any, platforms: list[tuple[int, int]], methods: list[str], exact: list[str], config: Any
) -> None:
    # matplotlib with pyplot loads in 1-2 s: only when the report is written
    import matplotlib

    matplotlib.use("Agg")
    # pyplot after the Agg backend is chosen (no display needed)
    import matplotlib.pyplot as plt

    if not platforms:
        return
    fig, axes = plt.subplots(
        1, len(platforms), figsize=(4.2 * len(platforms) + 2.2, 3.6), squeeze=False, sharey=True
    )
    for ax, (m, n) in zip(axes[0], platforms, strict=True):
        keys = sorted(k for k in by if (k[0], k[1]) == (m, n))
        xs = [k[2] for k in keys]
        for method in methods:
            ys = [_ratio([v["ok"] for v in by[k][method].values()]) for k in keys]
            style = "-o" if method in ENCODINGS else "--."
            ax.plot(xs, ys, style, label=method, lw=1.6 if method in ENCODINGS else 1.0, ms=3)
        folios = [_portfolio(by[k], exact) for k in keys]
        ys = [_ratio([v["ok"] for v in folio.values()]) for folio in folios]
        ax.plot(xs, ys, "-s", color="black", label="portfolio", lw=1.8, ms=3)
        # Of the sets the portfolio rejects, the share an exact backend proved unschedulable
        # (points with no rejected set are left out).
        proved = [
            (x, _ratio([v["proved"] for v in folio.values() if not v["ok"]]))
            for x, folio in zip(xs, folios, strict=True)
            if any(not v["ok"] for v in folio.values())
        ]
        if proved and exact:
            ax.plot(
                [p[0] for p in proved],
                [p[1] for p in proved],
                ":x",
                color="crimson",
                label="proved unschedulable / rejected",
                lw=1.6,
                ms=5,
            )
        ax.set_title(f"{m} cores, {n} tasks")
        ax.set_xlabel("normalised utilisation")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("schedulability ratio")
    # Beside the last panel: inside, it hides the curves where they cross.
    axes[0][-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.tight_layout()
    config.out.mkdir(parents=True, exist_ok=True)
    fig.savefig(config.out / f"{config.suite}.png", dpi=110)
    plt.close(fig)
