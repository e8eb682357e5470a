"""The DAG family's benchmark suites (and the grid suite on independent tasks); the code is in
:mod:`.suites`."""

from __future__ import annotations

from placement.benchmarks.runner import Suite, suite_functions
from placement.solver.hooks import Parameter

_CODE = "placement.benchmarks.dag.suites"

SUITES = (
    Suite(
        name="dag-topcuoglu",
        family="dag",
        help="the HEFT paper's example: HEFT (80), our greedy, exact solves with their proofs",
        **suite_functions(_CODE, "topcuoglu"),
        data="dag/topcuoglu-2002",
        time_limit_s=10.0,
        quick_time_limit_s=10.0,
    ),
    Suite(
        name="dag-stg",
        family="dag",
        help="STG (Kasahara) P|prec|Cmax vs the published optima and bounds (1,440 cases)",
        **suite_functions(_CODE, "stg"),
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
        **suite_functions(_CODE, "stg_verify"),
        data="dag/stg",
        time_limit_s=150.0,
    ),
    Suite(
        name="grid-braun",
        family="dag",
        help="Braun et al. 512 x 16 ETC instances (R||Cmax) vs the best known makespans",
        **suite_functions(_CODE, "braun"),
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
            Parameter(
                "sizes",
                "name_list",
                ("1024x32", "2048x64", "4096x128"),
                help="TASKSxMACHINES sizes (default: 1024x32,2048x64,4096x128)",
            ),
            Parameter(
                "classes",
                "name_list",
                tuple(f"u_{c}_{t}{m}" for c in "csi" for t in ("hi", "lo") for m in ("hi", "lo")),
                help="Braun classes (default: all 12, u_c_hihi ... u_i_lolo)",
            ),
            Parameter("seed", "non_negative_int", 0, help="generator seed (default: 0)"),
            Parameter(
                "highs_after",
                "positive_float",
                None,
                help="then HiGHS alone for this many seconds from our schedule (default: off)",
            ),
        ),
    ),
    Suite(
        name="dag-wfcommons",
        family="dag",
        help="WfCommons workflows (8 public, 8 generated of 300-1,000 tasks) on 3 machine sets "
        "vs HEFT, PEFT, CPOP and our bound",
        **suite_functions(_CODE, "wfcommons"),
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
        **suite_functions(_CODE, "scale"),
        time_limit_s=60.0,
        exclusive=True,
    ),
)
