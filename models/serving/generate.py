"""Seeded synthetic serving instances: length classes drawn log-uniformly (prompts in
[--min-input, --max-input] tokens, outputs in [--min-output, --max-output]) with random
shares, an arrival rate, targets, and the GPUs of :mod:`.profiles` (Splitwise's measured
Llama-2-70B profiles by default; the roofline ones are not measurements)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from placement.models.serving.instance import GpuType, LengthClass, Profile, ServingInstance, Slo
from placement.models.serving.profiles import CATALOGUE, MEASURED_MODEL, catalogue_profiles
from placement.solver.errors import InputError
from placement.solver.hooks import SEED, Generator, Parameter


def cluster(model: str, a100: int, h100: int) -> tuple[list[GpuType], list[Profile]]:
    """The GPU types (``a100`` A100s, ``h100`` H100s) and the model's profiles on them
    (:func:`.profiles.catalogue_profiles`); InputError naming the flag when there are none."""
    gpus = {k: v for k, v in (("a100", a100), ("h100", h100)) if v > 0}
    if not gpus:
        raise InputError.single("a100", a100, "at least one GPU (--a100 or --h100)")
    types, profiles = catalogue_profiles(model, gpus)
    if not profiles:
        raise InputError.single(
            "model",
            model,
            "a model whose weights fit the GPUs given (the measured llama2-70b-splitwise "
            "profiles need 8 GPUs of a type: --a100 8 or --h100 8)",
        )
    return types, profiles


def generate(
    classes: int = 4,
    rate: float = 4.0,
    a100: int = 8,
    h100: int = 0,
    budget: int = 0,
    seed: int = 0,
    model: str = MEASURED_MODEL,
    ttft_ms: float = 2000.0,
    tpot_ms: float = 100.0,
    min_input: int = 64,
    max_input: int = 4096,
    min_output: int = 16,
    max_output: int = 512,
    out: str | None = None,
) -> ServingInstance:
    """A seeded instance (module docstring)."""
    del out
    if model not in CATALOGUE:
        raise InputError.single("model", model, f"one of {', '.join(CATALOGUE)}")
    if min_input > max_input:
        raise InputError.single("max_input", max_input, f"at least --min-input ({min_input})")
    if min_output > max_output:
        raise InputError.single("max_output", max_output, f"at least --min-output ({min_output})")
    types, profiles = cluster(model, a100, h100)
    rng = np.random.default_rng(seed)
    out_classes = []
    for i in range(classes):
        inp = int(math.exp(rng.uniform(math.log(min_input), math.log(max_input))))
        outp = int(math.exp(rng.uniform(math.log(min_output), math.log(max_output))))
        out_classes.append(
            LengthClass(f"c{i}", max(1, inp), max(1, outp), round(float(rng.uniform(0.2, 1)), 3))
        )
    name = f"serving-{classes}c-s{seed}"
    return ServingInstance(
        types,
        profiles,
        out_classes,
        float(rate),
        Slo(float(ttft_ms), float(tpot_ms)),
        int(budget),
        name=name,
        description=f"generated: {classes} classes at {rate:g} req/s, {model}, seed {seed}",
    )


def cluster_parameters(a100: int) -> tuple[Parameter, ...]:
    """``--a100`` (default ``a100``), ``--h100`` and ``--budget``: the GPUs of a generated or
    imported instance."""
    return (
        Parameter(
            "a100", "non_negative_int", a100, maximum=100_000, metavar="N", shown=True,
            help="A100s",
        ),
        Parameter(
            "h100", "non_negative_int", 0, maximum=100_000, metavar="N", help="H100s (default 0)"
        ),
        Parameter(
            "budget", "non_negative_int", 0, maximum=1_000_000, metavar="G",
            help="GPU budget (0: none)",
        ),
    )  # fmt: skip


TARGET_PARAMETERS = (
    Parameter("model", "str", MEASURED_MODEL, choices=CATALOGUE, help="the model's profiles"),
    Parameter("ttft_ms", "positive_float", 2000.0, metavar="MS", help="default 2000"),
    Parameter("tpot_ms", "positive_float", 100.0, metavar="MS", help="default 100"),
)
"""``--model``, ``--ttft-ms`` and ``--tpot-ms``."""


def _build(p: dict[str, Any]) -> ServingInstance:
    return generate(
        p["classes"],
        p["rate"],
        p["a100"],
        p["h100"],
        p["budget"],
        p["seed"],
        p["model"],
        p["ttft_ms"],
        p["tpot_ms"],
        p["min_input"],
        p["max_input"],
        p["min_output"],
        p["max_output"],
        out=p.get("out"),
    )


GENERATORS = (
    Generator(
        family="serving",
        help="an LLM serving cluster: length classes, an arrival rate, targets, GPUs",
        description=(
            "Generate seeded length classes (log-uniform prompt and output lengths) at an "
            "arrival rate, with TTFT and TPOT targets, on A100 and H100 GPUs (Llama-2-70B "
            "on 8 GPUs measured by Splitwise, or --model llama2-13b / llama2-70b: roofline "
            "estimates, not measurements); --budget 0 asks for the least cost serving "
            "everything, else the most goodput within the budget."
        ),
        parameters=(
            Parameter(
                "classes",
                "positive_int",
                4,
                maximum=1000,
                metavar="N",
                shown=True,
                help="default 4",
            ),
            Parameter("rate", "positive_float", 4.0, metavar="R", shown=True, help="req/s"),
            *cluster_parameters(8),
            SEED,
            *TARGET_PARAMETERS,
            Parameter(
                "min_input", "positive_int", 64, maximum=1_000_000, metavar="T", help="default 64"
            ),
            Parameter(
                "max_input",
                "positive_int",
                4096,
                maximum=1_000_000,
                metavar="T",
                help="default 4096",
            ),
            Parameter(
                "min_output", "positive_int", 16, maximum=1_000_000, metavar="T", help="default 16"
            ),
            Parameter(
                "max_output",
                "positive_int",
                512,
                maximum=1_000_000,
                metavar="T",
                help="default 512",
            ),
        ),
        build=_build,
    ),
)
"""``placement generate serving``."""
