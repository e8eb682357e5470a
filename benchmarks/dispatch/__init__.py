"""The dispatch family's benchmark suites: the dispatching policies (:mod:`.suites`) and the
budget mode's DBC heuristics against the exact front (:mod:`.budget`), the bundle mode's
bundlings (:mod:`.bundle`)."""

from __future__ import annotations

from placement.benchmarks.runner import Suite, suite_functions
from placement.solver.hooks import Parameter

PARAMETERS = (
    Parameter("jobs", "positive_int", 10_000, help="jobs per synthetic trace (default 10000)"),
    Parameter("servers", "positive_int", 8, help="servers of the synthetic traces (default 8)"),
    Parameter(
        "loads",
        "name_list",
        ("0.5", "0.7", "0.9", "0.95"),
        help="offered loads (default 0.5,0.7,0.9,0.95)",
    ),
    Parameter("seeds", "name_list", ("1",), help="seeds of the synthetic traces (default 1)"),
    Parameter("cov", "positive_float", 2.0, help="CoV of the Weibull sizes (default 2)"),
    Parameter("windows", "positive_int", 20, help="small traces solved to optimality (default 20)"),
    Parameter(
        "trace_jobs",
        "positive_int",
        10_000,
        help="jobs read from each shared trace (default 10000)",
    ),
)
"""The suite's settings (``placement bench dispatch-policies --param NAME=VALUE``)."""

SUITES = (
    Suite(
        name="dispatch-policies",
        family="dispatch",
        help="mean response, slowdown, p99 and decision latency of every dispatching policy "
        "(RR, JIQ, JSQ, LWL, SITA, JBT, two-stage, central FCFS, ours) against the trace's "
        "lower bound, on synthetic loads and the shared SWF / sacct traces",
        **suite_functions("placement.benchmarks.dispatch.suites"),
        time_limit_s=10.0,
        quick_time_limit_s=1.0,
        parameters=PARAMETERS,
    ),
    Suite(
        name="dispatch-budget",
        family="dispatch",
        help="Nimrod/G's DBC cost, time and cost-time heuristics against the exact cost-time "
        "front (proven gaps) on generated parameter sweeps of 1,000-10,000 jobs on 10-100 "
        "priced servers",
        **suite_functions("placement.benchmarks.dispatch.budget", "budget"),
        time_limit_s=10.0,
        quick_time_limit_s=2.0,
        parameters=(Parameter("seed", "int", 1, help="seed of the sweeps (default 1)"),),
    ),
    Suite(
        name="dispatch-bundle",
        family="dispatch",
        help="short-task throughput and long-job wait under per-task dispatch, Byun et al.'s "
        "node bundling and ours, at per-dispatch scheduler overheads 0, 1, 10 and 50",
        **suite_functions("placement.benchmarks.dispatch.bundle", "bundle"),
        time_limit_s=10.0,
        quick_time_limit_s=1.0,
        parameters=(
            Parameter("tasks", "positive_int", 5_000, help="short tasks (default 5000)"),
            Parameter("nodes", "positive_int", 16, help="nodes (default 16)"),
            Parameter("cores", "positive_int", 32, help="cores per node (default 32)"),
            Parameter("seed", "int", 1, help="seed of the workload (default 1)"),
        ),
    ),
)
