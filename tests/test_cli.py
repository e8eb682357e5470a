"""The command line as a user runs it: real processes, real files, no mocks.

Every test runs ``python -m placement.api.cli`` (or the installed ``placement`` script) in a
subprocess on files in ``tmp_path`` and looks at the exit code, stdout and stderr.
"""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from placement.api.cli.entry import main
from placement.solver.family import get_family
from placement.solver.testing import registered
from tests.conftest import REPO

CLI = [sys.executable, "-m", "placement.api.cli"]
SCRIPT = Path(sys.executable).parent / "placement"
FAST = ["--backend", "greedy"]
"""Greedy only: the tests here are about the command line, not about the exact backends."""


def tiny() -> dict[str, Any]:
    """A small valid instance: two 4-GPU nodes in one rack, four jobs (one cannot fit)."""
    return {
        "name": "tiny",
        "description": "two nodes, four jobs; 'big' needs 8 GPUs inside one node",
        "gpu": {
            "cluster": {
                "levels": [
                    {"name": "nvlink", "bandwidth_gbps": 300},
                    {"name": "node", "bandwidth_gbps": 50},
                    {"name": "rack", "bandwidth_gbps": 10},
                ],
                "nodes": [
                    {
                        "name": "n0",
                        "gpu_type": "A100",
                        "gpu_count": 4,
                        "gpu_memory_mib": 40000,
                        "nvlink_domain_size": 4,
                        "cpu_milli": 32000,
                        "memory_mib": 256000,
                        "groups": ["r0"],
                    },
                    {
                        "name": "n1",
                        "gpu_type": "A100",
                        "gpu_count": 4,
                        "gpu_memory_mib": 40000,
                        "nvlink_domain_size": 2,
                        "cpu_milli": 32000,
                        "memory_mib": 256000,
                        "groups": ["r0"],
                        "gpu_usage": [{"index": 0, "milli_used": 500}],
                    },
                ],
            },
            "jobs": [
                {"name": "train", "gpus": 4, "cpu_milli": 8000, "traffic_gb": 10},
                {"name": "infer", "gpu_milli": 300, "cpu_milli": 1000},
                {
                    "name": "big",
                    "workers": 1,
                    "gpus": 8,
                    "locality_level": "node",
                    "locality_required": True,
                },
                {"name": "etl", "cpu_milli": 2000},
            ],
        },
    }


