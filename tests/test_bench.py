"""``placement bench``: the runner (CSV as cases finish, invalid solutions counted, failing
cases reported, Ctrl-C keeps partial results), the command line, and Ray vs the local pool.

Each family's suites are run with ``--quick`` in ``tests/test_bench_<family>.py``.
"""

from __future__ import annotations

import csv
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from placement.benchmarks.runner import run_suite, suites
from placement.solver.parallel import ray_available
from tests import bench_suite
from tests.conftest import REPO, SHARED_BENCHMARKS

ISSUE_SUITES = {
    "gpu-openb",
    "gpu-synthetic",
    "dag-topcuoglu",
    "dag-stg",
    "grid-braun",
    "dag-wfcommons",
    "partition-tarnawski",
    "partition-llm",
    "entanglement-qcast",
    "entanglement-topologies",
    "mc-partition",
    "service-latency",
}


def placement(
    *args: str, cwd: Path | None = None, env: dict | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "placement.api.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd or REPO,
        env=env,
        timeout=600,
    )


def read_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_every_suite_of_the_issue_is_registered_and_listed() -> None:
    registered = suites()
    assert set(registered) >= ISSUE_SUITES, ISSUE_SUITES - set(registered)
    for name, suite in registered.items():
        assert name == suite.family or name.startswith((suite.family + "-", "grid-")), name
    proc = placement("bench", "--list")
    assert proc.returncode == 0, proc.stderr
    listed = {line.split()[0] for line in proc.stdout.splitlines() if line.strip()}
    assert listed == set(registered)


def test_unknown_suite_and_missing_data_are_clear_errors(tmp_path: Path) -> None:
    proc = placement("bench", "no-such-suite")
    assert proc.returncode == 2
    assert "no-such-suite" in proc.stderr and "placement bench --list" in proc.stderr
    with_data = next(n for n, s in suites().items() if s.data)
    missing = tmp_path / "nowhere"
    proc = placement("bench", with_data, "--data", str(missing), "--out", str(tmp_path))
    assert proc.returncode == 2
    assert str(missing) in proc.stderr and "--data" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_runner_writes_csv_and_markdown_with_the_command(tmp_path: Path) -> None:
    outcome = run_suite(bench_suite.suite("ok"), bench_suite.config("ok", tmp_path), progress=False)
    assert outcome.finished == 3 and not outcome.failed and outcome.invalid == 0
    rows = read_rows(tmp_path / "ok.csv")
    assert [r["seed"] for r in rows] == ["1", "2", "3"]  # case order, not completion order
    text = (tmp_path / "ok.md").read_text()
    assert "    test ok" in text  # the reproduce line
    assert "rejected: **0**" in text and "| seed | objective | invalid |" in text


def test_runner_counts_solutions_the_checker_rejects(tmp_path: Path) -> None:
    outcome = run_suite(
        bench_suite.suite("broken"), bench_suite.config("broken", tmp_path), progress=False
    )
    assert outcome.invalid == 1
    assert [r["invalid"] for r in read_rows(tmp_path / "broken.csv")] == ["0", "1", "0"]
    assert "rejected: **1**" in (tmp_path / "broken.md").read_text()


def test_a_failing_case_is_reported_and_the_others_run(tmp_path: Path) -> None:
    outcome = run_suite(
        bench_suite.suite("failing"), bench_suite.config("failing", tmp_path), progress=False
    )
    assert outcome.finished == 2 and len(outcome.failed) == 1
    assert "this case fails on purpose" in outcome.failed[0]
    assert "1 case(s) failed" in (tmp_path / "failing.md").read_text()
    # A row without the invalid column is a suite bug, reported as a failed case.
    outcome = run_suite(
        bench_suite.suite("no-invalid-column"),
        bench_suite.config("no-invalid-column", tmp_path),
        progress=False,
    )
    assert outcome.finished == 0 and len(outcome.failed) == 3
    assert "no 'invalid' column" in outcome.failed[0]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["Ctrl-C", "SIGTERM"])
