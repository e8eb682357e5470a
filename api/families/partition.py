"""Command-line hooks of the partition family: ``placement generate partition``,
``placement import tarnawski`` and ``placement plot`` (stages of a partition)."""

from __future__ import annotations

import argparse
from typing import Any

from placement.api.argtypes import name_list, positive_int
from placement.api.extensions import (
    Generator,
    Importer,
    Plotter,
    Suite,
    lazy,
    register,
    suite_functions,
)

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


register(Plotter("partition", lazy("placement.models.partition.plot", "draw")))


def _device_count(text: str) -> tuple[str, int]:
    path, sep, count = text.rpartition(":")
    if not sep or not path:
        raise argparse.ArgumentTypeError(f"{text!r} is not SPEC.json:COUNT")
    try:
        n = int(count)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{count!r} is not a device count") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{count!r} is not a count >= 1")
    return path, n


def _llm_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "config",
        metavar="CONFIG.json",
        help="a HuggingFace config.json or an llm-analysis model config",
    )
    parser.add_argument(
        "--device",
        type=_device_count,
        action="append",
        required=True,
        metavar="SPEC.json:COUNT",
        help="an llm-analysis accelerator spec and how many (repeatable)",
    )
    parser.add_argument(
        "--mode", choices=sorted(_MODES), default="serving", help="workload mode (default: serving)"
    )
    parser.add_argument(
        "--batch-size",
        type=positive_int,
        default=1,
        metavar="B",
        help="sequences per micro-batch / decode step (default: 1)",
    )
    parser.add_argument(
        "--context-length",
        type=int,
        default=1024,
        metavar="C",
        help="tokens of KV cache per sequence (default: 1024)",
    )
    parser.add_argument(
        "--seq-len",
        type=positive_int,
        default=2048,
        metavar="S",
        help="training: tokens per sequence (default: 2048)",
    )
    parser.add_argument(
        "--in-flight",
        type=positive_int,
        default=None,
        metavar="Q",
        help="micro-batches in flight (default: serving, one per device; training, 1)",
    )
    parser.add_argument(
        "--inter-node-gbps",
        type=float,
        default=10.0,
        metavar="G",
        help="network between nodes, Gb/s (default: 10)",
    )
    parser.add_argument(
        "--devices-per-node",
        type=positive_int,
        default=1,
        metavar="K",
        help="devices per node (default: 1)",
    )
    parser.add_argument(
        "--intra-node-gbps",
        type=float,
        default=0.0,
        metavar="G",
        help="link inside a node, Gb/s (default: same as between nodes)",
    )
    parser.add_argument(
        "--memory-reserve",
        type=float,
        default=0.1,
        metavar="F",
        help="share of each device's memory kept free (default: 0.1)",
    )


def _llm_build(args: argparse.Namespace) -> Any:
    from placement.models.partition.hf import build_llm, device_spec, load_model_config
    from placement.models.partition.instance import Mode
    from placement.solver.errors import InputError

    if not 0 <= args.memory_reserve < 1:
        raise InputError.single("--memory-reserve", args.memory_reserve, "a share in [0, 1)")
    if args.inter_node_gbps <= 0 or args.intra_node_gbps < 0:
        raise InputError.single("--inter-node-gbps", args.inter_node_gbps, "Gb/s > 0")
    shape = load_model_config(args.config)
    devices = [(device_spec(path), count) for path, count in args.device]
    mode = Mode[_MODES[args.mode]]
    in_flight = args.in_flight or (sum(c for _, c in devices) if mode is Mode.SERVING else 1)
    instance = build_llm(
        shape,
        devices,
        mode=mode,
        batch_size=args.batch_size,
        context_length=args.context_length,
        seq_len=args.seq_len,
        devices_per_node=args.devices_per_node,
        inter_node_bandwidth_bytes_per_s=args.inter_node_gbps * 1e9 / 8,
        intra_node_bandwidth_bytes_per_s=args.intra_node_gbps * 1e9 / 8,
        memory_reserve=args.memory_reserve,
        in_flight_microbatches=in_flight,
    )
    devs = " ".join(f"--device {path}:{count}" for path, count in args.device)
    instance.description += (
        f". Made by: placement import llm {args.config} {devs} --mode {args.mode} "
        f"--batch-size {args.batch_size} --context-length {args.context_length}"
    )
    return instance


register(
    Importer(
        format="llm",
        family="partition",
        help="a transformer config and accelerator specs (per-layer roofline profiles)",
        description=(
            "Build a partition instance from a HuggingFace-style model config (GPT-2, BERT, "
            "LLaMA / Llama-2 with grouped-query attention, OPT, BLOOM) and llm-analysis "
            "accelerator specs: weights, FLOPs, KV cache and activations per block, times from "
            "a roofline (docs/formulations/partition.md, Builders)."
        ),
        add_arguments=_llm_arguments,
        build=_llm_build,
    )
)


_BENCH = "placement.models.partition.bench"
register(
    Suite(
        name="partition-tarnawski",
        family="partition",
        help="Tarnawski et al. layer graphs: the DP's optimum proved by CP-SAT and MILP, beside PipeDream and the greedies",
        **suite_functions(_BENCH, "tarnawski"),
        data="partition/tarnawski-layergraphs",
        time_limit_s=10.0,
    )
)
register(
    Suite(
        name="partition-llm",
        family="partition",
        help="Llama-2-70B serving on a heterogeneous cluster (helix) and LLaMA-7B on edge devices (edge)",
        **suite_functions(_BENCH, "llm"),
        data="partition/llm-configs",
        time_limit_s=60.0,
    )
)
register(
    Suite(
        name="partition-chain",
        family="partition",
        help="the DP on homogeneous chains up to 4,000 layers x 64 devices, checked against MILP proofs",
        **suite_functions(_BENCH, "chain"),
        time_limit_s=30.0,
    )
)