def run(*args: str | Path, cwd: Path, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """Run the command line; never raises on a non-zero exit."""
    return subprocess.run(
        [*CLI, *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, indent=1) if not isinstance(data, str) else data)
    return path


def assert_user_error(proc: subprocess.CompletedProcess[str], *fragments: str) -> str:
    """Exit 2, one line on stderr starting ``placement: error:``, containing ``fragments``."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    line = lines[0]
    assert line.startswith("placement: error: "), line
    for fragment in fragments:
        assert fragment in line, (fragment, line)
    return line


@pytest.fixture
def instance(tmp_path: Path) -> Path:
    return write(tmp_path / "tiny.json", tiny())


# --- help -------------------------------------------------------------------------------------


def test_help_lists_commands_and_exit_codes(tmp_path: Path) -> None:
    proc = run("--help", cwd=tmp_path)
    assert proc.returncode == 0
    for word in ("solve", "check", "batch", "generate", "exit codes", "130", "PLACEMENT_DEBUG"):
        assert word in proc.stdout
    for command in (["solve"], ["check"], ["batch"], ["generate"], ["generate", "gpu"]):
        sub = run(*command, "--help", cwd=tmp_path)
        assert sub.returncode == 0, sub.stderr
        assert "usage: placement " + " ".join(command) in sub.stdout


def test_installed_console_script(tmp_path: Path, instance: Path) -> None:
    assert SCRIPT.exists(), f"console script not installed at {SCRIPT}"
    proc = subprocess.run(
        [str(SCRIPT), "solve", str(instance), *FAST, "--quiet"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr
    assert "status" in proc.stdout


# --- solve and check --------------------------------------------------------------------------


def test_solve_writes_a_solution_that_check_accepts(tmp_path: Path, instance: Path) -> None:
    out = tmp_path / "tiny.solution.json"
    proc = run("solve", instance, *FAST, "--out", out, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    summary = proc.stdout
    assert "status      feasible" in summary
    assert "stop reason heuristic_only" in summary
    for tier in ("placed_gpu_weighted", "comm_cost", "fragmentation"):
        assert tier in summary
    assert "backend     greedy:" in summary
    # 'big' needs 8 GPUs inside one 4-GPU node: it can never be placed.
    assert "big (infeasible_alone): " in summary
    assert "placed      3 of 4" in summary
    # Progress: the header and at least one improving incumbent, on stderr.
    assert "placement: solving" in proc.stderr
    assert "objective" in proc.stderr

    document = json.loads(out.read_text())
    assert document["instance_name"] == "tiny"
    assert {p["job"] for p in document["gpu"]["placements"]} == {"train", "infer", "etl"}
    assert [u["name"] for u in document["gpu"]["unplaced"]] == ["big"]

    check = run("check", instance, out, cwd=tmp_path)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "feasible    yes" in check.stdout
    assert "placed_gpu_weighted" in check.stdout


def test_solve_json_is_the_full_result(tmp_path: Path, instance: Path) -> None:
    proc = run("solve", instance, *FAST, "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # --json implies no progress lines
    result = json.loads(proc.stdout)
    assert result["status"] == "feasible"
    assert result["stop_reason"] == "heuristic_only"
    # etl is CPU-only: the instance has the tier placed_cpu_jobs after placed_gpu_weighted.
    assert list(result["objective_terms"]) == [
        "placed_gpu_weighted",
        "placed_cpu_jobs",
        "comm_cost",
        "fragmentation",
    ]
    assert result["history"], "at least one incumbent"
    # The solution key holds a complete solution file, usable with `placement check`.
    solution = write(tmp_path / "from-json.json", result["solution"])
    assert run("check", instance, solution, cwd=tmp_path).returncode == 0


def test_quiet_prints_nothing_on_stderr(tmp_path: Path, instance: Path) -> None:
    proc = run("solve", instance, *FAST, "--quiet", cwd=tmp_path)
    assert proc.returncode == 0
    assert proc.stderr == ""


def test_check_lists_every_violation_of_a_corrupted_solution(
    tmp_path: Path, instance: Path
) -> None:
    out = tmp_path / "solution.json"
    assert run("solve", instance, *FAST, "--out", out, "--quiet", cwd=tmp_path).returncode == 0
    document = json.loads(out.read_text())
    placements = document["gpu"]["placements"]
    train = next(p for p in placements if p["job"] == "train")
    infer = next(p for p in placements if p["job"] == "infer")
    # Corrupt it: the 4-GPU job on node n1, whose GPU 0 is half used, and the fractional job
    # on a GPU index n1 does not have.
    train["workers"] = [{"node": "n1", "gpus": [0, 1, 2, 3]}]
    infer["workers"] = [{"node": "n1", "gpus": [7]}]
    bad = write(tmp_path / "corrupted.json", document)

    proc = run("check", instance, bad, cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "feasible    no: " in proc.stdout
    assert "GPU 0 of node 'n1' is not entirely free" in proc.stdout
    assert "GPU index 7 not in node 'n1'" in proc.stdout
    assert "Traceback" not in proc.stderr

    as_json = run("check", instance, bad, "--json", cwd=tmp_path)
    assert as_json.returncode == 1
    report = json.loads(as_json.stdout)
    assert report["feasible"] is False
    assert len(report["violations"]) >= 2


# --- user errors: exit 2, one line naming the file and the field -------------------------------


def _mutate(change: Any) -> dict[str, Any]:
    data = tiny()
    change(data)
    return data


INVALID_INSTANCES: dict[str, tuple[Any, list[str]]] = {
    "not-json": ('{"gpu": {"cluster": ', ["valid JSON"]),
    "array": ("[1, 2, 3]", ["a JSON object"]),
    "unknown-field": (
        _mutate(lambda d: d["gpu"]["jobs"][1].update(colour="blue")),
        ["gpu.jobs[1].colour"],
    ),
    "wrong-type": (
        _mutate(lambda d: d["gpu"]["cluster"]["nodes"][1].update(gpu_count="four")),
        ["gpu.cluster.nodes[1].gpu_count", "'four'"],
    ),
    "negative-count": (
        _mutate(lambda d: d["gpu"]["cluster"]["nodes"][0].update(gpu_count=-2)),
        ["gpu.cluster.nodes[0].gpu_count", "-2"],
    ),
    "unknown-level": (
        _mutate(lambda d: d["gpu"]["jobs"][2].update(locality_level="pod")),
        ["gpu.jobs[2].locality_level", "'pod'", "nvlink, node, rack"],
    ),
    "unknown-family": (
        {"name": "x", "warp_drive": {"tasks": []}},
        ["warp_drive", "family section (", "gpu"],
    ),
    "missing-family": ({"name": "x"}, ["family", "gpu"]),
}


@pytest.mark.parametrize("case", sorted(INVALID_INSTANCES))
def test_invalid_instance_is_one_line_and_exit_2(tmp_path: Path, case: str) -> None:
    content, fragments = INVALID_INSTANCES[case]
    path = write(tmp_path / f"{case}.json", content)
    assert_user_error(run("solve", path, *FAST, cwd=tmp_path), f"{case}.json: ", *fragments)
    # `check` reads the instance first, and names it.
    solution = write(tmp_path / "solution.json", {"gpu": {}})
    assert_user_error(run("check", path, solution, cwd=tmp_path), f"{case}.json: ", *fragments)


def test_missing_file(tmp_path: Path) -> None:
    assert_user_error(run("solve", "nowhere.json", cwd=tmp_path), "nowhere.json", "existing file")


def test_unknown_names_in_a_solution_file(tmp_path: Path, instance: Path) -> None:
    job = write(tmp_path / "job.json", {"gpu": {"placements": [{"job": "nope"}]}})
    assert_user_error(
        run("check", instance, job, cwd=tmp_path), "job.json: ", "gpu.placements[0].job", "'nope'"
    )
    node = write(
        tmp_path / "node.json",
        {
            "gpu": {
                "placements": [
                    {"job": "etl", "workers": [{"node": "n0"}]},
                    {"job": "infer", "workers": [{"node": "n9", "gpus": [0]}]},
                ]
            }
        },
    )
    assert_user_error(
        run("check", instance, node, cwd=tmp_path),
        "node.json: ",
        "gpu.placements[1].workers[0].node",
        "'n9'",
    )
    # A broken instance is named as the instance, even when the solution is fine.
    broken = write(tmp_path / "broken.json", "[]")
    assert_user_error(run("check", broken, job, cwd=tmp_path), "broken.json: ")


@pytest.mark.parametrize(
    "options, fragment",
    [
        (["--time-limit", "0"], "--time-limit"),
        (["--time-limit", "soon"], "--time-limit"),
        (["--threads", "-1"], "--threads"),
        (["--threads", "100000"], "from 0 (all cores) to 1024"),
        (["--seed", "2147483648"], "an integer from -2147483648 to 2147483647"),
        (["--time-limit", "1e12"], "<= 1e+07"),
        (["--server", "127.0.0.1:99999"], "a port in 1..65535"),
        (["--server", "127.0.0.1"], "expected HOST:PORT"),
        (["--gap", "1.5"], "--gap"),
        (["--backend", "quantum"], "--backend"),
        (["--frobnicate"], "--frobnicate"),
    ],
)
def test_bad_option_is_one_line_and_exit_2(
    tmp_path: Path, instance: Path, options: list[str], fragment: str
) -> None:
    assert_user_error(run("solve", instance, *options, cwd=tmp_path), fragment)


def test_unwritable_output_is_refused_before_solving(tmp_path: Path, instance: Path) -> None:
    proc = run(
        "solve", instance, *FAST, "--out", tmp_path / "no" / "such" / "dir.json", cwd=tmp_path
    )
    assert_user_error(proc, "output folder")


def test_out_naming_an_input_is_refused_and_the_input_kept(tmp_path: Path, instance: Path) -> None:
    """``solve X --out X`` and ``batch X --out X`` overwrote the instance they read."""
    original = instance.read_bytes()
    for command in (("solve", instance, *FAST), ("batch", instance)):
        same = tmp_path / "." / instance.name  # another spelling of the same file
        proc = run(*command, "--out", same, cwd=tmp_path)
        assert_user_error(proc, "--out", "a file other than the input")
        assert instance.read_bytes() == original
    solution = tmp_path / "solution.json"
    assert run("solve", instance, *FAST, "--out", solution, cwd=tmp_path).returncode == 0
    kept = solution.read_bytes()
    proc = run("solve", instance, *FAST, "--start", solution, "--out", solution, cwd=tmp_path)
    assert_user_error(proc, "a file other than the input")
    assert solution.read_bytes() == kept


@pytest.mark.parametrize("ccr", ["nan", "inf", "-1"])
def test_generate_refuses_a_non_finite_or_negative_ccr(tmp_path: Path, ccr: str) -> None:
    """These were exit 3 'internal error' (numpy's OverflowError / ValueError)."""
    proc = run("generate", "dag", "--ccr", ccr, "--out", tmp_path / "g.json", cwd=tmp_path)
    assert_user_error(proc, "--ccr", "a finite number >= 0")
    assert not (tmp_path / "g.json").exists()


def test_plot_refuses_a_suffix_it_cannot_draw(tmp_path: Path, instance: Path) -> None:
    """``plot --out x.txt`` was exit 3 (matplotlib's 'Format txt is not supported')."""
    solution = tmp_path / "solution.json"
    assert run("solve", instance, *FAST, "--out", solution, cwd=tmp_path).returncode == 0
    proc = run("plot", instance, solution, "--out", tmp_path / "x.txt", cwd=tmp_path)
    assert_user_error(proc, "--out", "an image file ending in .png, .svg, .pdf")


# --- batch ------------------------------------------------------------------------------------


def test_batch_reports_good_and_bad_files(tmp_path: Path, instance: Path) -> None:
    bad = write(tmp_path / "bad.json", _mutate(lambda d: d["gpu"]["jobs"][0].update(gpus=-1)))
    results = tmp_path / "results.csv"
    solutions = tmp_path / "solutions"
    solutions.mkdir()
    proc = run(
        "batch",
        instance,
        bad,
        "--jobs",
        "2",
        "--out",
        results,
        "--solutions",
        solutions,
        *FAST,
        cwd=tmp_path,
    )
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "bad.json: gpu.jobs[0].gpus" in proc.stderr  # reported as it happens
    assert "1 of 2 solved, 1 failed" in proc.stderr

    rows = list(csv.DictReader(io.StringIO(results.read_text())))
    assert [Path(r["file"]).name for r in rows] == ["tiny.json", "bad.json"]  # input order
    for column in (
        "file",
        "family",
        "status",
        "stop_reason",
        "objective",
        "bound",
        "gap",
        "backend",
        "time_s",
        "placed",
        "unplaced",
        "error",
    ):
        assert column in rows[0]
    good, failed = rows
    assert good["status"] == "feasible" and good["error"] == ""
    assert good["family"] == "gpu" and good["placed"] == "3" and good["unplaced"] == "1"
    assert float(good["objective"]) > 0
    assert failed["status"] == "error"
    assert "bad.json: gpu.jobs[0].gpus: got -1" in failed["error"]

    # The solution written for the good file passes `check`.
    written = Path(good["solution_file"])
    assert written.parent == solutions
    assert run("check", instance, written, cwd=tmp_path).returncode == 0


def test_batch_all_good_exits_0_and_writes_csv_to_stdout(tmp_path: Path, instance: Path) -> None:
    other = write(tmp_path / "other.json", tiny())
    proc = run("batch", instance, other, *FAST, "--quiet", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert [r["status"] for r in rows] == ["feasible", "feasible"]


# --- generate ---------------------------------------------------------------------------------


def test_generate_is_deterministic_per_seed(tmp_path: Path) -> None:
    def generate(seed: int, folder: str) -> Path:
        # The same relative --out in separate folders: the description records the command.
        cwd = tmp_path / folder
        cwd.mkdir()
        proc = run(
            "generate", "gpu", "--gpus", "32", "--jobs", "20", "--seed", seed,
            "--out", "gen.json", cwd=cwd,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        return cwd / "gen.json"

    a, b, c = generate(7, "a"), generate(7, "b"), generate(8, "c")
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()
    document = json.loads(a.read_text())
    assert document["name"] and "--seed 7" in document["description"]
    assert sum(n["gpu_count"] for n in document["gpu"]["cluster"]["nodes"]) == 32
    assert len(document["gpu"]["jobs"]) == 20
    # Standard output gets the same document when --out is not given (apart from the
    # command recorded in the description).
    to_stdout = run("generate", "gpu", "--gpus", "32", "--jobs", "20", "--seed", "7", cwd=tmp_path)
    assert to_stdout.returncode == 0
    assert json.loads(to_stdout.stdout)["gpu"] == document["gpu"]
    # What generate writes, solve reads.
    solved = run("solve", a, *FAST, "--quiet", cwd=tmp_path)
    assert solved.returncode == 0, solved.stderr


def test_generate_rejects_bad_sizes(tmp_path: Path) -> None:
    proc = run("generate", "gpu", "--gpus", "0", "--jobs", "3", cwd=tmp_path)
    assert_user_error(proc, "--gpus")
    proc = run("generate", "gpu", "--gpus", "8", "--jobs", "3", "--occupancy", "2", cwd=tmp_path)
    assert_user_error(proc, "--occupancy")
    # A constraint between options, checked by the generator itself.
    proc = run("generate", "gpu", "--gpus", "8", "--jobs", "3", "--cpu-share", "0.9", cwd=tmp_path)
    assert_user_error(proc, "fractional_share + gang_share + cpu_share")
    proc = run("generate", "warp_drive", cwd=tmp_path)
    assert_user_error(proc, "warp_drive")


@pytest.mark.parametrize(
    "argv",
    [
        ["gpu", "--gpus", "16", "--jobs", "4", "--seed", "2", "--occupancy", "0.5"],
        ["dag", "--shape", "random", "--tasks", "6", "--machines", "2", "--ccr", "0.5"],
        ["dag", "--shape", "grid", "--tasks", "6", "--machines", "3", "--consistency", "semi"],
        ["dag", "--shape", "grid", "--tasks", "6", "--machines", "3", "--heterogeneity", "lohi"]
        + ["--unit", "1000"],
        ["partition", "--layers", "4", "--devices", "2", "--dag", "--memory-fill", "0.7"],
        ["entanglement", "--nodes", "12", "--pairs", "2", "--link-fidelity", "0.9,0.95"],
    ],
    ids=lambda argv: "-".join(argv[:1] + argv[2:3]),
)
def test_the_command_in_a_generated_description_makes_the_same_file(
    tmp_path: Path, argv: list[str]
) -> None:
    """Every family's generator records, from its declared parameters, a command that makes
    the file again: options and defaults included, byte for byte."""
    first = tmp_path / "a" / "gen.json"
    first.parent.mkdir()
    proc = run("generate", *argv, "--out", "gen.json", cwd=first.parent)
    assert proc.returncode == 0, proc.stderr
    description = json.loads(first.read_text())["description"]
    command = description[description.index("placement generate ") :].split()
    assert command[:2] == ["placement", "generate"] and "--out" in command, description
    for option in (word for word in argv if word.startswith("--")):
        assert option in command, (option, description)
    again = tmp_path / "b"
    again.mkdir()
    proc = run(*command[1:], cwd=again)
    assert proc.returncode == 0, proc.stderr
    assert (again / "gen.json").read_bytes() == first.read_bytes()


# --- Ctrl-C -----------------------------------------------------------------------------------


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process is POSIX-only")
def test_ctrl_c_during_the_cpsat_search_keeps_the_best_solution(tmp_path: Path) -> None:
    # Big enough that CP-SAT keeps improving for a while after its first solution.
    instance = tmp_path / "medium.json"
    gen = run(
        "generate", "gpu", "--gpus", "128", "--jobs", "100", "--seed", "1", "--out", instance,
        cwd=tmp_path,
    )  # fmt: skip
    assert gen.returncode == 0, gen.stderr
    out = tmp_path / "best.json"
    proc = subprocess.Popen(
        [*CLI, "solve", str(instance), "--backend", "cpsat", "--time-limit", "600"]
        + ["--out", str(out)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    seen: list[str] = []
    try:
        # Wait until CP-SAT reports a solution, so Ctrl-C lands inside its search.
        assert proc.stderr is not None
        for line in proc.stderr:
            seen.append(line)
            if line.rstrip().endswith("cpsat"):
                break
        else:
            pytest.fail("the solve ended before CP-SAT reported a solution: " + "".join(seen))
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stderr = "".join(seen) + stderr
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert "interrupted" in stderr
    assert "stop reason cancelled" in stdout
    assert "backend     cpsat" in stdout
    assert run("check", instance, out, cwd=tmp_path).returncode == 0


# --- the library example ----------------------------------------------------------------------


def test_library_example_runs(tmp_path: Path) -> None:
    example = REPO / "docs" / "examples" / "embed.py"
    proc = subprocess.run(
        [sys.executable, str(example)], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "improving solution" in out
    assert "status: " in out and "stop reason: " in out
    assert "placed_gpu_weighted" in out
    assert "unplaced: big-gang (infeasible_alone)" in out
    assert "cancelled from another thread: stop reason cancelled" in out


def test_plot_of_a_family_that_cannot_draw_is_a_user_error(
    tmp_path: Path, instance: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    solution = tmp_path / "s.json"
    assert run("solve", instance, "--out", solution, "-q", cwd=tmp_path).returncode == 0
    # Every bundled family draws: a gpu family without a plot, in this process, stands in.
    no_plot = type("NoPlot", (type(get_family("gpu")),), {"plot": None})()
    with registered(no_plot):
        code = main(["plot", str(instance), str(solution), "--out", str(tmp_path / "s.png")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "family" in err and "a family that can be drawn" in err, err
