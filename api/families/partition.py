"""Command-line hooks of the partition family: ``placement generate partition``,
``placement import tarnawski`` and ``placement plot`` (stages of a partition)."""

from __future__ import annotations

import argparse
from typing import Any

from placement.api.argtypes import name_list, positive_int
from placement.api.extensions import Generator, Importer, Plotter, register

_MODES = {"training": "TRAINING", "inference": "INFERENCE", "serving": "SERVING"}


def _fill(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value <= 2:
        raise argparse.ArgumentTypeError(f"{text!r} is not in (0, 2]")
    return value


def _generate_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--layers", type=positive_int, required=True, metavar="N", help="layers of the model"
    )
    parser.add_argument("--devices", type=positive_int, required=True, metavar="D", help="devices")
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        metavar="S",
        help="random seed; the same seed and sizes give the same file (default: 0)",
    )
    parser.add_argument(
        "--dag", action="store_true", help="add skip edges (a DAG); default: a chain"
    )
    parser.add_argument(
        "--mode",
        choices=sorted(_MODES),
        default="training",
        help="workload mode (default: training)",
    )
    parser.add_argument(
        "--device-types",
        type=name_list,
        default=("A100",),
        metavar="T,T,...",
        help="device types drawn for the devices: A100, L4, T4 (default: A100)",
    )
    parser.add_argument(
        "--devices-per-node",
        type=positive_int,
        default=1,
        metavar="K",
        help="devices per node sharing the intra-node link (default: 1)",
    )
    parser.add_argument(
        "--memory-fill",
        type=_fill,
        default=0.6,
        metavar="F",
        help="model memory / device memory, in (0, 2] (default: 0.6)",
    )


def _generate_build(args: argparse.Namespace) -> Any:
    from placement.models.partition.generate import generate
    from placement.models.partition.instance import Mode

    return generate(
        args.layers,
        args.devices,
        args.seed,
        dag=args.dag,
        mode=Mode[_MODES[args.mode]],
        device_types=tuple(args.device_types),
        devices_per_node=args.devices_per_node,
        memory_fill=args.memory_fill,
        out=None if args.out == "-" else args.out,
    )


register(
    Generator(
        family="partition",
        help="a chain or DAG of layers and a set of devices to split it over",
        description=(
            "Generate a seeded model-partitioning instance: layers with log-normal weights, "
            "activations and FLOPs, devices of the given types (A100, L4, T4) whose memory is "
            "scaled so that the model fills --memory-fill of it, and nodes of "
            "--devices-per-node devices."
        ),
        add_arguments=_generate_arguments,
        build=_generate_build,
    )
)


def _tarnawski_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "graph",
        metavar="GRAPH.json",
        help="a layer graph of msr-fiddle/dnn-partitioning (Tarnawski et al.)",
    )
    parser.add_argument("--name", default=None, help="instance name (default: from the file)")


def _tarnawski_build(args: argparse.Namespace) -> Any:
    from placement.models.partition.tarnawski import load_tarnawski

    return load_tarnawski(args.graph, name=args.name)


register(
    Importer(
        format="tarnawski",
        family="partition",
        help="a layer graph of Tarnawski et al. (NeurIPS 2020), max-load objective",
        description=(
            "Read a JSON layer graph of msr-fiddle/dnn-partitioning: each colour class becomes "
            "a layer (forward and backward times summed, sizes summed), classes in topological "
            "order, edge costs as fixed transfer times, maxFPGAs accelerators of "
            "maxSizePerFPGA bytes, training-pipeline (max-load) objective."
        ),
        add_arguments=_tarnawski_arguments,
        build=_tarnawski_build,
    )
)


def _draw(instance: Any, solution: Any, out_path: str) -> None:
    from placement.models.partition.plot import draw

    draw(instance, solution, out_path)


register(Plotter(family="partition", draw=_draw))
