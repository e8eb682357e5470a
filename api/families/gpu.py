"""Command-line hooks of the GPU family: ``placement generate gpu`` and ``placement import
openb``."""

from __future__ import annotations

import argparse
from typing import Any

from placement.api.argtypes import fraction, name_list, non_negative_int, positive_int
from placement.api.extensions import Generator, Importer, Suite, register, suite_functions


def _gpu_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--gpus", type=positive_int, required=True, metavar="N", help="GPUs in the cluster"
    )
    parser.add_argument(
        "--jobs", type=non_negative_int, required=True, metavar="M", help="jobs to place"
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        metavar="S",
        help="random seed; the same seed and sizes give the same file (default: 0)",
    )
    parser.add_argument(
        "--occupancy",
        type=fraction,
        default=0.25,
        metavar="F",
        help="share of GPU capacity already used by running work, in [0, 1] (default: 0.25)",
    )
    parser.add_argument(
        "--fractional-share",
        type=fraction,
        default=0.3,
        metavar="F",
        help="expected share of fractional inference jobs (default: 0.3)",
    )
    parser.add_argument(
        "--gang-share",
        type=fraction,
        default=0.2,
        metavar="F",
        help="expected share of multi-node training gangs (default: 0.2)",
    )
    parser.add_argument(
        "--cpu-share",
        type=fraction,
        default=0.05,
        metavar="F",
        help="expected share of CPU-only jobs (default: 0.05); the rest are single-node "
        "training jobs, so the three shares add up to at most 1",
    )
    parser.add_argument(
        "--gpu-types",
        type=name_list,
        default=("A100", "H100", "V100"),
        metavar="T,T,...",
        help="GPU types of the racks and of the jobs' type restrictions (default: A100,H100,V100)",
    )


def _gpu_build(args: argparse.Namespace) -> Any:
    # Imported here so `placement --help` does not load the generator (or fail without it).
    from placement.models.gpu.generate import generate

    return generate(
        args.gpus,
        args.jobs,
        args.seed,
        occupancy=args.occupancy,
        fractional_share=args.fractional_share,
        gang_share=args.gang_share,
        cpu_share=args.cpu_share,
        gpu_types=args.gpu_types,
        # The description records the command that makes the file again, --out included.
        out=None if args.out == "-" else args.out,
    )


register(
    Generator(
        family="gpu",
        help="a topology-aware GPU cluster and a job mix",
        description=(
            "Generate a seeded GPU-allocation instance: nodes in NVLink domains, racks and "
            "spines, with part of the capacity already in use, and a mix of whole-GPU, "
            "fractional and CPU-only jobs, gangs, priorities and locality wishes."
        ),
        add_arguments=_gpu_arguments,
        build=_gpu_build,
    )
)


def _openb_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "nodes", metavar="NODES.csv", help="the trace's node list (openb_node_list_gpu_node.csv)"
    )
    parser.add_argument(
        "pods", metavar="PODS.csv", help="a pod list of the trace (openb_pod_list_*.csv)"
    )
    parser.add_argument("--name", default="openb", help="instance name (default: openb)")


def _openb_build(args: argparse.Namespace) -> Any:
    from placement.models.gpu.openb.loader import load_openb

    return load_openb(args.nodes, args.pods, name=args.name)


register(
    Importer(
        format="openb",
        family="gpu",
        help="the Alibaba GPU cluster trace (openb node and pod CSVs)",
        description=(
            "Read the Alibaba openb trace's own CSV files: every node of the node list (all "
            "free, two topology levels: nvlink and node) and every pod of the pod list as a "
            "one-worker job of priority 1. Fractional pods (one GPU, less than 1000 milli) "
            "become shared-GPU jobs."
        ),
        add_arguments=_openb_arguments,
        build=_openb_build,
    )
)

_BENCH = "placement.models.gpu.bench"

register(
    Suite(
        name="gpu-synthetic",
        family="gpu",
        help="generated instances: greedy vs CP-SAT vs MILP-HiGHS vs MILP-CBC (objective, "
        "bound, gap, time, peak memory)",
        **suite_functions(_BENCH, "synthetic"),
        time_limit_s=5.0,
        quick_time_limit_s=1.0,
    )
)
register(
    Suite(
        name="gpu-openb",
        family="gpu",
        help="the FGD paper's protocol on the Alibaba openb trace: six peers (reproduced), our "
        "online and batch modes, the offline LP bound",
        **suite_functions(_BENCH, "openb"),
        data="gpu/openb",
        time_limit_s=1.0,
        quick_time_limit_s=1.0,
    )
)
