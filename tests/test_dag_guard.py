"""The range guards against the largest instances (issue 41, item 1).

The DAG guard refuses what overflows the encodings (a schedule longer than 2^50 / tasks
seconds: CP-SAT's scaled times), not the field's large published instances: a Braun ETC file
as large as the hcsp collection's 2,048 x 64 ones imports and solves. Every family's guards
take the largest instance of each kind the shared data holds.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from placement.api.files import read_instance
from placement.models.dag.bound import integer_scale
from placement.models.dag.braun import HCSP_FACTOR, BraunClass, braun_etc, write_etc
from placement.models.dag.check import check
from placement.models.dag.formats.loaders import load_braun
from placement.models.dag.instance import MAX_SCALED_HORIZON, max_horizon_s
from placement.solver import SolveOptions, solve
from placement.solver.errors import InputError


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "placement.api.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_an_hcsp_sized_etc_file_imports_and_solves(tmp_path: Path) -> None:
    """2,048 x 64 u_s_hihi with values at least hcsp's (its worst-machine times add up to
    1.02e10 s; the old guard refused anything above 1e9 s)."""
    etc = braun_etc(2048, 64, BraunClass.parse("u_s_hihi")) * HCSP_FACTOR
    assert etc.max(axis=1).sum() > 1.02e10
    src = write_etc(tmp_path / "u_s_hihi.etc", etc)
    out = tmp_path / "u_s_hihi.json"
    done = _cli("import", "braun", str(src), "--out", str(out))
    assert done.returncode == 0, done.stderr
    instance = read_instance(out).instance
    assert np.allclose(instance.duration, etc, rtol=0, atol=1e-6)
    result = solve(instance, SolveOptions(time_limit_s=2.0, backend="auto", threads=1))
    report = check(instance, result.solution)
    assert report.feasible, report.violations[:3]
    assert report.objective == pytest.approx(float(result.objective), rel=1e-9)
    assert result.bound is not None and float(result.bound) <= report.objective * (1 + 1e-9)
    # A makespan of the order of hcsp's published one (about 9.2e6 at 2,048 x 64).
    assert 5e6 < report.objective < 5e7


def test_a_schedule_that_overflows_the_scaled_integers_is_refused(tmp_path: Path) -> None:
    """4,096 tasks of 1e8 s each (every value in range): the shortest serial schedule,
    4.1e11 s, is beyond 2^50 / 4,096 = 2.7e11 s, so the file is refused naming the field."""
    src = write_etc(tmp_path / "huge.etc", np.full((4096, 2), 1e8))
    with pytest.raises(InputError) as info:
        load_braun(src)
    error = info.value.errors[0]
    assert error.path == "dag.tasks"
    assert "2^50 / 4096 tasks" in error.expected and "4.1e+11 s" in str(error.value)
    assert max_horizon_s(4096) == MAX_SCALED_HORIZON / 4096
    done = _cli("import", "braun", str(src), "--out", str(tmp_path / "x.json"))
    assert done.returncode == 2 and "dag.tasks" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("bad", ["nan", "inf", "1e300"])
def test_values_that_are_no_time_are_refused(tmp_path: Path, bad: str) -> None:
    src = tmp_path / "bad.etc"
    src.write_text("2 2 0\n1.0\n2.0\n" + bad + "\n3.0\n")
    done = _cli("import", "braun", str(src), "--out", str(tmp_path / "x.json"))
    assert done.returncode == 2, done.stdout
    assert "bad.etc" in done.stderr and "Traceback" not in done.stderr


def test_cpsat_coarsens_its_grid_rather_than_overflow() -> None:
    """A horizon beyond the integer budget at 1 s: the grid becomes 10^k s (scale 10^-k)."""
    values = np.array([3.0e15, 1.5e15, 12.0])
    scale, exact = integer_scale(values, 2**40, coarse=True)
    assert scale == pytest.approx(1e-4) and values.max() * scale <= 2**40 and not exact
    scale, exact = integer_scale(np.array([3.0e15, 2.0e15]), 2**40, coarse=True)
    assert exact
    assert integer_scale(values, 2**40) == (1.0, False)  # without ``coarse``: as before
    assert integer_scale(np.array([1.5, 2.25]), 2**40, coarse=True) == (100.0, True)


# The largest published instance of each kind in the shared data, through `placement import`.
LARGEST = {
    "dag-braun-512x16-u_c_hihi": ["braun", "grid/braun-512x16/u_c_hihi.0"],
    "dag-stg-100": ["stg", "dag/stg/100/rand0173.stg", "--processors", "16"],
    "dag-wfcommons-soykb": ["wfcommons", "dag/wfcommons/soykb-chameleon-10fastq-10ch-001.json"],
    "dag-topcuoglu": [
        "topcuoglu",
        "dag/topcuoglu-2002/exec_time.csv",
        "dag/topcuoglu-2002/edges_data.csv",
    ],
    "gpu-openb-full": [
        "openb",
        "gpu/openb/openb_node_list_gpu_node.csv",
        "gpu/openb/openb_pod_list_default.csv",
    ],
    "partition-tarnawski-bert24-training": [
        "tarnawski",
        "partition/tarnawski-layergraphs/bert24_training.json",
    ],
    "partition-llm-bloom-175b": [
        "llm",
        "partition/llm-configs/models/bloom-175b.json",
        "--device",
        "partition/llm-configs/gpus/a100-sxm-80gb.json:8",
        "--mode",
        "training",
    ],
    "partition-llm-megatron-175b": [
        "llm",
        "partition/llm-configs/models/megatron-lm-175b.json",
        "--device",
        "partition/llm-configs/gpus/h100-sxm-80gb.json:8",
    ],
    "partition-helix-llama2-70b": ["helix", "partition/helix", "--model", "llama2_70b"],
    "entanglement-cogentco": [
        "quantum-topology",
        "quantum/topologies/Cogentco.graphml",
        "--default-length-km",
        "100",
    ],
}
"""The mc family has no importer and no shared data: its guards are not reached from here."""


@pytest.mark.parametrize("argv", list(LARGEST.values()), ids=list(LARGEST))
def test_every_guard_takes_the_largest_shared_instances(
    shared_benchmarks: Path, tmp_path: Path, argv: list[str]
) -> None:
    # Paths are under the shared data (a device's "FILE:COUNT" too).
    args = [str(shared_benchmarks / a) if "/" in a and not a.startswith("-") else a for a in argv]
    first = Path(args[1])
    if not first.exists():
        pytest.skip(f"{first} is not in the shared data")
    out = tmp_path / "instance.json"
    done = _cli("import", *args, "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert read_instance(out).instance is not None
