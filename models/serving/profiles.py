"""Performance profiles derived from published hardware and model specifications by a
roofline model (docs/formulations/serving.md, "Profiles").

**These are not measurements.** The inputs are published figures: the GPUs' memory,
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
MODELS = {
    "llama2-13b": ModelSpec(
        "llama2-13b", 13.0e9, 40, 40, 128, "Llama 2 (Touvron et al. 2023), config.json"
    ),
    "llama2-70b": ModelSpec(
        "llama2-70b", 69.0e9, 80, 8, 128, "Llama 2 (Touvron et al. 2023), config.json"
    ),
}
PRICE_PER_GPU_HOUR = {"a100": 1.0, "h100": 2.0}
"""Modelling choice: relative prices (not a provider's list price)."""


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


def gpu_type(name: str, count: int) -> GpuType:
    """A GPU type of the catalogue with ``count`` GPUs."""
    spec = GPUS[name]
    return GpuType(name, count, PRICE_PER_GPU_HOUR[name], spec.memory_bytes)


def catalogue_profiles(
    model: str, gpus: dict[str, int], degrees: tuple[int, ...] = (1, 2)
) -> tuple[list[GpuType], list[Profile]]:
    """GPU types with their counts and the model's profile on each at each degree whose
    weights fit (at vLLM's memory utilisation, with room for 1k tokens of KV)."""
    spec = MODELS[model]
    types = [gpu_type(g, n) for g, n in gpus.items()]
    profiles = []
    for g in types:
        for tp in degrees:
            room = 0.9 * tp * g.memory_bytes - spec.weights_bytes
            if room >= 1024 * spec.kv_bytes_per_token:
                profiles.append(roofline_profile(GPUS[g.name], spec, tp))
    return types, profiles
