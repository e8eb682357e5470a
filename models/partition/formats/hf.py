"""Per-layer profiles of transformer LLMs from model configs, and devices from spec files.

Model configs: HuggingFace ``config.json`` keys (``hidden_size``, ``num_hidden_layers``,
``num_attention_heads``, ``num_key_value_heads``, ``intermediate_size``, ``vocab_size``,
GPT-2's ``n_embd`` / ``n_layer`` / ``n_head`` / ``n_inner``, OPT's ``ffn_dim``) or the
llm-analysis keys of ../shared/benchmarks/partition/llm-configs (``hidden_dim``,
``num_layers``, ``n_head``, ``ffn_embed_dim``, ``mlp_gated_linear_units``). Accelerator specs:
llm-analysis ``gpus/*.json`` (``mem_per_GPU_in_GB``, ``hbm_bandwidth_in_GB_per_sec``,
``peak_fp16_TFLOPS``, ...).

The model is a chain: ``embed``, ``block00 .. block{L-1}``, ``head``. With h the hidden size,
a the heads, h_kv = kv_heads x h / a, f the MLP width, V the vocabulary, b bytes per
parameter (2, fp16), s tokens per sequence, B sequences (docs/formulations/partition.md,
"Builders", gives the sources):

* block weights: ``2 h^2 + 2 h h_kv`` (Q, O; K, V with grouped-query attention) plus
  ``3 h f`` (gated MLP: LLaMA) or ``2 h f``; biases and norms as each architecture has them;
* embedding ``V h`` (plus ``P h`` learned positions for GPT-2, BERT, OPT); the head adds the
  final norm and, when untied (LLaMA), ``V h``;
* forward FLOPs per token: ``2 x weights`` of the matrix products plus ``4 s h`` for the
  attention scores and values (Kaplan et al. 2020); backward = 2 x forward;
* KV cache per token and block: ``2 h_kv b`` bytes;
* training activations stored per block for a micro-batch: ``s B h (34 + 5 a s / h)`` bytes
  (Korthikanti et al. 2022, no recomputation); the transfer between stages is ``s B h b``;
* times per device type: a roofline, ``max(FLOPs / (mfu x peak), bytes read /
  (mbu x HBM bandwidth))``, bytes read = weights + KV cache read by a decode step.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from placement.models.partition.instance import (
    Device,
    Edge,
    Layer,
    LayerTime,
    Links,
    Mode,
    PartitionInstance,
    PartitionServingPlan,
    Workload,
)
from placement.solver.errors import InputError
from placement.solver.hooks import Importer, Parameter
from placement.solver.jsonform import finite, load_json

GIB = 2**30


@dataclass(frozen=True)
class ModelShape:
    """The dimensions of a decoder (or encoder) transformer."""

    name: str
    architecture: str
    """The config's ``model_type`` (``llama``, ``gpt2``, ``opt``, ...), or guessed from the name."""
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    positions: int
    gated_mlp: bool

    @property
    def kv_hidden(self) -> int:
        """Width of K (and of V): kv_heads x head dimension."""
        return self.kv_heads * (self.hidden // self.heads)

    @property
    def llama_like(self) -> bool:
        """RMSNorm, no biases, rotary positions, untied head."""
        return self.architecture in ("llama", "mistral")

    def block_params(self) -> int:
        """Weights of one transformer block."""
        h, kv, f = self.hidden, self.kv_hidden, self.ffn
        attn = 2 * h * h + 2 * h * kv
        mlp = (3 if self.gated_mlp else 2) * h * f
        if self.llama_like:
            return attn + mlp + 2 * h  # two RMSNorm weights
        biases = 2 * h + 2 * kv + f + h
        return attn + mlp + biases + 4 * h  # two LayerNorms (weight and bias)

    def embed_params(self) -> int:
        """Token (and learned position) embeddings."""
        learned_positions = self.architecture in ("gpt2", "bert", "opt")
        return self.vocab * self.hidden + (self.positions * self.hidden if learned_positions else 0)

    def head_params(self) -> int:
        """Final norm and, when untied from the embedding, the output projection."""
        norm = self.hidden if self.llama_like else 2 * self.hidden
        return norm + (self.vocab * self.hidden if self.llama_like else 0)

    def total_params(self) -> int:
        """All weights."""
        return self.embed_params() + self.layers * self.block_params() + self.head_params()


MAX_DIM = 10**9
"""Largest model dimension (layers, hidden size, vocabulary, ...) a config may give."""
MAX_SPEC = 1e9
"""Largest device figure (GB, GB/s, TFLOPS) a device spec may give."""


def _first(config: dict[str, Any], keys: tuple[str, ...], file: str, default: Any = None) -> Any:
    for key in keys:
        if key in config:
            value = config[key]
            if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_DIM:
                raise InputError.single(key, value, f"an integer in [1, {MAX_DIM}]", file=file)
            return value
    if default is None:
        raise InputError.single(keys[0], None, f"one of the keys {', '.join(keys)}", file=file)
    return default


def model_shape(config: dict[str, Any], file: str = "<config>") -> ModelShape:
    """The :class:`ModelShape` of a HuggingFace or llm-analysis config (InputError if bad)."""
    name = str(config.get("name") or config.get("_name_or_path") or Path(file).stem)
    architecture = str(config.get("model_type") or "").lower()
    if not architecture:
        lowered = name.lower()
        architecture = next(
            (a for a in ("llama", "bloom", "opt", "bert", "gpt2") if a in lowered), "gpt2"
        )
    hidden = _first(config, ("hidden_size", "n_embd", "hidden_dim", "d_model"), file)
    layers = _first(config, ("num_hidden_layers", "n_layer", "num_layers"), file)
    heads = _first(config, ("num_attention_heads", "n_head", "num_heads"), file)
    if hidden % heads:
        raise InputError.single("num_attention_heads", heads, f"a divisor of {hidden}", file=file)
    kv_heads = _first(config, ("num_key_value_heads",), file, default=heads)
    if heads % kv_heads:
        raise InputError.single("num_key_value_heads", kv_heads, f"a divisor of {heads}", file=file)
    ffn = _first(
        config,
        ("intermediate_size", "n_inner", "ffn_dim", "ffn_embed_dim"),
        file,
        default=4 * hidden,
    )
    vocab = _first(config, ("vocab_size",), file)
    positions = _first(
        config, ("max_position_embeddings", "n_positions", "max_seq_len"), file, default=2048
    )
    # HF LLaMA configs give the gated MLP's intermediate size; llm-analysis flags it.
    gated = bool(
        config.get(
            "mlp_gated_linear_units", architecture == "llama" and "intermediate_size" in config
        )
    )
    return ModelShape(
        name, architecture, hidden, layers, heads, kv_heads, ffn, vocab, positions, gated
    )


@dataclass(frozen=True)
class DeviceSpec:
    """An accelerator type: memory, HBM bandwidth and dense fp16 peak."""

    name: str
    memory_bytes: int
    hbm_bytes_per_s: float
    peak_flops: float


def device_spec(path: str | Path) -> DeviceSpec:
    """An llm-analysis ``gpus/*.json`` spec (GB of memory read as GiB, the vendors' usage)."""
    file = str(path)
    data = load_json(path)
    values = {}
    for key in ("mem_per_GPU_in_GB", "hbm_bandwidth_in_GB_per_sec", "peak_fp16_TFLOPS"):
        v = data.get(key)
        if isinstance(v, bool) or not finite(v) or not 0 < v <= MAX_SPEC:
            raise InputError.single(key, v, f"a number in (0, {MAX_SPEC:g}]", file=file)
        values[key] = float(v)
    return DeviceSpec(
        name=str(data.get("name") or Path(file).stem),
        memory_bytes=int(values["mem_per_GPU_in_GB"] * GIB),
        hbm_bytes_per_s=values["hbm_bandwidth_in_GB_per_sec"] * 1e9,
        peak_flops=values["peak_fp16_TFLOPS"] * 1e12,
    )


@dataclass(frozen=True)
class Efficiency:
    """Shares of the peaks a kernel reaches (assumptions; see the formulation)."""

    compute: float = 0.5
    memory: float = 0.8


def build_llm(
    shape: ModelShape,
    devices: list[tuple[DeviceSpec, int]],
    *,
    mode: Mode = Mode.SERVING,
    batch_size: int = 1,
    context_length: int = 0,
    seq_len: int = 2048,
    bytes_per_param: int = 2,
    devices_per_node: int = 1,
    inter_node_bandwidth_bytes_per_s: float = 1.25e9,
    intra_node_bandwidth_bytes_per_s: float = 0.0,
    memory_reserve: float = 0.0,
    efficiency: Efficiency | None = None,
    in_flight_microbatches: int = 1,
    name: str = "",
) -> PartitionInstance:
    """A partition instance for ``shape`` on ``devices`` ((spec, count) pairs).

    Serving and inference time one decode step of ``batch_size`` sequences with
    ``context_length`` tokens of KV cache; training times a micro-batch of ``batch_size``
    sequences of ``seq_len`` tokens. ``memory_reserve`` is the share of each device's memory
    kept free (runtime, fragmentation).
    """
    eff = efficiency or Efficiency()
    h, b = shape.hidden, bytes_per_param
    training = mode is Mode.TRAINING
    tokens = batch_size * (seq_len if training else 1)
    ctx = seq_len if training else context_length
    kv_token = 2 * shape.kv_hidden * b

    def times(params: int, attention: bool, kv_tokens_read: int) -> tuple[LayerTime, ...]:
        """The roofline time of a layer on each device type (see the module docstring)."""
        flops = 2 * params * tokens + (4 * ctx * h * tokens if attention else 0)
        read = params * b + kv_tokens_read * kv_token
        out = []
        for spec, _ in devices:
            fwd = max(
                flops / (eff.compute * spec.peak_flops), read / (eff.memory * spec.hbm_bytes_per_s)
            )
            out.append(LayerTime(spec.name, fwd, 2 * fwd if training else 0.0))
        return tuple(out)

    transfer = (seq_len if training else 1) * h * b  # per sequence, scaled by the workload
    stash = (
        batch_size * seq_len * h * (34 + 5 * shape.heads * seq_len / h) if training else transfer
    )
    block = shape.block_params()
    kv_read = batch_size * context_length if not training else 0
    layers = [
        Layer(
            "embed",
            param_bytes=shape.embed_params() * b,
            activation_bytes=int(transfer),
            times=times(0, False, 0),
        )
    ]
    # The embedding is a lookup: no FLOPs to speak of; its time is reading B x h values.
    for i in range(shape.layers):
        layers.append(
            Layer(
                f"block{i:02d}",
                param_bytes=block * b,
                activation_bytes=int(stash),
                kv_cache_bytes_per_token=0 if training else kv_token,
                times=times(block, True, kv_read),
            )
        )
    layers.append(
        Layer(
            "head",
            param_bytes=shape.head_params() * b,
            activation_bytes=int(transfer),
            times=times(shape.vocab * h, False, 0),
        )
    )
    edges: list[Edge] = []
    if training:
        # The stage-to-stage transfer is the hidden state, not the stored activations.
        edges = [Edge(i, i + 1, int(transfer * batch_size)) for i in range(len(layers) - 1)]
    out_devices = []
    k = 0
    for spec, count in devices:
        for _ in range(count):
            out_devices.append(
                Device(
                    f"{spec.name}-{k:02d}",
                    spec.name,
                    int(spec.memory_bytes * (1 - memory_reserve)),
                    node=f"node{k // devices_per_node:02d}",
                )
            )
            k += 1
    workload = Workload(
        mode=mode,
        batch_size=1 if training else batch_size,
        context_length=context_length,
        in_flight_microbatches=in_flight_microbatches,
    )
    return PartitionInstance(
        layers=layers,
        devices=out_devices,
        links=Links(inter_node_bandwidth_bytes_per_s, intra_node_bandwidth_bytes_per_s),
        workload=workload,
        edges=edges,
        name=name or f"{shape.name}-{mode.name.lower()}",
        description=(
            f"{shape.name}: {shape.total_params() / 1e9:.2f} B parameters in {shape.layers} "
            f"blocks ({b}-byte weights), {mode.value}, batch {batch_size}, context "
            f"{context_length}; devices "
            + ", ".join(f"{count} x {spec.name}" for spec, count in devices)
        ),
        validated=False,
    )


def load_model_config(path: str | Path) -> ModelShape:
    """The :class:`ModelShape` of a config file (InputError naming the file and key)."""
    return model_shape(load_json(path), file=str(path))


def _build(params: dict[str, Any]) -> PartitionInstance:
    """``placement import llm``: the model config and device specs named by ``params``."""
    if not 0 <= params["memory_reserve"] < 1:
        raise InputError.single("--memory-reserve", params["memory_reserve"], "a share in [0, 1)")
    if params["inter_node_gbps"] <= 0 or params["intra_node_gbps"] < 0:
        raise InputError.single("--inter-node-gbps", params["inter_node_gbps"], "Gb/s > 0")
    shape = load_model_config(params["config"])
    devices = [(device_spec(path), count) for path, count in params["device"]]
    mode = Mode[params["mode"].upper()]
    in_flight = params["in_flight"] or (sum(c for _, c in devices) if mode is Mode.SERVING else 1)
    instance = build_llm(
        shape,
        devices,
        mode=mode,
        batch_size=params["batch_size"],
        context_length=params["context_length"],
        seq_len=params["seq_len"],
        devices_per_node=params["devices_per_node"],
        inter_node_bandwidth_bytes_per_s=params["inter_node_gbps"] * 1e9 / 8,
        intra_node_bandwidth_bytes_per_s=params["intra_node_gbps"] * 1e9 / 8,
        memory_reserve=params["memory_reserve"],
        in_flight_microbatches=in_flight,
    )
    plan = _serving_plan(params, mode)
    if plan is not None:
        instance = replace(instance, workload=replace(instance.workload, serving_plan=plan))
    instance.description += f". Made by: {IMPORTERS[0].command(params)}"
    return instance


def _serving_plan(params: dict[str, Any], mode: Mode) -> PartitionServingPlan | None:
    """``--replicas`` / ``--tensor-parallel``: the workload's serving plan (LLM_SERVING)."""
    text = params.get("tensor_parallel") or ""
    if not text and not params.get("replicas"):
        return None
    if mode is not Mode.SERVING:
        raise InputError.single("--mode", mode.value, "serving (plans are for LLM serving)")
    try:
        sizes = tuple(int(t) for t in text.split(",")) if text else (1,)
    except ValueError:
        raise InputError.single(
            "--tensor-parallel", text, "comma-separated degrees, e.g. 1,2,4"
        ) from None
    if any(t < 1 for t in sizes) or any(
        b <= a or b % a for a, b in zip(sizes, sizes[1:], strict=False)
    ):
        raise InputError.single(
            "--tensor-parallel", text, "ascending degrees, each dividing the next, e.g. 1,2,4"
        )
    latency = params.get("allreduce_latency_us") or 0.0
    if latency < 0:
        raise InputError.single("--allreduce-latency-us", latency, "microseconds >= 0")
    return PartitionServingPlan(bool(params.get("replicas")), sizes, latency * 1e-6)


IMPORTERS = (
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
        parameters=(
            Parameter(
                "config",
                "path",
                positional=True,
                metavar="CONFIG.json",
                help="a HuggingFace config.json or an llm-analysis model config",
            ),
            Parameter(
                "device",
                "path_count",
                required=True,
                repeated=True,
                metavar="SPEC.json:COUNT",
                help="an llm-analysis accelerator spec and how many (repeatable)",
            ),
            Parameter(
                "mode",
                "str",
                "serving",
                choices=("inference", "serving", "training"),
                shown=True,
                help="workload mode (default: serving)",
            ),
            Parameter(
                "batch_size",
                "positive_int",
                1,
                metavar="B",
                shown=True,
                help="sequences per micro-batch / decode step (default: 1)",
            ),
            Parameter(
                "context_length",
                "int",
                1024,
                metavar="C",
                shown=True,
                help="tokens of KV cache per sequence (default: 1024)",
            ),
            Parameter(
                "seq_len",
                "positive_int",
                2048,
                metavar="S",
                help="training: tokens per sequence (default: 2048)",
            ),
            Parameter(
                "in_flight",
                "positive_int",
                None,
                metavar="Q",
                help="micro-batches in flight (default: serving, one per device; training, 1)",
            ),
            Parameter(
                "inter_node_gbps",
                "float",
                10.0,
                metavar="G",
                help="network between nodes, Gb/s (default: 10)",
            ),
            Parameter(
                "devices_per_node",
                "positive_int",
                1,
                metavar="K",
                help="devices per node (default: 1)",
            ),
            Parameter(
                "intra_node_gbps",
                "float",
                0.0,
                metavar="G",
                help="link inside a node, Gb/s (default: same as between nodes)",
            ),
            Parameter(
                "memory_reserve",
                "float",
                0.1,
                metavar="F",
                help="share of each device's memory kept free (default: 0.1)",
            ),
            Parameter(
                "replicas",
                "flag",
                False,
                help="serving plan: any number of disjoint pipelines (replicas)",
            ),
            Parameter(
                "tensor_parallel",
                "str",
                "",
                metavar="T1,T2,..",
                help="serving plan: tensor-parallel degrees a stage may take, e.g. 1,2,4",
            ),
            Parameter(
                "allreduce_latency_us",
                "float",
                0.0,
                metavar="US",
                help="serving plan: fixed latency of one all-reduce, microseconds (default: 0)",
            ),
        ),
        build=_build,
    ),
)
"""``placement import llm``."""
