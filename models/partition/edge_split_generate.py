"""Seeded EDGE_SPLIT_QUANTIZED requests (``placement generate partition --mode edge_split``).

A CNN-shaped chain, as in QPART's experiments (ResNets on image inputs): the input is an
RGB image of ``3 x 512 x 512`` floats; layer weights grow with depth (from tens of kB,
doubling about every fifth of the model) while activations shrink (halving likewise), and
each layer does 0.2-1 GFLOP. The edge device does 5-50 GFLOP/s, the server 5 TFLOP/s; the
channel carries 1-20 MB/s. Bit-widths 2, 4, 8, 16 below 32-bit full precision.

The accuracy-loss table is synthetic, not measured: each layer has a sensitivity ``s`` (its
loss at 2 bits, 0.05-1.5 percentage points, log-uniform) and loses ``s / 2**(b - 2)`` at
``b`` bits -- one halving per extra bit, the scaling of a uniform quantizer's error
amplitude. Budgets: the device may compute 20-100 % of the model's full-precision time,
the channel may be busy twice the time the input takes; the weights are 1 per second,
0.5 per joule (1 nJ per FLOP, 1 W to transmit) and 1 per unit of server cost (1e-11 per
FLOP).
"""

from __future__ import annotations

import math

import numpy as np

from placement.models.partition.edge_split import PartitionEdgeSplit
from placement.models.partition.instance import (
    Device,
    Layer,
    Links,
    Mode,
    PartitionInstance,
    Workload,
)

BIT_WIDTHS = (2, 4, 8, 16)
"""Lower widths a device layer may take (QPART's experiments quantize to such widths)."""
FULL_BITS = 32


def generate_edge_split(
    n_layers: int, seed: int = 0, accuracy_budget_pp: float = 1.0
) -> PartitionInstance:
    """A seeded request (see the module docstring)."""
    rng = np.random.default_rng(seed)
    input_bytes = 3 * 512 * 512 * 4
    layers = []
    losses = []
    for i in range(n_layers):
        depth = i / max(1, n_layers - 1)
        params = int(4 * 10_000 * 2 ** (6 * depth) * rng.uniform(0.5, 2.0))
        act = int(input_bytes * 5 * 2 ** (-7 * depth) * rng.uniform(0.7, 1.3))
        flops = float(rng.uniform(0.2e9, 1.0e9))
        layers.append(
            Layer(name=f"L{i}", param_bytes=params, activation_bytes=act, forward_flops=flops)
        )
        s = math.exp(rng.uniform(math.log(0.5), math.log(5.0)))
        losses.append(tuple(round(s / 2 ** (b - 2), 9) for b in BIT_WIDTHS))
    device_speed = float(rng.uniform(5e9, 50e9))
    channel = float(rng.uniform(1e6, 20e6))
    full_device_s = sum(lay.forward_flops for lay in layers) / device_speed
    section = PartitionEdgeSplit(
        device=0,
        server=1,
        full_precision_bits=FULL_BITS,
        bit_widths=BIT_WIDTHS,
        loss_pp=tuple(losses),
        accuracy_budget_pp=accuracy_budget_pp,
        input_bytes=input_bytes,
        device_compute_budget_s=round(full_device_s * rng.uniform(0.2, 1.0), 6),
        channel_budget_s=round(2 * input_bytes / channel, 6),
        time_weight=1.0,
        energy_weight=0.5,
        cost_weight=1.0,
        device_joules_per_flop=1e-9,
        transmit_power_w=1.0,
        server_cost_per_flop=1e-11,
    )
    devices = [
        Device(name="edge", type="edge", memory_bytes=2**33, flops_per_s=device_speed),
        Device(name="server", type="server", memory_bytes=2**40, flops_per_s=5e12),
    ]
    return PartitionInstance(
        layers=layers,
        devices=devices,
        links=Links(inter_node_bandwidth_bytes_per_s=channel),
        workload=Workload(mode=Mode.EDGE_SPLIT),
        edge_split=section,
        name=f"partition-edge-split-{n_layers}-s{seed}",
        description=(
            f"QPART-style request (synthetic loss table): {n_layers} layers, device "
            f"{device_speed / 1e9:.1f} GFLOP/s, channel {channel / 1e6:.2f} MB/s, accuracy "
            f"budget {accuracy_budget_pp} pp; placement generate partition --mode edge_split "
            f"--layers {n_layers} --devices 2 --seed {seed}"
        ),
        validated=False,
    )
