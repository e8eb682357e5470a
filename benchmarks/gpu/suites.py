"""The GPU family's benchmark suites (``placement bench gpu-...``).

``gpu-openb`` is in :mod:`.openb` (a package: one module per experiment).

``gpu-synthetic``: greedy vs CP-SAT vs MILP-HiGHS vs MILP-CBC on generated instances
(:mod:`placement.models.gpu.generate`). Each (size, seed, backend) solve runs in its own
fresh process, so that peak memory (max RSS) is that solve's alone.
"""

from __future__ import annotations

import multiprocessing as mp
import resource
import time
from typing import Any

from placement.benchmarks.runner import recheck
from placement.benchmarks.tables import rule
from placement.solver.errors import InputError

SYNTHETIC_SIZES = ((1024, 200, 1), (10240, 2000, 6))
"""(GPUs, jobs, time-limit multiple): the large size gets 6x the suite's limit (5 s -> 30 s)."""
SYNTHETIC_QUICK = ((64, 12, 1),)
BACKENDS = ("greedy", "cpsat", "milp-highs", "milp-cbc")


def cases_synthetic(config: Any) -> list[dict[str, Any]]:
    """Every (size, seed, backend), or those the ``gpus``, ``seeds`` and ``backends``
    parameters name (e.g. ``--param gpus=1024`` for the 1,024-GPU size alone).
    ``--param reference=S`` adds, in the greedy row, the full exact model's bound by HiGHS
    after ``S`` seconds (:func:`placement.benchmarks.gpu.full_model_bound.full_model_bound`)."""
    params = dict(config.params or {})
    reference = float(params.get("reference", 0.0))
    sizes, seeds = (SYNTHETIC_QUICK, (1,)) if config.quick else (SYNTHETIC_SIZES, (1, 2, 3))
    backends = tuple(params.get("backends", BACKENDS))
    if not config.quick:
        if "gpus" in params:
            wanted = {_int_param("gpus", g) for g in params["gpus"]}
            known = {gpus for gpus, _, _ in SYNTHETIC_SIZES}
            if not wanted <= known:
                raise InputError.single(
                    "--param gpus", sorted(wanted), f"sizes among {sorted(known)}"
                )
            sizes = tuple(s for s in SYNTHETIC_SIZES if s[0] in wanted)
        if "seeds" in params:
            seeds = tuple(_int_param("seeds", s) for s in params["seeds"])
    unknown = [b for b in backends if b not in BACKENDS]
    if unknown:
        raise InputError.single("--param backends", unknown, f"names among {list(BACKENDS)}")
    return [
        {
            "case": f"{gpus}x{jobs} seed {seed} {backend}",
            "gpus": gpus,
            "jobs": jobs,
            "seed": seed,
            "backend": backend,
            "time_limit_s": config.time_limit_s * factor,
            "reference_s": reference,
        }
        for gpus, jobs, factor in sizes
        for seed in seeds
        for backend in backends
    ]


def _int_param(name: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise InputError.single(f"--param {name}", value, "integers, e.g. 1024") from None


def run_synthetic(case: dict[str, Any], config: Any) -> list[dict[str, Any]]:
    """One solve in a fresh process."""
    return [
        _run_one(
            (case["gpus"], case["jobs"]),
            case["seed"],
            case["backend"],
            case["time_limit_s"],
            case.get("reference_s", 0.0),
        )
    ]


def _solve_in_child(
    size: tuple[int, int],
    seed: int,
    backend: str,
    time_limit: float,
    queue: mp.Queue,
    reference_s: float = 0.0,
) -> None:
    # On use: a child process imports this module and its peak RSS is one solve's.
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
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    bounds = _bounds(instance, reference_s, result.solution) if backend == "greedy" else {}
    _, invalid = recheck("gpu", instance, result.solution)
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
            "placed_cpu_jobs": result.objective_terms.get("placed_cpu_jobs"),
            "comm_cost": result.objective_terms.get("comm_cost"),
            "fragmentation": result.objective_terms.get("fragmentation"),
            "bound": result.bound,
            "gap": result.gap,
            "greedy_objective": greedy.objective if greedy else None,
            "greedy_s": result.phase_times_s.get("greedy"),
            "best_fit_s": min(fallback_s),
            "source": result.backend,
            "wall_s": wall,
            "peak_rss_mib": peak_rss,
            "unplaced": len(result.unplaced),
            "message": result.message,
            "invalid": invalid + bounds.pop("full_invalid", 0),
            **bounds,
        }
    )


