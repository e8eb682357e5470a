"""Command-line hooks of the DAG family: ``placement generate dag``, ``placement import
topcuoglu | stg | braun | wfcommons``, the Gantt chart of ``placement plot`` and the benchmark
suites of ``placement bench`` (``models/dag/bench.py``)."""

from __future__ import annotations

import argparse
from typing import Any

from placement.api.argtypes import fraction, positive_int
from placement.api.extensions import (
    Generator,
    Importer,
    Plotter,
    Suite,
    lazy,
    register,
    suite_functions,
)


def _command(args: argparse.Namespace, words: list[str]) -> str:
    out = "" if args.out == "-" else f" --out {args.out}"
    return "placement " + " ".join(words) + out


def _generate_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--shape",
        choices=("random", "etl", "grid"),
        default="random",
        help="random: Topcuoglu-style DAG; etl: extract/transform/join/load with data "
        "locality; grid: independent tasks with an ETC matrix (default: random)",
    )
    parser.add_argument("--tasks", type=positive_int, default=50, help="tasks (random, grid)")
    parser.add_argument("--machines", type=positive_int, default=4, help="machines (default: 4)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    parser.add_argument("--ccr", type=float, default=1.0, help="communication/computation ratio")
    parser.add_argument("--alpha", type=float, default=1.0, help="shape: >1 wide, <1 deep")
    parser.add_argument("--beta", type=fraction, default=0.5, help="machine heterogeneity")
    parser.add_argument("--out-degree", type=positive_int, default=3, help="max children")
    parser.add_argument("--sources", type=positive_int, default=4, help="extract tasks (etl)")
    parser.add_argument("--fan-out", type=positive_int, default=3, help="transforms per extract")
    parser.add_argument(
        "--consistency",
        choices=("consistent", "semi", "inconsistent"),
        default="inconsistent",
        help="ETC consistency (grid)",
    )


def _generate_build(args: argparse.Namespace) -> Any:
    from placement.models.dag.generate import etl_dag, grid_instance, random_dag

    if args.shape == "etl":
        cmd = _command(
            args,
            [
                "generate dag --shape etl",
                f"--sources {args.sources}",
                f"--fan-out {args.fan_out}",
                f"--machines {args.machines}",
                f"--seed {args.seed}",
            ],
        )
        return etl_dag(args.sources, args.fan_out, args.machines, args.seed, command=cmd)
    if args.shape == "grid":
        cmd = _command(
            args,
            [
                "generate dag --shape grid",
                f"--tasks {args.tasks}",
                f"--machines {args.machines}",
                f"--seed {args.seed}",
                f"--consistency {args.consistency}",
            ],
        )
        return grid_instance(args.tasks, args.machines, args.seed, args.consistency, command=cmd)
    cmd = _command(
        args,
        [
            "generate dag --shape random",
            f"--tasks {args.tasks}",
            f"--machines {args.machines}",
            f"--seed {args.seed}",
            f"--ccr {args.ccr}",
            f"--alpha {args.alpha}",
            f"--beta {args.beta}",
            f"--out-degree {args.out_degree}",
        ],
    )
    return random_dag(
        args.tasks,
        args.machines,
        args.seed,
        args.ccr,
        args.alpha,
        args.beta,
        args.out_degree,
        command=cmd,
    )


register(
    Generator(
        family="dag",
        help="a workflow DAG (random or ETL-shaped) or independent grid tasks",
        description=(
            "Generate a seeded DAG-scheduling instance: a Topcuoglu-style random DAG, an ETL "
            "workflow with datasets living in zones, or independent tasks with an ETC matrix."
        ),
        add_arguments=_generate_arguments,
        build=_generate_build,
    )
)


def _topcuoglu_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("exec_csv", metavar="EXEC.csv", help="task x processor costs")
    parser.add_argument("edges_csv", metavar="EDGES.csv", help="parent x child communication costs")


def _topcuoglu_build(args: argparse.Namespace) -> Any:
    from placement.models.dag.loaders import load_topcuoglu

    return load_topcuoglu(args.exec_csv, args.edges_csv)


def _stg_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="GRAPH.stg", help="a Standard Task Graph file")
    parser.add_argument(
        "--processors", type=positive_int, required=True, help="identical processors"
    )


def _stg_build(args: argparse.Namespace) -> Any:
    from placement.models.dag.loaders import load_stg

    return load_stg(args.path, args.processors)


