"""Seeded synthetic fleets and concurrent FL jobs.

Jobs are drawn from the models of the multi-job FL papers' setups (FedACT 2026, Zhou et al.
AAAI'22 run CNNs, VGG-16 and ResNet-18 on MNIST/CIFAR-10-style data), with their public
sizes: the FedAvg CNN for MNIST (McMahan et al. 2017: 1,663,370 parameters, about 0.03
GFLOPs forward), the FedAvg 2-layer LSTM for Shakespeare (866,578 parameters), ResNet-18
(11.2 M parameters, 0.56 GFLOPs forward at 32x32) and VGG-16 (14.7 M parameters, 0.31
GFLOPs forward at 32x32); training compute per sample is three times the forward pass
(forward + backward). Each job needs every one of the ``--classes`` data classes covered in
every round, ``devices_per_round`` drawn in [``--min-k``, ``--max-k``] and converges after
``rounds`` drawn uniformly in [horizon/2, horizon] (the convergence model).

Devices: what is drawn and from which statistics (shapes chosen by us, not fitted to a
trace: say so next to any figure):

* training speed log-normal, median 20 GFLOP/s, shape 0.8 (about 14x between the 5th and
  95th percentiles: FedScale, Lai et al. ICML'22, reports mobile compute spread over one to
  two orders of magnitude from AI Benchmark);
* download bandwidth log-normal, median 20 Mbit/s, shape 0.9; upload a uniform 20-50 % of it
  (FedScale's MobiPerf-based network traces are of that spread and asymmetry);
* memory one of 2, 3, 4, 6, 8 GiB (phones);
* data classes: a label-skewed (non-IID) split as in FedAvg's pathological partition and
  the multi-job papers' non-IID setups: each device holds 2 to 4 of the ``--classes``
  classes, uniformly;
* availability: offline in each round with probability ``--offline``.

The participation limit is ``ceil(--participation-slack x`` the device-rounds the jobs want
over the fleet``)``, at least 1 (0: no limit).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from placement.models.fl.instance import MAX_ROUNDS, Device, FlInstance, Job
from placement.solver.errors import InputError
from placement.solver.hooks import SEED, Generator, Parameter
from placement.solver.limits import size_limit

GIB = 1024**3

MODELS = (
    # name, parameters, forward GFLOPs per sample, memory to train (bytes)
    ("cnn-mnist", 1_663_370, 0.03, GIB // 2),
    ("lstm-shakespeare", 866_578, 0.05, GIB // 2),
    ("resnet18-cifar10", 11_200_000, 0.56, 2 * GIB),
    ("vgg16-cifar10", 14_700_000, 0.31, 3 * GIB),
)
"""The job templates (fp32 weights: 4 bytes per parameter)."""


def generate(
    devices: int,
    jobs: int,
    rounds: int = 20,
    seed: int = 0,
    classes: int = 10,
    min_k: int = 10,
    max_k: int = 50,
    samples: int = 500,
    offline: float = 0.1,
    participation_slack: float = 2.0,
    out: str | None = None,
) -> FlInstance:
    """A seeded instance (the module docstring says how it is drawn)."""
    if not 1 <= min_k <= max_k:
        raise InputError.single("max_k", max_k, f"an integer of at least --min-k ({min_k})")
    if max_k * jobs > devices:
        raise InputError.single(
            "max_k", max_k, f"at most devices / jobs ({devices // max(1, jobs)})"
        )
    if 4 * min_k < classes:
        raise InputError.single(
            "min_k",
            min_k,
            f"at least {-(-classes // 4)}: a device holds at most 4 of the "
            f"{classes} classes, and every round must cover them all",
        )
    if not 0 <= offline < 1:
        raise InputError.single("offline", offline, "a probability in [0, 1)")
    if not 2 <= classes <= 1000:
        raise InputError.single("classes", classes, "an integer in [2, 1000]")
    rng = np.random.default_rng(seed)
    job_list = []
    for i in range(jobs):
        name, params, gflops, memory = MODELS[int(rng.integers(len(MODELS)))]
        job_list.append(
            Job(
                f"j{i}-{name}",
                4 * params,
                round(3 * gflops * 1e9, 3),
                samples,
                int(rng.integers(min_k, max_k + 1)),
                tuple(range(classes)),
                memory,
                int(rng.integers((rounds + 1) // 2, rounds + 1)),
            )
        )
    speed = rng.lognormal(math.log(20e9), 0.8, devices)
    down = rng.lognormal(math.log(20e6 / 8), 0.9, devices)
    up = down * rng.uniform(0.2, 0.5, devices)
    memory = rng.choice(np.array([2, 3, 4, 6, 8]) * GIB, devices)
    held = rng.integers(2, 5, devices)
    off = rng.random((devices, rounds)) < offline
    device_list = [
        Device(
            f"d{k:05d}",
            round(float(speed[k]), 1),
            round(float(down[k]), 1),
            round(float(up[k]), 1),
            int(memory[k]),
            tuple(sorted(int(c) for c in rng.choice(classes, int(held[k]), replace=False))),
            tuple(int(r) for r in np.flatnonzero(off[k])),
        )
        for k in range(devices)
    ]
    wanted = sum(j.devices_per_round * j.rounds for j in job_list)
    limit = (
        0 if participation_slack <= 0 else max(1, math.ceil(participation_slack * wanted / devices))
    )
    limit = 0 if limit >= rounds else limit
    command = GENERATORS[0].command(
        {
            "devices": devices,
            "jobs": jobs,
            "rounds": rounds,
            "seed": seed,
            "classes": classes,
            "min_k": min_k,
            "max_k": max_k,
            "samples": samples,
            "offline": offline,
            "participation_slack": participation_slack,
            "out": out,
        }
    )
    return FlInstance(
        job_list,
        device_list,
        rounds,
        limit,
        name=f"fl-{devices}d-{jobs}j-{rounds}r-s{seed}",
        description=(
            f"Synthetic fleet of {devices} devices (speed log-normal median 20 GFLOP/s, "
            "bandwidth log-normal median 20 Mbit/s down, upload 20-50 %, 2-4 of "
            f"{classes} classes each, offline {offline:g} per round) and {jobs} jobs "
            f"(FedAvg CNN/LSTM, ResNet-18, VGG-16) over {rounds} rounds; participation "
            f"limit {limit or 'none'}. Made by: {command}"
        ),
    )


def _build(p: dict[str, Any]) -> FlInstance:
    return generate(
        p["devices"],
        p["jobs"],
        p["rounds"],
        p["seed"],
        p["classes"],
        p["min_k"],
        p["max_k"],
        p["samples"],
        p["offline"],
        p["participation_slack"],
        out=p.get("out"),
    )


GENERATORS = (
    Generator(
        family="fl",
        help="a fleet of FL client devices and concurrent FL jobs over rounds",
        description=(
            "Generate a seeded fleet (speed and bandwidth log-normal, label-skewed classes, "
            "random offline rounds) and FL jobs (FedAvg CNN/LSTM, ResNet-18, VGG-16) that "
            "need every class covered each round, with a participation limit."
        ),
        parameters=(
            Parameter(
                "devices",
                "positive_int",
                required=True,
                metavar="N",
                maximum=size_limit("devices"),
                help="devices",
            ),
            Parameter(
                "jobs", "positive_int", required=True, metavar="J", maximum=64, help="FL jobs"
            ),
            Parameter(
                "rounds",
                "positive_int",
                20,
                metavar="R",
                shown=True,
                maximum=MAX_ROUNDS,
                help="rounds of the horizon (default 20)",
            ),
            SEED,
            Parameter(
                "classes", "positive_int", 10, metavar="C", maximum=1000, help="data classes (10)"
            ),
            Parameter(
                "min_k",
                "positive_int",
                10,
                metavar="K",
                maximum=size_limit("devices"),
                help="least devices per round",
            ),
            Parameter(
                "max_k",
                "positive_int",
                50,
                metavar="K",
                maximum=size_limit("devices"),
                help="most devices per round",
            ),
            Parameter(
                "samples",
                "positive_int",
                500,
                metavar="S",
                maximum=1_000_000,
                help="samples per device per round",
            ),
            Parameter(
                "offline", "fraction", 0.1, metavar="P", help="chance a device is offline a round"
            ),
            Parameter(
                "participation_slack",
                "non_negative_float",
                2.0,
                metavar="X",
                help="participation limit over the mean device-rounds wanted (0: no limit)",
            ),
        ),
        build=_build,
    ),
)
"""``placement generate fl``."""
