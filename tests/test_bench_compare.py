"""The before/after comparison of ``placement bench --quick`` results (benchmarks/compare.py)."""

from __future__ import annotations

from pathlib import Path

from placement.benchmarks.compare import compare, is_timing, main


def _write(folder: Path, rows: list[str]) -> Path:
    folder.mkdir()
    (folder / "suite-a.csv").write_text("case,objective,wall_s,load_1min\n" + "\n".join(rows))
    return folder


def test_timing_columns_are_recognised() -> None:
    assert is_timing("wall_s") and is_timing("load_1min") and is_timing("cpu_p50_us")
    assert is_timing("over_5ms")
    assert not is_timing("objective") and not is_timing("bound")


def test_only_timing_differences_are_the_same(tmp_path: Path) -> None:
    a = _write(tmp_path / "a", ["x,10,0.5,0.1"])
    b = _write(tmp_path / "b", ["x,10,0.9,1.7"])
    assert compare(a, b, None) == (["suite-a                  same"], False)
    assert main([str(a), str(b)]) == 0


def test_a_changed_objective_fails(tmp_path: Path, capsys) -> None:
    a = _write(tmp_path / "a", ["x,10,0.5,0.1"])
    b = _write(tmp_path / "b", ["x,11,0.5,0.1"])
    assert main([str(a), str(b)]) == 1
    assert "CHANGED: objective; row 1 objective: '10' -> '11'" in capsys.readouterr().out


def test_a_column_that_varies_run_to_run_is_noise(tmp_path: Path) -> None:
    a = _write(tmp_path / "a", ["x,10,0.5,0.1"])
    again = _write(tmp_path / "again", ["x,12,0.5,0.1"])
    b = _write(tmp_path / "b", ["x,11,0.5,0.1"])
    lines, bad = compare(a, b, again)
    assert not bad and "noise: objective" in lines[0]


def test_a_missing_suite_fails_and_a_bad_folder_is_refused(tmp_path: Path, capsys) -> None:
    a = _write(tmp_path / "a", ["x,10,0.5,0.1"])
    (tmp_path / "b").mkdir()
    assert main([str(a), str(tmp_path / "b")]) == 1
    assert main([str(a), str(tmp_path / "nowhere")]) == 2
    assert "nowhere: not a folder of bench results" in capsys.readouterr().err