def _braun_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="ETC", help="a Braun et al. ETC file (e.g. u_c_hihi.0)")


def _braun_build(args: argparse.Namespace) -> Any:
    from placement.models.dag.loaders import load_braun

    return load_braun(args.path)


def _wfcommons_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="WORKFLOW.json", help="a WfCommons instance (1.4, 1.5+)")
    parser.add_argument(
        "--machine-seed",
        type=int,
        default=None,
        help="place it on a generated machine set with this seed (models.dag.generate."
        "machine_set) instead of the default one",
    )
    parser.add_argument(
        "--machines",
        type=int,
        default=8,
        help="machines in the generated set (with --machine-seed; default 8, at least 3)",
    )


def _wfcommons_build(args: argparse.Namespace) -> Any:
    from placement.models.dag.generate import machine_set
    from placement.models.dag.loaders import load_wfcommons

    if args.machine_seed is None:
        return load_wfcommons(args.path)
    machines, links = machine_set(args.machine_seed, args.machines)
    instance = load_wfcommons(args.path, machines, links)
    instance.description += f" --machine-seed {args.machine_seed} --machines {args.machines}"
    return instance


for _format, _help, _description, _add, _build in (
    (
        "topcuoglu",
        "the HEFT paper's example graph (exec_time.csv and edges_data.csv)",
        "Read the 10-task, 3-processor example of Topcuoglu et al. (2002): each processor its "
        "own machine type, communication costs as bytes over a unit-bandwidth link.",
        _topcuoglu_arguments,
        _topcuoglu_build,
    ),
    (
        "stg",
        "a Standard Task Graph (Kasahara) file on identical processors",
        "Read an STG file (P|prec|Cmax): tasks with integer costs, no communication.",
        _stg_arguments,
        _stg_build,
    ),
    (
        "braun",
        "a Braun et al. ETC file (independent tasks, heterogeneous machines)",
        "Read an expected-time-to-compute matrix: each machine its own type.",
        _braun_arguments,
        _braun_build,
    ),
    (
        "wfcommons",
        "a WfCommons workflow JSON (schema 1.4 or 1.5+) on a generated machine set",
        "Read a WfCommons workflow (task runtimes, file sizes between tasks) onto eight "
        "machines of three types in two zones (models.dag.loaders.default_machine_set), or "
        "onto a seeded generated machine set (--machine-seed).",
        _wfcommons_arguments,
        _wfcommons_build,
    ),
):
    register(Importer(_format, "dag", _help, _description, _add, _build))


register(Plotter("dag", lazy("placement.models.dag.plot", "draw")))

_BENCH = "placement.models.dag.bench"
register(
    Suite(
        name="dag-topcuoglu",
        family="dag",
        help="the HEFT paper's example: HEFT (80), our greedy, exact solves with their proofs",
        **suite_functions(_BENCH, "topcuoglu"),
        data="dag/topcuoglu-2002",
        time_limit_s=10.0,
        quick_time_limit_s=10.0,
    )
)
register(
    Suite(
        name="dag-stg",
        family="dag",
        help="STG (Kasahara) P|prec|Cmax vs the published optima and bounds (1,440 cases)",
        **suite_functions(_BENCH, "stg"),
        data="dag/stg",
        time_limit_s=10.0,
        exclusive=True,
    )
)
register(
    Suite(
        name="dag-stg-verify",
        family="dag",
        help="a second opinion on new STG proofs: the disjunctive MILP on HiGHS",
        **suite_functions(_BENCH, "stg_verify"),
        data="dag/stg",
        time_limit_s=150.0,
    )
)
register(
    Suite(
        name="grid-braun",
        family="dag",
        help="Braun et al. 512 x 16 ETC instances (R||Cmax) vs the best known makespans",
        **suite_functions(_BENCH, "braun"),
        data="grid/braun-512x16",
        time_limit_s=60.0,
    )
)
register(
    Suite(
        name="dag-wfcommons",
        family="dag",
        help="WfCommons workflows on 8 heterogeneous machines vs HEFT, PEFT and CPOP",
        **suite_functions(_BENCH, "wfcommons"),
        data="dag/wfcommons",
        time_limit_s=30.0,
    )
)
register(
    Suite(
        name="dag-scale",
        family="dag",
        help="heuristic times and exact backends: DAG 1,000 x 32, grid 512 x 16 and 4,096 x 128",
        **suite_functions(_BENCH, "scale"),
        time_limit_s=60.0,
        exclusive=True,
    )
)
