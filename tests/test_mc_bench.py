"""``placement bench mc-partition``: a suite's own settings (``--param``) in a real process."""

from __future__ import annotations

import csv
from pathlib import Path

from tests.test_bench import placement


def _quick_rows(tmp_path: Path, *params: str) -> list[dict[str, str]]:
    """Run ``placement bench mc-partition --quick`` with ``--param`` settings in a real process
    (it must succeed) and return its CSV rows."""
    args = [a for p in params for a in ("--param", p)]
    proc = placement("bench", "mc-partition", "--quick", *args, "--out", str(tmp_path), "-q")
    assert proc.returncode == 0, proc.stderr
    with (tmp_path / "mc-partition.csv").open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_params_reach_the_suite_and_the_reproduce_command(tmp_path: Path) -> None:
    rows = _quick_rows(tmp_path, "sets=1", "backends=cpsat")
    # One set per point (2 points in --quick), 7 heuristics + cpsat each; no milp.
    assert len(rows) == 2 * 8
    assert {r["method"] for r in rows} == {
        "ffd",
        "bfd",
        "wfd",
        "ca-ffd",
        "ca-bfd",
        "ca-wfd",
        "udp",
        "cpsat",
    }
    assert all(r["invalid"] == "0" for r in rows)
    text = (tmp_path / "mc-partition.md").read_text()
    assert "placement bench mc-partition --quick --param sets=1 --param backends=cpsat" in text
    assert (tmp_path / "mc-partition.png").stat().st_size > 0


def test_a_bad_param_is_one_clear_line(tmp_path: Path) -> None:
    proc = placement("bench", "mc-partition", "--param", "nope=1", "--out", str(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert "--param" in proc.stderr and "sets" in proc.stderr
    proc = placement("bench", "mc-partition", "--param", "sets=0", "--out", str(tmp_path))
    assert proc.returncode == 2 and "--param sets" in proc.stderr, proc.stderr
    # Said once: "got '0', expected an integer from 1 to 2147483647".
    assert proc.stderr.count("got") == 1 and "expected an integer from 1 to" in proc.stderr
    proc = placement(
        "bench", "mc-partition", "--quick", "--param", "backends=gurobi", "--out", str(tmp_path)
    )
    assert proc.returncode == 2 and "cpsat or milp" in proc.stderr, proc.stderr


def test_the_amc_rtb_param_generates_amc_sets(tmp_path: Path) -> None:
    rows = _quick_rows(tmp_path, "sets=1", "backends=cpsat", "test=amc_rtb")
    assert len(rows) == 2 * 8 and all(r["invalid"] == "0" for r in rows)
    text = (tmp_path / "mc-partition.md").read_text()
    assert "--param test=amc_rtb" in text and "test=amc_rtb," in text
    proc = placement(
        "bench", "mc-partition", "--quick", "--param", "test=rm", "--out", str(tmp_path)
    )
    assert proc.returncode == 2 and "--param test" in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr


def test_exact_on_rejected_skips_scheduled_sets_and_records_cpu_time(tmp_path: Path) -> None:
    rows = _quick_rows(
        tmp_path,
        "sets=2",
        "backends=cpsat",
        "utilisations=0.50,1.00",
        "exact_on=rejected",
        "limit=1.5",
    )
    exact = [r for r in rows if r["method"] == "cpsat"]
    heuristic = {(r["seed"]) for r in rows if r["method"] != "cpsat" and r["schedulable"] == "1"}
    # U = 0.50 on 2 cores x 6 tasks: a heuristic schedules both sets, no exact solve runs;
    # U = 1.00: no heuristic does, and CP-SAT runs on each (and proves it unschedulable).
    assert {r["seed"] for r in exact}.isdisjoint(heuristic)
    assert len(exact) == 2 and all(float(r["cpu_s"]) >= 0 for r in exact)
    assert all(r["proved_unschedulable"] == "1" for r in exact)
    text = (tmp_path / "mc-partition.md").read_text()
    assert "<= 1.5 s CPU" in text and "<= 1.5 s wall" in text and "| cpsat |" not in text
    assert "within 1.5 s of CPU" in text


def test_the_seeds_param_reruns_chosen_sets(tmp_path: Path) -> None:
    # --quick: 2 points (U 0.80, 1.00) of 2 sets; seeds 10001 (point 1, set 1) and the range
    # 20000-20001 (point 2, both sets): 3 of the 4 sets, the same seeds as in the full run.
    rows = _quick_rows(tmp_path, "backends=cpsat", "seeds=10001,20000-20001")
    assert {r["seed"] for r in rows} == {"10001", "20000", "20001"}
    proc = placement(
        "bench", "mc-partition", "--quick", "--param", "seeds=1-x", "--out", str(tmp_path)
    )
    assert proc.returncode == 2 and "--param seeds" in proc.stderr, proc.stderr