def _bounds(instance: Any, reference_s: float = 0.0, start: Any = None) -> dict[str, Any]:
    """The instance's bounds on the first tier, each computed alone with its time: the
    capacity bound, the LP relaxation and the configuration LP (run to convergence, or 60 s);
    with ``reference_s`` also the full exact model's bound by HiGHS after that long (from
    ``start``), and its best placement, checked."""
    # On use: a child process imports this module and its peak RSS is one solve's.
    from placement.models.gpu.bound import capacity_bound, relaxation_bound
    from placement.models.gpu.config_lp import configuration_bound
    from placement.models.gpu.eligibility import FreeCapacity
    from placement.solver import SolveOptions
    from placement.solver.cancel import CancellationToken

    cluster = FreeCapacity(instance)
    t0 = time.perf_counter()
    lp = relaxation_bound(instance, cluster, SolveOptions(), CancellationToken(), 60.0)
    lp_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    conf = configuration_bound(instance, cluster, 60.0)
    conf_s = time.perf_counter() - t0
    reference: dict[str, Any] = {}
    if reference_s > 0:
        # On use: a child process imports this module and its peak RSS is one solve's.
        from placement.benchmarks.gpu.full_model_bound import full_model_bound

        full = full_model_bound(instance, reference_s, start)
        placed, invalid = None, 0
        if full.solution is not None:
            _, invalid = recheck("gpu", instance, full.solution)
            placed = None if invalid else full.placed
        reference = {
            "full_invalid": invalid,
            "full_bound": None if full.bound is None else full.bound / 1000,
            "full_placed": None if placed is None else placed / 1000,
            "full_s": full.seconds,
        }
    return {
        **reference,
        "capacity_bound": capacity_bound(instance),
        "lp_bound": None if lp is None else lp / 1000,
        "lp_bound_s": lp_s,
        "config_bound": None if conf.bound is None else conf.bound / 1000,
        "config_lp_value": None if conf.lp_value is None else conf.lp_value / 1000,
        "config_converged": conf.converged,
        "config_iterations": conf.iterations,
        "config_bound_s": conf_s,
    }


def _run_one(
    size: tuple[int, int], seed: int, backend: str, time_limit: float, reference_s: float = 0.0
) -> dict:
    ctx = mp.get_context("spawn")
    queue: mp.Queue = ctx.Queue()
    proc = ctx.Process(
        target=_solve_in_child, args=(size, seed, backend, time_limit, queue, reference_s)
    )
    proc.start()
    # Hard wall: the time limit plus room for model building and the greedy phase (and the
    # reference bound's own limit and model build).
    try:
        row = queue.get(timeout=time_limit * 3 + 120 + 2 * reference_s)
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
            "invalid": 0,
        }
    proc.join()
    return row


def _fmt(v: object, spec: str = ".3f") -> str:
    if v is None or v == "":
        return "-"
    if isinstance(v, float):
        return format(v, spec)
    return str(v)


def report_synthetic(rows: list[dict], config: Any) -> str:
    """One line per (size, seed, backend)."""
    lines = [
        "Objective tiers are the checker's: placed priority-weighted GPUs (max), then,",
        "on instances with CPU-only jobs, their priority x workers placed (`cpu jobs`, max),",
        "then communication cost (min), then fragmentation (min). `gap` is on the first tier,",
        "against the best bound proved for the whole instance. Each solve runs in a fresh",
        "process; `peak RSS` is that process's maximum resident memory. The 10,240-GPU",
        "instances get 6x the time limit of the 1,024-GPU ones.",
        "",
        "| GPUs | jobs | seed | backend | limit s | status | stop | placed | cpu jobs | comm | frag | bound | gap | greedy placed | best-fit ms | greedy phase ms | wall s | peak RSS MiB | source |",
        rule("rrrlrllrrrrrrrrrrrl"),
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
                    _fmt(r.get("placed_cpu_jobs"), ".0f"),
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
    bound_rows = [r for r in rows if r.get("lp_bound") is not None]
    if bound_rows:
        lines += [
            "",
            "The bounds on the first tier, each computed alone (in the greedy row's process):",
            "the capacity bound, the LP relaxation (`bound.relaxation_bound`) and the",
            "configuration LP over per-node packings (`config_lp.configuration_bound`, column",
            "generation to convergence or 60 s; its Lagrangian bound). `best placed` is the best",
            "first tier any backend found on the instance in this run; its gap is to the tighter",
            "of the LP and the configuration LP (and, with `--param reference=S`, of the full",
            "exact model's bound by HiGHS after S seconds, `full_model_bound`; `full placed` is",
            "that run's best placement, checked).",
            "",
            "| GPUs | jobs | seed | capacity | LP | LP s | config LP | converged | iterations "
            "| config s | full model | full placed | full s | best placed | gap to the tighter |",
            rule("rrrrrrrlrrrrrrr"),
        ]
        for r in bound_rows:
            same = [
                o.get("placed_gpu_weighted")
                for o in rows
                if (o.get("gpus"), o.get("seed")) == (r.get("gpus"), r.get("seed"))
                and o.get("placed_gpu_weighted") is not None
            ]
            if r.get("full_placed") is not None:
                same.append(r["full_placed"])
            best = max(same) if same else None
            bounds = [
                b
                for b in (r.get("lp_bound"), r.get("config_bound"), r.get("full_bound"))
                if b is not None
            ]
            bound = min(bounds) if bounds else None
            gap = (bound - best) / bound if best is not None and bound else None
            lines.append(
                "| "
                + " | ".join(
                    [
                        _fmt(r.get("gpus")),
                        _fmt(r.get("jobs")),
                        _fmt(r.get("seed")),
                        _fmt(r.get("capacity_bound"), ".2f"),
                        _fmt(r.get("lp_bound"), ".3f"),
                        _fmt(r.get("lp_bound_s"), ".2f"),
                        _fmt(r.get("config_bound"), ".3f"),
                        _fmt(r.get("config_converged")),
                        _fmt(r.get("config_iterations")),
                        _fmt(r.get("config_bound_s"), ".2f"),
                        _fmt(r.get("full_bound"), ".3f"),
                        _fmt(r.get("full_placed"), ".2f"),
                        _fmt(r.get("full_s"), ".0f"),
                        _fmt(best, ".2f"),
                        _fmt(gap, ".4f"),
                    ]
                )
                + " |"
            )
    return "\n".join(lines) + "\n"
