"""The solve summary shows the assignment of dag, partition, entanglement and mc solutions (per
machine the task sequence; stage -> layers -> device; request -> paths and rate; core -> tasks), compactly,
and agrees with the solution file it wrote."""

from __future__ import annotations

import json
import subprocess
import sys

from placement.api.cli.summary import ASSIGNMENT_ROWS
from placement.solver.text import NAMES_PER_ROW
from tests.conftest import REPO

CLI = [sys.executable, "-m", "placement.api.cli"]


def _solve(tmp_path, instance: str, *extra: str) -> tuple[list[str], dict]:
    out = tmp_path / "sol.json"
    done = subprocess.run(
        [*CLI, "solve", instance, "--out", str(out), "--time-limit", "2", *extra],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines(), json.loads(out.read_text())


def _block(lines: list[str], label: str) -> list[str]:
    """The rows of one labelled block of the summary (label row and its continuation rows)."""
    start = next(i for i, line in enumerate(lines) if line.startswith(label))
    rows = [lines[start][12:]]
    for line in lines[start + 1 :]:
        if not line.startswith(" " * 12):
            break
        rows.append(line[12:])
    return rows


def test_dag_summary_lists_each_machines_tasks_in_start_order(tmp_path):
    lines, doc = _solve(tmp_path, "instances/dag/etl-small.json", "--backend", "greedy")
    rows = _block(lines, "schedule")
    runs = doc["dag"]["runs"]
    machines = {r["machine"] for r in runs}
    assert len(rows) == len(machines)
    for machine in machines:
        mine = sorted((r for r in runs if r["machine"] == machine), key=lambda r: r["start_s"])
        row = next(r for r in rows if r.split()[0] == machine)
        names = [r["task"] for r in mine][:NAMES_PER_ROW]
        assert f"{len(mine)} task(s)" in row
        assert ", ".join(names) in row


def test_dag_summary_stays_short_at_80_tasks(tmp_path):
    inst = tmp_path / "dag80.json"
    subprocess.run(
        [
            *CLI,
            "generate",
            "dag",
            "--tasks",
            "80",
            "--machines",
            "16",
            "--seed",
            "3",
            "--out",
            str(inst),
        ],
        cwd=REPO,
        check=True,
        capture_output=True,
    )
    lines, doc = _solve(tmp_path, str(inst), "--backend", "greedy")
    used = len({r["machine"] for r in doc["dag"]["runs"]})
    assert used > ASSIGNMENT_ROWS
    rows = _block(lines, "schedule")
    assert len(rows) == ASSIGNMENT_ROWS + 1
    assert rows[-1].startswith(f"... {used - ASSIGNMENT_ROWS} more")
    assert all(len(r) < 200 for r in rows)
    assert any("more" in r for r in rows[:-1])  # a busy machine's names are cut too


def test_partition_summary_gives_stage_layers_device(tmp_path):
    lines, doc = _solve(tmp_path, "instances/partition/tiny-chain.json")
    rows = _block(lines, "stages")
    assignments = doc["partition"]["assignments"]
    devices = list(dict.fromkeys(a["device"] for a in assignments))
    assert len(rows) == len(devices)
    for i, device in enumerate(devices, start=1):
        layers = [a["layer"] for a in assignments if a["device"] == device]
        assert rows[i - 1].strip() == (
            f"{i}. {layers[0]}..{layers[-1]} ({len(layers)} layers) -> {device}"
        )


def test_entanglement_summary_gives_request_paths_and_rate(tmp_path):
    lines, doc = _solve(tmp_path, "instances/entanglement/tiny.json", "--time-limit", "1")
    rows = _block(lines, "routes")
    paths = doc["entanglement"]["paths"]
    requests = list(dict.fromkeys(p["request"] for p in paths))
    assert [r.split()[0] for r in rows] == requests
    for request, row in zip(requests, rows, strict=True):
        mine = [p for p in paths if p["request"] == request]
        rate = sum(p["expected_throughput"] for p in mine)
        assert f"rate {rate:.4g}/slot" in row
        assert f"{'-'.join(mine[0]['nodes'])} x{mine[0]['width']}" in row


def test_mc_summary_gives_each_cores_tasks_and_test(tmp_path):
    lines, doc = _solve(tmp_path, "instances/mc/tasks-20x4.json", "--backend", "greedy")
    rows = _block(lines, "cores")
    assignments = doc["mc"]["assignments"]
    cores = {a["core"] for a in assignments}
    assert len(rows) == len(cores)
    for test in doc["mc"]["cores"]:
        mine = [a["task"] for a in assignments if a["core"] == test["core"]]
        if not mine:
            continue
        row = next(r for r in rows if r.split()[0] == test["core"])
        assert f"{len(mine)} task(s)" in row
        assert f"U(HI) {test['hi_utilisation_hi_mode']:.3f}" in row
        assert set(row.split(": ", 1)[1].split(", ")) == set(mine[:NAMES_PER_ROW]) or "more" in row