def test_ctrl_c_keeps_the_finished_cases(tmp_path: Path, sig: int) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.bench_suite", "slow", str(tmp_path), "2"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    csv_path = tmp_path / "slow.csv"
    deadline = time.monotonic() + 120
    while not csv_path.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert csv_path.exists(), "the first case never finished"
    time.sleep(0.5)
    started = time.monotonic()
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert time.monotonic() - started < 30  # the sleeping cases were killed, not awaited
    assert "finished=1 interrupted=True" in out, err
    assert [r["seed"] for r in read_rows(csv_path)] == ["1"]
    assert "**Partial**: interrupted after 1 of 3 cases" in (tmp_path / "slow.md").read_text()


def test_ray_missing_gives_one_line_on_how_to_install(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['ray'] = None\n"
        "from placement.api.cli import main\n"
        f"sys.exit(main(['batch', '--ray', 'auto', {str(REPO / 'instances/gpu/tiny.json')!r}]))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install -e '.[ray]' in the checkout" in lines[0], proc.stderr


@pytest.mark.skipif(not ray_available(), reason="Ray is not installed (pip install -e '.[ray]')")
def test_batch_on_ray_gives_the_local_pool_results(tmp_path: Path) -> None:
    files = [
        str(REPO / "instances" / f)
        for f in (
            "gpu/tiny.json",
            "dag/etl-small.json",
            "partition/tiny-chain.json",
            "entanglement/tiny.json",
        )
    ]
    env = {**os.environ, "RAY_ADDRESS": ""}
    results = {}
    for where in ("local", "ray"):
        out = tmp_path / where
        out.mkdir()
        args = ["batch", *files, "--time-limit", "20", "--deterministic", "--jobs", "2"]
        args += ["--out", str(out / "rows.csv"), "--solutions", str(out), "-q"]
        if where == "ray":
            args += ["--ray", "auto"]
        proc = placement(*args, env=env)
        assert proc.returncode == 0, proc.stderr
        results[where] = read_rows(out / "rows.csv")
        # The solution files are written by the driver, whichever ran the solves.
        assert len(list(out.glob("*.solution.json"))) == len(files)
    keys = ("file", "family", "status", "stop_reason", "objective", "bound", "objective_terms")
    local = [{k: r[k] for k in keys} for r in results["local"]]
    ray = [{k: r[k] for k in keys} for r in results["ray"]]
    assert local == ray
    # Proved optima, except entanglement, whose candidate-path model exhausts its search.
    assert [r["status"] for r in results["local"]] == ["optimal"] * 3 + ["feasible"]


@pytest.mark.skipif(not ray_available(), reason="Ray is not installed (pip install -e '.[ray]')")
def test_bench_on_ray_gives_the_local_pool_results(tmp_path: Path) -> None:
    os.environ.pop("RAY_ADDRESS", None)
    local = run_suite(
        bench_suite.suite("ok"), bench_suite.config("ok", tmp_path / "l"), progress=False
    )
    on_ray = run_suite(
        bench_suite.suite("ok"),
        bench_suite.config("ok", tmp_path / "r", ray="auto"),
        progress=False,
    )
    assert on_ray.rows == local.rows and on_ray.finished == 3
    assert "on Ray (auto)" in (tmp_path / "r" / "ok.md").read_text()


@pytest.mark.parametrize("name", list(suites()))
def test_quick_run_of_every_suite(name: str, tmp_path: Path) -> None:
    """CI runs every registered suite with --quick, so that none rots: a real process, exit 0,
    rows with 0 invalid solutions, the tables, the reproduce line and every plot it links."""
    suite = suites()[name]
    data = SHARED_BENCHMARKS
    if suite.data and not (data / suite.data).is_dir():
        pytest.skip(f"public benchmark data not found at {data / suite.data}")
    proc = placement("bench", name, "--quick", "--out", str(tmp_path), "--data", str(data))
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = read_rows(tmp_path / f"{name}.csv")
    assert rows and all(r["invalid"] == "0" for r in rows), rows
    text = (tmp_path / f"{name}.md").read_text()
    assert f"    placement bench {name} --quick\n" in text and "rejected: **0**" in text
    assert "|---" in text and "case(s) failed" not in text
    for link in re.findall(r"\]\(([^)]+\.png)\)", text):
        assert (tmp_path / link).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", link
    assert f"reproduce with: placement bench {name} --quick" in proc.stderr
