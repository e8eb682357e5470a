"""The fl family's benchmark suites: fleets (:mod:`.suites`) and real training under each
policy (:mod:`.training`)."""

from __future__ import annotations

from placement.benchmarks.runner import Suite, suite_functions
from placement.solver.hooks import Parameter

PARAMETERS = (
    Parameter(
        "fleets",
        "name_list",
        ("100x2", "100x8", "1000x2", "1000x8", "10000x2", "10000x8"),
        help="devices x jobs (default: 100x2,100x8,1000x2,1000x8,10000x2,10000x8)",
    ),
    Parameter(
        "limits",
        "name_list",
        ("none", "2"),
        help="participation limits: none, or a slack over the mean device-rounds wanted "
        "(default: none,2)",
    ),
    Parameter("rounds", "positive_int", 10, help="rounds of the horizon (default 10)"),
    Parameter("seed", "int", 0, help="seed of the generated fleets (default 0)"),
)
"""The suite's settings (``placement bench fl-fleets --param NAME=VALUE``)."""

SUITES = (
    Suite(
        name="fl-fleets",
        family="fl",
        help="generated fleets of 100-10,000 devices, 2-8 FL jobs: ours vs FedACT's greedy vs "
        "random selection (per-round time, average JCT, Jain's fairness, bound and gap)",
        **suite_functions("placement.benchmarks.fl.suites"),
        time_limit_s=20.0,
        quick_time_limit_s=3.0,
        exclusive=True,
        parameters=PARAMETERS,
    ),
    Suite(
        name="fl-training",
        family="fl",
        help="real FedAvg training (numpy logistic regression on scikit-learn's digits) under "
        "each policy's assignment: test accuracy, JCT and time to 85 % (needs scikit-learn)",
        **suite_functions("placement.benchmarks.fl.training"),
        time_limit_s=10.0,
        quick_time_limit_s=2.0,
        exclusive=True,
    ),
)
