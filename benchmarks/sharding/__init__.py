"""The sharding family's benchmark suite; the code is in :mod:`.suites`."""

from __future__ import annotations

from placement.benchmarks.runner import Suite, suite_functions
from placement.solver.hooks import Parameter

PARAMETERS = (
    Parameter(
        "topologies",
        "name_list",
        ("8x1", "16x2", "64x8", "128x16"),
        help="devices x hosts (default: 8x1,16x2,64x8,128x16)",
    ),
    Parameter(
        "generated",
        "name_list",
        ("200@all", "1000@128x16"),
        help="generated sets as TABLES@TOPOLOGY (or @all) (default: 200@all,1000@128x16)",
    ),
    Parameter("hbm_gib", "positive_float", 40.0, help="MLPerf: HBM per device (default 40)"),
    Parameter("seed", "int", 0, help="seed of the generated sets (default 0)"),
    Parameter(
        "torchrec", "str", "yes", choices=("yes", "no"), help="run TorchRec's planner if installed"
    ),
)
"""The suite's settings (``placement bench sharding-dlrm --param NAME=VALUE``)."""

SUITES = (
    Suite(
        name="sharding-dlrm",
        family="sharding",
        help="MLPerf DLRM tables and generated sets at 8-128 devices: ours vs TorchRec's "
        "planner vs size- and lookup-balanced greedy (bottleneck, communication, headroom, "
        "proof and gap)",
        **suite_functions("placement.benchmarks.sharding.suites"),
        data="sharding",
        time_limit_s=20.0,
        quick_time_limit_s=3.0,
        exclusive=True,
        parameters=PARAMETERS,
    ),
)
