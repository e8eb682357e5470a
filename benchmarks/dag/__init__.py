"""The DAG family's benchmark suites (and the grid suite on independent tasks), one module each.

Each suite is three functions, ``cases_<suite>(config)``, ``run_<suite>(case, config)`` (one
case, in a worker process or a Ray task) and ``report_<suite>(rows, config)`` (Markdown, and
PNG plots in ``config.out``), declared below by module and name:

- ``dag-topcuoglu`` (:mod:`.topcuoglu`): the HEFT paper's 10-task, 3-processor example: HEFT,
  PEFT and CPOP against the paper's figures, our greedy phase, and each exact backend with
  its proof.
- ``dag-stg`` and ``dag-stg-verify`` (:mod:`.stg`): the Standard Task Graph Set (Kasahara),
  P|prec|Cmax, against the published optima (closed cases) and bounds (open cases), one case
  per (graph, processors); a second opinion on three new STG proofs from a different model
  and solver (the disjunctive MILP on HiGHS).
- ``grid-braun`` (:mod:`.braun`): the Braun et al. 512 x 16 ETC instances (R||Cmax) against
  the best known makespans.
- ``grid-large`` (:mod:`.grid_large`): generated Braun-style R||Cmax at scale.
- ``grid-hcsp`` (:mod:`.grid_hcsp`): Braun-protocol ETC files as large as the hcsp
  collection's, at 2,048 x 64 and 4,096 x 128, through ``placement import braun``.
- ``dag-wfcommons`` (:mod:`.wfcommons`): the WfCommons workflows on a heterogeneous machine
  set, against HEFT, PEFT and CPOP.
- ``dag-scale`` (:mod:`.scale`): heuristic times (best of 3) and exact backends at 1,000
  tasks x 32 machines (a random DAG) and on independent tasks at 512 x 16 and 4,096 x 128.

What they share (checked makespans, timed solves, number formats, the bar plot) is in
:mod:`.shared`. Every solution a case produces (each heuristic's and each solve's) goes
through the family's independent checker (:func:`placement.benchmarks.runner.recheck`); the
``invalid`` column counts the rejected ones.
"""

from __future__ import annotations

from placement.benchmarks.runner import Suite, suite_functions
from placement.solver.hooks import Parameter


def _braun_parameters(sizes: tuple[str, ...]) -> tuple[Parameter, ...]:
    """The sizes, Braun classes and seed of a suite of generated Braun ETC matrices."""
    return (
        Parameter(
            "sizes",
            "name_list",
            sizes,
            help=f"TASKSxMACHINES sizes (default: {','.join(sizes)})",
        ),
        Parameter(
            "classes",
            "name_list",
            tuple(f"u_{c}_{t}{m}" for c in "csi" for t in ("hi", "lo") for m in ("hi", "lo")),
            help="Braun classes (default: all 12, u_c_hihi ... u_i_lolo)",
        ),
        Parameter("seed", "non_negative_int", 0, help="generator seed (default: 0)"),
    )


SUITES = (
    Suite(
        name="dag-topcuoglu",
        family="dag",
        help="the HEFT paper's example: HEFT (80), our greedy, exact solves with their proofs",
        **suite_functions("placement.benchmarks.dag.topcuoglu", "topcuoglu"),
        data="dag/topcuoglu-2002",
        time_limit_s=10.0,
        quick_time_limit_s=10.0,
    ),
    Suite(
        name="dag-stg",
        family="dag",
        help="STG (Kasahara) P|prec|Cmax vs the published optima and bounds (1,440 cases)",
        **suite_functions("placement.benchmarks.dag.stg", "stg"),
        data="dag/stg",
        time_limit_s=10.0,
        exclusive=True,
        parameters=(
            Parameter(
                "cases",
                "name_list",
                (),
                help="only the cases whose id matches one of these shell patterns (e.g. '50/rand000*.stg/2,100/rand0042.stg/16'); "
                "default: all",
            ),
        ),
    ),
    Suite(
        name="dag-stg-verify",
        family="dag",
        help="a second opinion on new STG proofs: the disjunctive MILP on HiGHS",
        **suite_functions("placement.benchmarks.dag.stg", "stg_verify"),
        data="dag/stg",
        time_limit_s=150.0,
    ),
    Suite(
        name="grid-braun",
        family="dag",
        help="Braun et al. 512 x 16 ETC instances (R||Cmax) vs the best known makespans",
        **suite_functions("placement.benchmarks.dag.braun", "braun"),
        data="grid/braun-512x16",
        time_limit_s=60.0,
    ),
    Suite(
        name="grid-large",
        family="dag",
        help="generated Braun-style R||Cmax at 1,024 x 32, 2,048 x 64, 4,096 x 128 (12 classes "
        "each) vs Min-Min, Sufferage and our bound",
        **suite_functions("placement.benchmarks.dag.grid_large", "grid_large"),
        time_limit_s=60.0,
        parameters=(
            *_braun_parameters(("1024x32", "2048x64", "4096x128")),
            Parameter(
                "highs_after",
                "positive_float",
                None,
                help="then HiGHS alone for this many seconds from our schedule (default: off)",
            ),
        ),
    ),
    Suite(
        name="grid-hcsp",
        family="dag",
        help="Braun-protocol ETC files at hcsp scale (2,048 x 64, 4,096 x 128, 12 classes) "
        "written, read back with placement import braun and solved",
        **suite_functions("placement.benchmarks.dag.grid_hcsp", "grid_hcsp"),
        time_limit_s=60.0,
        parameters=(
            *_braun_parameters(("2048x64", "4096x128")),
            Parameter(
                "factor",
                "positive_float",
                6.0,
                help="ETC units per published unit (default: 6, hcsp-sized values)",
            ),
            Parameter("threads", "positive_int", 2, help="solver threads (default: 2)"),
        ),
    ),
    Suite(
        name="dag-wfcommons",
        family="dag",
        help="WfCommons workflows (8 public, 8 generated of 300-1,000 tasks) on 3 machine sets "
        "vs HEFT, PEFT, CPOP and our bound",
        **suite_functions("placement.benchmarks.dag.wfcommons", "wfcommons"),
        data="dag/wfcommons",
        time_limit_s=60.0,
        parameters=(
            Parameter(
                "cases",
                "name_list",
                (),
                help="only the cases whose id matches one of these shell patterns (WORKFLOW@MACHINES, e.g. '1000genome*@default,montage-700-s1@*'); "
                "default: all",
            ),
        ),
    ),
    Suite(
        name="dag-scale",
        family="dag",
        help="heuristic times and exact backends: DAG 1,000 x 32, grid 512 x 16 and 4,096 x 128",
        **suite_functions("placement.benchmarks.dag.scale", "scale"),
        time_limit_s=60.0,
        exclusive=True,
    ),
)
