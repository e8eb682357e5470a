"""Synthetic-instance generators behind ``placement generate <family>``.

Each family adds its generator with one :func:`register` call: the options it takes and a
function that turns the parsed options into a typed instance (with ``name`` and
``description`` set). The command line builds one ``generate`` subcommand per registration
and writes the instance file; the generator itself never touches files.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from placement.api.argtypes import fraction, name_list, non_negative_int, positive_int

__all__ = ["GENERATORS", "Generator", "register"]


@dataclass(frozen=True)
class Generator:
    """One ``placement generate <family>`` subcommand.

    Attributes
    ----------
    family:
        The registered family name; also the subcommand name.
    help:
        One line for ``placement generate --help``.
    description:
        A paragraph for ``placement generate <family> --help``.
    add_arguments:
        Adds the generator's own options to its subparser (``--out`` is added for it).
    build:
        Turns the parsed options into a typed instance of the family. May raise
        :class:`~placement.solver.errors.InputError` for bad values.
    """

    family: str
    help: str
    description: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    build: Callable[[argparse.Namespace], Any]


GENERATORS: dict[str, Generator] = {}
"""Family name -> generator, in registration order."""


def register(generator: Generator) -> Generator:
    """Make ``placement generate <generator.family>`` available; returns the generator."""
    GENERATORS[generator.family] = generator
    return generator


# --- gpu ----------------------------------------------------------------------------------------


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
