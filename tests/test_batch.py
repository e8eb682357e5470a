"""The batch worker function in-process: it turns every kind of failure into a row.

The end-to-end behaviour (worker processes, CSV, exit codes) is in tests/test_cli.py; here
``solve_file`` runs directly so each failure mode is cheap to exercise.
"""

from __future__ import annotations

import json
from pathlib import Path

from placement.api.batch import COLUMNS, SOLVED, solution_paths, solve_file
from placement.api.files import read_instance, read_solution
from placement.solver import InputError
from tests.test_cli import tiny

SETTINGS = {"backend": "greedy", "time_limit_s": 5.0}


def test_a_good_file_gives_a_full_row_and_a_solution_file(tmp_path: Path) -> None:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(tiny()))
    target = tmp_path / "tiny.solution.json"
    row = solve_file(str(path), SETTINGS, str(target))
    assert set(row) == set(COLUMNS)
    assert row["status"] in SOLVED and row["error"] == ""
    assert row["family"] == "gpu" and row["instance"] == "tiny"
    assert row["placed"] == 3 and row["unplaced"] == 1
    assert set(json.loads(row["objective_terms"])) == {
        "placed_gpu_weighted",
        "placed_cpu_jobs",  # etl is CPU-only
        "comm_cost",
        "fragmentation",
    }
    # The written file reads back against the instance.
    loaded = read_instance(path)
    solution, name = read_solution(target, loaded)
    assert name == "tiny"
    assert loaded.family.check(loaded.instance, solution).feasible


def test_every_failure_is_a_row_not_an_exception(tmp_path: Path) -> None:
    bad_json = tmp_path / "bad.json"
    bad_json.write_text("{")
    bad_value = tmp_path / "value.json"
    data = tiny()
    data["gpu"]["jobs"][0]["priority"] = 0
    bad_value.write_text(json.dumps(data))
    cases = {
        str(tmp_path / "missing.json"): "expected an existing file",
        str(bad_json): "expected valid JSON",
        str(bad_value): "gpu.jobs[0].priority: got 0",
    }
    for path, fragment in cases.items():
        row = solve_file(path, SETTINGS)
        assert row["status"] == "error"
        assert row["error"].startswith(path + ": ")
        assert fragment in row["error"]
    # Bad solve options are the same kind of row.
    good = tmp_path / "tiny.json"
    good.write_text(json.dumps(tiny()))
    row = solve_file(str(good), {**SETTINGS, "relative_gap": 2.0})
    assert row["status"] == "error" and "relative_gap" in row["error"]


def test_solution_paths_stay_unique() -> None:
    paths = solution_paths(["a/x.json", "b/x.json", "c/y.json"], "out")
    assert paths == [
        str(Path("out/x.solution.json")),
        str(Path("out/x.2.solution.json")),
        str(Path("out/y.solution.json")),
    ]


def test_a_solution_without_a_family_section_names_the_solution_file(tmp_path: Path) -> None:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(tiny()))
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"instance_name": "tiny"}))
    loaded = read_instance(path)
    try:
        read_solution(empty, loaded)
    except InputError as exc:
        assert str(exc).startswith(f"{empty}: family: ")
    else:
        raise AssertionError("a solution without a family section was accepted")


def test_text_given_by_the_driver_is_solved_and_the_document_comes_back(tmp_path: Path) -> None:
    # How a Ray task runs: the driver read the file; the task sends the solution back.
    row = solve_file("elsewhere/tiny.json", SETTINGS, "out/tiny.solution.json", json.dumps(tiny()))
    assert row["status"] in SOLVED and row["solution_file"] == ""
    assert "gpu" in row["_document"]
    bad = solve_file("elsewhere/bad.json", SETTINGS, None, "{not json")
    assert bad["status"] == "error" and bad["error"].startswith("elsewhere/bad.json: ")


def test_ctrl_c_stops_running_solves_with_their_best_and_skips_the_rest(tmp_path: Path) -> None:
    import csv
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import REPO

    medium = str(REPO / "instances" / "gpu" / "medium.json")
    out = tmp_path / "rows.csv"
    proc = subprocess.Popen(
        [sys.executable, "-m", "placement.api.cli", "batch", medium, medium, medium]
        + ["--jobs", "1", "--time-limit", "120", "--out", str(out), "-q"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    from placement.api.server.probe import cpu_ticks, wait_until, worker_pids

    # Wait until the worker has used 5 s of CPU: imports take about 1 s, so the first solve
    # is then in its exact phase (which runs to its 120 s limit).
    assert wait_until(
        lambda: any(cpu_ticks(p) >= 500 for p in worker_pids(proc.pid)), timeout=120, step=0.2
    )
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert time.monotonic() - started < 30
    rows = list(csv.DictReader(out.open()))
    assert [r["status"] for r in rows[1:]] == ["skipped", "skipped"]
    assert rows[0]["status"] == "feasible" and rows[0]["stop_reason"] == "cancelled", rows[0]
