"""Performance profiles: measured ones from Splitwise's published performance model, and
roofline estimates from datasheets (docs/formulations/serving.md, "Profiles").

**Measured** (:data:`SPLITWISE_MEASURED`): Llama-2-70B on a DGX-A100 and a DGX-H100 (tensor
parallel 8), the medians of the five repeats in ``data/perf_model.csv`` of the Splitwise
simulator (Mutinifni/splitwise-sim @ 378088013a54df6f2052c27ff5ae6ea7619c3ecc; Patel et al.,
Splitwise, ISCA 2024): ``prompt_time`` at batch 1 by prompt size, ``token_time`` by batch size
at 512-token prompts. The decode line is a least-squares fit of those points (per sequence,
carrying the batch sweep's ~576-token contexts); the context term is 0 because the measured
batch-1 sweep over 128 to 8,192 output tokens varies by under 3 %. The H100's 128-token prompt
point (58.2 ms median) is above its 256-token point (51.7 ms) and is left out (below its
first point a profile keeps the first point's time).

**Roofline** (:func:`roofline_profile`) profiles are **not measurements**. The inputs are published figures: the GPUs' memory,
memory bandwidth and dense BF16 throughput from NVIDIA's datasheets (A100 SXM4 80 GB: 2,039
GB/s, 312 TFLOPS; H100 SXM5 80 GB: 3,350 GB/s, 989 TFLOPS) and the models' shapes from their
published configurations (Llama-2-13B: 13.0 B parameters, 40 layers, hidden 5,120, 40 KV
heads; Llama-2-70B: 69.0 B parameters, 80 layers, 8 KV heads of 128, Touvron et al. 2023 and
the ``config.json`` of meta-llama/Llama-2-*-hf). Two constants are **modelling choices**:
the share of peak compute a prefill reaches (``PREFILL_MFU`` = 0.5) and the share of peak
bandwidth a decode step reaches (``DECODE_BANDWIDTH_EFFICIENCY`` = 0.7); tensor-parallel
communication and attention's quadratic term are left out. The prices are modelling
choices too (``PRICE_PER_GPU_HOUR``: relative, the H100 at twice the A100).

Vidur's measured per-operator profiles would replace this where available: the ``vidur``
0.0.26 wheel ships no profiling data (checked: its 206 files hold no CSV), so they are not.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from placement.models.serving.instance import GpuType, Profile

GB = 10**9
PREFILL_MFU = 0.5
"""Modelling choice: share of peak dense BF16 throughput a prefill reaches."""
DECODE_BANDWIDTH_EFFICIENCY = 0.7
"""Modelling choice: share of peak memory bandwidth a decode step reaches."""
PREFILL_POINTS = (128, 512, 2048, 8192)


@dataclass(frozen=True)
class GpuSpec:
    """A GPU's datasheet figures."""

    name: str
    memory_bytes: int
    bandwidth_bytes_per_s: float
    bf16_flops: float
    source: str


@dataclass(frozen=True)
class ModelSpec:
    """A model's published shape (fp16 weights and KV cache)."""

    name: str
    parameters: float
    layers: int
    kv_heads: int
    head_dim: int
    source: str

    @property
    def weights_bytes(self) -> int:
        return int(2 * self.parameters)

    @property
    def kv_bytes_per_token(self) -> int:
        """Keys and values of every layer, fp16."""
        return 2 * self.layers * self.kv_heads * self.head_dim * 2


GPUS = {
    "a100": GpuSpec(
        "a100", 80 * GB, 2039 * GB, 312e12, "NVIDIA A100 datasheet (SXM4 80GB, dense BF16)"
    ),
    "h100": GpuSpec(
        "h100", 80 * GB, 3350 * GB, 989e12, "NVIDIA H100 datasheet (SXM5 80GB, dense BF16)"
    ),
}
LITE = GpuSpec(
    "lite",
    20 * GB,
    3350 * GB / 4,
    989e12 / 4,
    "modelling choice, not a product: a quarter of the H100 SXM5's memory, bandwidth and "
    "BF16 throughput (Lite-GPU, HotOS 2025: small single-die GPUs in place of a package)",
)
"""A hypothetical small GPU for the Lite-GPU comparison (``benchmarks/serving/lite.py``)."""
MODELS = {
    "llama2-13b": ModelSpec(
        "llama2-13b", 13.0e9, 40, 40, 128, "Llama 2 (Touvron et al. 2023), config.json"
    ),
    "llama2-70b": ModelSpec(
        "llama2-70b", 69.0e9, 80, 8, 128, "Llama 2 (Touvron et al. 2023), config.json"
    ),
}
PRICE_PER_GPU_HOUR = {"a100": 1.0, "h100": 2.0, "lite": 0.5}
"""Modelling choice: relative prices (not a provider's list price); a Lite-GPU at a quarter
of an H100's."""


