"""The GPU family's benchmark suites; the code is in :mod:`.suites`."""

from __future__ import annotations

from placement.benchmarks.runner import Suite, suite_functions
from placement.solver.hooks import Parameter

_CODE = "placement.benchmarks.gpu.suites"

SUITES = (
    Suite(
        name="gpu-synthetic",
        family="gpu",
        help="generated instances: greedy vs CP-SAT vs MILP-HiGHS vs MILP-CBC (objective, "
        "bound, gap, time, peak memory)",
        **suite_functions(_CODE, "synthetic"),
        time_limit_s=5.0,
        quick_time_limit_s=1.0,
        parameters=(
            Parameter(
                "gpus",
                "name_list",
                ("1024", "10240"),
                help="cluster sizes in GPUs, of 1024 (200 jobs) and 10240 (2,000 jobs) "
                "(default: both)",
            ),
            Parameter("seeds", "name_list", ("1", "2", "3"), help="seeds (default: 1,2,3)"),
            Parameter(
                "backends",
                "name_list",
                ("greedy", "cpsat", "milp-highs", "milp-cbc"),
                help="backends (default: greedy,cpsat,milp-highs,milp-cbc)",
            ),
            Parameter(
                "reference",
                "positive_float",
                None,
                help="seconds for a reference bound in the greedy row: the full exact model's "
                "tier 1 by HiGHS (default: none)",
            ),
        ),
    ),
    Suite(
        name="gpu-openb",
        family="gpu",
        help="the FGD paper's protocol on the Alibaba openb trace: six peers (reproduced), our "
        "online, batch and defragmenting modes, the offline LP bound, the trace with "
        "departures, the latency of a cycle",
        **suite_functions("placement.benchmarks.gpu.openb.suite", "openb"),
        data="gpu/openb",
        time_limit_s=1.0,
        quick_time_limit_s=1.0,
        parameters=(
            Parameter(
                "trace",
                "path",
                repeated=True,
                help="pod lists (--trace FILE), or the FGD paper's variants built from the "
                "default trace (--trace variant:NAME, variant:paper for all)",
            ),
            Parameter("seeds", "str", help="seeds (--seeds A-B; default 42-51)"),
            Parameter("modes", "name_list", help="modes (--modes LIST; default: all)"),
            Parameter(
                "curve_time",
                "float",
                300.0,
                help="seconds of column generation per budget of the curve mode (default 300)",
            ),
            Parameter(
                "repack_budget",
                "name_list",
                None,
                help="budgets of the repack mode, fractions of the arrived pods "
                "(default 0.005,0.01,0.02,0.05)",
            ),
            Parameter(
                "repack_every",
                "positive_int",
                None,
                help="arrivals between re-packing cycles while pods wait (default 200)",
            ),
            Parameter(
                "repack_time",
                "positive_float",
                None,
                help="wall-time budget of one re-packing cycle's plan in seconds (default 240)",
            ),
            Parameter(
                "repack_nodes",
                "positive_int",
                None,
                help="nodes of a re-packing cycle's neighbourhood (default: the whole cluster)",
            ),
            Parameter(
                "repack_moves",
                "positive_int",
                None,
                help="most pods one re-packing cycle migrates for the first time (default: what the budget allows)",
            ),
            Parameter(
                "repack_pressure",
                "float",
                None,
                help="re-packing cycles wait until the waiting pods' GPU demand is this share "
                "of the free GPUs (default 0: from the first failure)",
            ),
            Parameter(
                "repack_per_gpu",
                "float",
                None,
                help="most pods a re-packing cycle migrates for the first time per GPU of the "
                "waiting pods' demand (default 10; 0: no such cap)",
            ),
        ),
    ),
    Suite(
        name="gpu-topology",
        family="gpu",
        help="a generated 1,024 / 8,192-GPU cluster and gang trace, cycle by cycle: Kueue TAS, "
        "KAI, Volcano (one gang at a time) vs ours (all pending gangs at once, exact); waiting "
        "GPU-hours, cross-rack traffic; the two user cases",
        **suite_functions("placement.benchmarks.gpu.topology", "topology"),
        time_limit_s=1.0,
        quick_time_limit_s=0.5,
        parameters=(
            Parameter(
                "sizes", "name_list", ("1024", "8192"), help="cluster GPUs (default: 1024,8192)"
            ),
            Parameter("seeds", "positive_int", 3, help="trace seeds 0..N-1 (default: 3)"),
            Parameter(
                "hours",
                "float",
                0.0,
                help="hours of arrivals (default 0: 8 at 1,024 GPUs, 1 at 8,192)",
            ),
            Parameter(
                "policies",
                "name_list",
                (),
                help="policies (default: all: kueue-mixed, kueue-best-fit, "
                "kueue-least-free-capacity, kai, volcano, ours, ours-migrate (ours moving up to "
                "4 running pods per cycle where that places more); on request also "
                "ours-no-aging, ours without its aging priority); the user cases run only "
                "without this",
            ),
        ),
    ),
    Suite(
        name="gpu-reclaim",
        family="gpu",
        help="Lyra's reclaim of lent inference servers: fewest preempted or shrunk training "
        "workers, ours (CP-SAT, with its bound) vs Lyra's greedy and evict-lowest",
        **suite_functions("placement.benchmarks.gpu.reclaim", "reclaim"),
        time_limit_s=10.0,
        quick_time_limit_s=1.0,
        parameters=(
            Parameter("servers", "positive_int", 32, help="servers lent (default: 32)"),
            Parameter(
                "reclaim", "name_list", ("4", "8"), help="servers reclaimed N (default: 4,8)"
            ),
            Parameter("seeds", "name_list", ("1-5",), help="seeds, e.g. 1-5 or 1,3 (default: 1-5)"),
        ),
    ),
    Suite(
        name="gpu-density",
        family="gpu",
        help="node CPU capacity that falls with density (Isstaif et al. 2025): nodes a packing "
        "needs with and without the curve, and the nodes a density-blind packing overloads "
        "(first fit, best fit, CP-SAT)",
        **suite_functions("placement.benchmarks.gpu.density", "density"),
        time_limit_s=10.0,
        quick_time_limit_s=2.0,
        parameters=(
            Parameter("pods", "positive_int", 1500, help="pods per seed (default: 1500)"),
            Parameter(
                "seeds",
                "name_list",
                tuple(str(s) for s in range(1, 11)),
                help="seeds (default: 1-10)",
            ),
            Parameter(
                "curve",
                "name_list",
                None,
                help="the capacity curve as pods:milli-cores points "
                "(default: 0:64000,20:63000,50:58000,110:46080)",
            ),
        ),
    ),
    Suite(
        name="gpu-slurm",
        family="gpu",
        help="one real Slurm job stream (Cirrus, as GPU jobs) replayed twice on a live Slurm "
        "cluster: Slurm alone (backfill, topology/tree) vs placement slurm schedule; waiting "
        "GPU-minutes, leaf switches per gang, --switches met, Kant's metrics",
        **suite_functions("placement.benchmarks.gpu.slurm", "slurm"),
        time_limit_s=1.0,
        quick_time_limit_s=0.5,
        exclusive=True,
        parameters=(
            Parameter("seeds", "str", "1-5", help="seeds, e.g. 1-5 or 1,3 (default: 1-5)"),
            Parameter("leaves", "positive_int", 4, help="leaf switches (default: 4)"),
            Parameter("nodes_per_leaf", "positive_int", 4, help="nodes per leaf (default: 4)"),
            Parameter("gpus", "positive_int", 4, help="GPUs per node (default: 4)"),
            Parameter("jobs", "positive_int", 80, help="jobs per replay (default: 80)"),
            Parameter(
                "span",
                "positive_float",
                90.0,
                help="replay seconds the stream's arrivals are scaled to (default: 90)",
            ),
            Parameter(
                "max_run",
                "positive_float",
                90.0,
                help="longest replay run time in seconds (default: 90)",
            ),
            Parameter(
                "interval",
                "positive_float",
                0.5,
                help="seconds between placement slurm schedule cycles (default: 0.5)",
            ),
            Parameter(
                "gang_share",
                "float",
                0.2,
                help="share of multi-node jobs, gangs added to reach it (default: 0.2)",
            ),
            Parameter(
                "switch_wait",
                "positive_int",
                30,
                help="seconds a gang waits for one leaf switch (--switches=1@W; default: 30)",
            ),
        ),
    ),
)
