"""Loaders and builders: Tarnawski et al. layer graphs, model configs, accelerator specs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from placement.models.partition import Mode, check
from placement.models.partition.dp import solve_dp
from placement.models.partition.formats.hf import (
    build_llm,
    device_spec,
    load_model_config,
    model_shape,
)
from placement.models.partition.formats.tarnawski import load_tarnawski
from placement.solver import SolutionStatus, SolveOptions, solve
from placement.solver.errors import InputError
from placement.solver.family import validate

REPO = Path(__file__).resolve().parent.parent


def test_tarnawski_bert_training(shared_benchmarks: Path) -> None:
    path = shared_benchmarks / "partition/tarnawski-layergraphs/bert24_training.json"
    # The previous simplification, kept behind --model classes-in-order.
    inst = load_tarnawski(path, model="classes-in-order")
    validate(inst)
    raw = json.loads(path.read_text())
    assert len(inst.layers) == len({n["colorClass"] for n in raw["nodes"]}) == 32
    assert len(inst.devices) == raw["maxFPGAs"] == 6
    # Every node's latency and size lands in exactly one layer.
    total_ms = sum(n["fpgaLatency"] for n in raw["nodes"])
    assert sum(t.forward_s + t.backward_s for lay in inst.layers for t in lay.times) * 1000 == (
        pytest.approx(total_ms)
    )
    result = solve(inst, SolveOptions(time_limit_s=10, threads=1))
    assert result.status == SolutionStatus.OPTIMAL
    assert result.objective == pytest.approx(41.745812)


@pytest.mark.parametrize(
    "data,where",
    [
        ({"nodes": [], "edges": []}, "nodes"),
        (
            {
                "maxSizePerFPGA": 1,
                "maxFPGAs": 2,
                "nodes": [{"id": 1, "fpgaLatency": "x", "size": 0}],
                "edges": [],
            },
            "nodes[0].fpgaLatency",
        ),
        (
            {
                "maxSizePerFPGA": 1,
                "maxFPGAs": 2,
                "nodes": [{"id": 1, "fpgaLatency": 1, "size": 0}],
                "edges": [{"sourceId": 1, "destId": 9, "cost": 0}],
            },
            "edges[0].destId",
        ),
        (
            {
                "maxSizePerFPGA": 1,
                "maxFPGAs": 0,
                "nodes": [{"id": 1, "fpgaLatency": 1, "size": 0}],
                "edges": [],
            },
            "maxFPGAs",
        ),
    ],
)
def test_tarnawski_malformed_files_name_the_field(tmp_path: Path, data: dict, where: str) -> None:
    path = tmp_path / "g.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError) as info:
        load_tarnawski(path)
    assert info.value.file == str(path)
    assert info.value.errors[0].path == where


def test_import_tarnawski_command(shared_benchmarks: Path, tmp_path: Path) -> None:
    graph = shared_benchmarks / "partition/tarnawski-layergraphs/gnmt_inference.json"
    out = tmp_path / "g.json"
    exe = Path(sys.executable).parent / "placement"
    done = subprocess.run(
        [str(exe), "import", "tarnawski", str(graph), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text())["partition"]["devices"][0]["memory_bytes"] == 17185374208


@pytest.mark.parametrize(
    "config,params",
    [
        # GPT-2 small: 124,439,808 parameters (HuggingFace's count, tied head).
        (
            {
                "model_type": "gpt2",
                "n_embd": 768,
                "n_layer": 12,
                "n_head": 12,
                "vocab_size": 50257,
                "n_positions": 1024,
            },
            124_439_808,
        ),
        # Llama-2-7B: 6,738,415,616 (HF intermediate_size 11008, gated MLP, untied head).
        (
            {
                "model_type": "llama",
                "hidden_size": 4096,
                "intermediate_size": 11008,
                "num_hidden_layers": 32,
                "num_attention_heads": 32,
                "vocab_size": 32000,
            },
            6_738_415_616,
        ),
        # Llama-2-70B with 8 KV heads: 68,976,648,192.
        (
            {
                "model_type": "llama",
                "hidden_size": 8192,
                "intermediate_size": 28672,
                "num_hidden_layers": 80,
                "num_attention_heads": 64,
                "num_key_value_heads": 8,
                "vocab_size": 32000,
            },
            68_976_648_192,
        ),
    ],
)
def test_parameter_counts_match_published_models(config: dict, params: int) -> None:
    assert model_shape(config).total_params() == params


@pytest.mark.parametrize(
    "name,billions",
    [
        ("gpt2-xl", 1.56),
        ("bert-large", 0.335),
        ("bloom-175b", 177.0),
        ("facebook_opt-66b", 65.7),
        ("upstage_Llama-2-70b-instruct-v2", 69.0),
        ("decapoda-research_llama-7b-hf", 6.7),
    ],
)
def test_shared_configs(shared_benchmarks: Path, name: str, billions: float) -> None:
    shape = load_model_config(shared_benchmarks / f"partition/llm-configs/models/{name}.json")
    assert shape.total_params() / 1e9 == pytest.approx(billions, rel=0.01)


def test_bad_config_names_the_key(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(
        json.dumps(
            {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 5, "vocab_size": 10}
        )
    )
    with pytest.raises(InputError) as info:
        load_model_config(path)
    assert info.value.errors[0].path == "num_attention_heads" and info.value.file == str(path)


def test_llama_serving_instance_solves() -> None:
    shape = model_shape(
        {
            "model_type": "llama",
            "hidden_size": 4096,
            "intermediate_size": 11008,
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "vocab_size": 32000,
        }
    )
    t4 = device_spec(REPO / "instances/partition/devices/t4-16gb.json")
    l4 = device_spec(REPO / "instances/partition/devices/l4-24gb.json")
    inst = build_llm(
        shape,
        [(t4, 2), (l4, 1)],
        mode=Mode.SERVING,
        batch_size=4,
        context_length=512,
        in_flight_microbatches=3,
    )
    validate(inst)
    # KV cache per token and block: 2 x 4096 x 2 bytes.
    assert inst.layers[1].kv_cache_bytes_per_token == 16384
    result = solve_dp(inst)
    assert result.exact and check(inst, result.solution).feasible


def test_import_llm_command(shared_benchmarks: Path, tmp_path: Path) -> None:
    config = shared_benchmarks / "partition/llm-configs/models/gpt2-xl.json"
    spec = REPO / "instances/partition/devices/t4-16gb.json"
    out = tmp_path / "gpt2.json"
    exe = Path(sys.executable).parent / "placement"
    done = subprocess.run(
        [
            str(exe),
            "import",
            "llm",
            str(config),
            "--device",
            f"{spec}:2",
            "--mode",
            "training",
            "--batch-size",
            "2",
            "--seq-len",
            "512",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    section = json.loads(out.read_text())["partition"]
    assert len(section["layers"]) == 48 + 2 and len(section["devices"]) == 2
    assert "placement import llm" in json.loads(out.read_text())["description"]
    bad = subprocess.run(
        [str(exe), "import", "llm", str(config), "--device", "x.json:0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