def roofline_profile(gpu: GpuSpec, model: ModelSpec, tensor_parallel: int) -> Profile:
    """The profile of ``model`` on ``tensor_parallel`` GPUs of ``gpu`` (module docstring)."""
    flops = tensor_parallel * gpu.bf16_flops * PREFILL_MFU
    bandwidth = tensor_parallel * gpu.bandwidth_bytes_per_s * DECODE_BANDWIDTH_EFFICIENCY
    weights_ms = 1000 * model.weights_bytes / bandwidth
    points = tuple(
        (t, round(max(1000 * 2 * model.parameters * t / flops, weights_ms), 3))
        for t in PREFILL_POINTS
    )
    return Profile(
        gpu.name,
        tensor_parallel,
        points,
        round(weights_ms, 4),
        round(1000 * 2 * model.parameters / flops, 5),
        round(1000 * 1000 * model.kv_bytes_per_token / bandwidth, 5),
        model.kv_bytes_per_token,
        model.weights_bytes,
        f"roofline (not measured): {gpu.source}; {model.source}; modelling choices: prefill "
        f"MFU {PREFILL_MFU}, decode bandwidth efficiency {DECODE_BANDWIDTH_EFFICIENCY}",
    )


SPLITWISE_SOURCE = (
    "measured: Splitwise simulator data/perf_model.csv (Mutinifni/splitwise-sim @ 3780880), "
    "medians of 5 repeats; Patel et al., ISCA 2024"
)
SPLITWISE_MEASURED = {
    "a100": {
        "prompt_ms": {
            128: 65.3,
            256: 66.8,
            512: 94.3,
            1024: 154.5,
            2048: 274.4,
            4096: 661.2,
            8192: 1549.8,
        },
        "token_ms": {1: 44.85, 2: 44.56, 4: 45.79, 8: 46.47, 16: 50.44, 32: 53.02, 64: 71.6},
    },
    "h100": {
        "prompt_ms": {256: 51.7, 512: 53.4, 1024: 77.9, 2048: 136.8, 4096: 390.3, 8192: 844.9},
        "token_ms": {1: 29.76, 2: 30.26, 4: 31.79, 8: 32.5, 16: 34.17, 32: 38.62, 64: 50.16},
    },
}
"""Llama-2-70B, tensor parallel 8, ms (see the module docstring)."""


def splitwise_profile(gpu: str) -> Profile:
    """Llama-2-70B on 8 GPUs of ``gpu`` (``a100`` or ``h100``) from Splitwise's measurements."""
    data = SPLITWISE_MEASURED[gpu]
    batch = np.array(list(data["token_ms"]), dtype=float)
    step = np.array(list(data["token_ms"].values()), dtype=float)
    slope, base = np.polyfit(batch, step, 1)
    model = MODELS["llama2-70b"]
    return Profile(
        gpu,
        8,
        tuple(data["prompt_ms"].items()),
        round(float(base), 4),
        round(float(slope), 5),
        0.0,
        model.kv_bytes_per_token,
        model.weights_bytes,
        SPLITWISE_SOURCE,
    )


def gpu_type(name: str, count: int) -> GpuType:
    """A GPU type of the catalogue with ``count`` GPUs."""
    spec = GPUS[name]
    return GpuType(name, count, PRICE_PER_GPU_HOUR[name], spec.memory_bytes)


MEASURED_MODEL = "llama2-70b-splitwise"
"""The catalogue's name of the measured profiles."""
CATALOGUE = (MEASURED_MODEL, *MODELS)


def catalogue_profiles(
    model: str, gpus: dict[str, int], degrees: tuple[int, ...] = (1, 2)
) -> tuple[list[GpuType], list[Profile]]:
    """GPU types with their counts and the model's profiles: Splitwise's measured ones for
    ``llama2-70b-splitwise`` (tensor parallel 8), else the roofline's at each degree whose
    weights fit (at vLLM's memory utilisation, with room for 1k tokens of KV)."""
    types = [gpu_type(g, n) for g, n in gpus.items()]
    if model == MEASURED_MODEL:
        return types, [splitwise_profile(g.name) for g in types if g.count >= 8]
    spec = MODELS[model]
    profiles = []
    for g in types:
        for tp in degrees:
            room = 0.9 * tp * g.memory_bytes - spec.weights_bytes
            if room >= 1024 * spec.kv_bytes_per_token:
                profiles.append(roofline_profile(GPUS[g.name], spec, tp))
    return types, profiles
