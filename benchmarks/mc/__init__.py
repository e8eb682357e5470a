"""The mc family's benchmark suite; the code is in :mod:`.suites`."""

from __future__ import annotations

from placement.benchmarks.runner import Suite, suite_functions
from placement.solver.hooks import Parameter

UTILISATIONS = tuple(f"{0.5 + 0.05 * k:.2f}" for k in range(11))
PARAMETERS = (
    Parameter("sets", "positive_int", 500, help="task sets per point (default: 500)"),
    Parameter("cores", "name_list", ("4", "8"), help="core counts (default: 4,8)"),
    Parameter("tasks", "name_list", ("10", "20", "40"), help="task counts (default: 10,20,40)"),
    Parameter(
        "utilisations",
        "name_list",
        UTILISATIONS,
        help="normalised utilisation bounds (default: 0.50,0.55,...,1.00)",
    ),
    Parameter("backends", "name_list", ("cpsat", "milp"), help="exact backends (default: both)"),
    Parameter("chunk", "positive_int", 25, help="task sets per case (default: 25)"),
    Parameter(
        "test",
        "str",
        "edf_vd",
        choices=("edf_vd", "amc_rtb"),
        help="the per-core test: edf_vd (default) or amc_rtb (fixed priorities, OPA)",
    ),
    Parameter(
        "exact_on",
        "str",
        "all",
        choices=("all", "rejected"),
        help="sets the exact backends run on: all (default; they run alone, so the table "
        "shows what each schedules by itself) or rejected (only the sets no heuristic "
        "schedules: the portfolio's question, far cheaper at low utilisation)",
    ),
    Parameter(
        "seeds",
        "name_list",
        (),
        help="only the task sets of these seeds (set j of point p has seed 10000 p + j, the "
        "points numbered over cores, tasks and utilisations as given), each a number or a "
        "range A-B (default: every set)",
    ),
    Parameter(
        "limit",
        "float",
        0.0,
        help="seconds a proof may take to count in the 'within' columns, judged both on the "
        "solve's CPU time (one thread) and on its wall time (default 0: the --time-limit); "
        "run with a larger --time-limit so a loaded machine does not cut CPU-time proofs short",
    ),
)
"""The suite's settings (``placement bench mc-partition --param NAME=VALUE``): the defaults
are the full protocol."""

SUITES = (
    Suite(
        name="mc-partition",
        family="mc",
        help="schedulability ratio vs normalised utilisation: FFD/BFD/WFD, criticality-aware, MC-UDP and the exact backends (proofs of unschedulability)",
        **suite_functions("placement.benchmarks.mc.suites"),
        time_limit_s=10.0,
        quick_time_limit_s=2.0,
        parameters=PARAMETERS,
    ),
)
