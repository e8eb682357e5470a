"""What a hostile new user tried (issue 41, items 8, 10, 11, 12 and 14), each kept as a test
that failed on the code before its fix; and the campaign's standing steps: every count
option of every generator at ten million, and every numeric option of every command with
values out of any range, refused in one line naming the option (exit 2), never a crash."""

from __future__ import annotations

import argparse
import json
import resource
import signal
import subprocess
from pathlib import Path

import pytest

import placement
from placement.api.cli.entry import main
from placement.api.cli.parser import build_parser
from placement.models.gpu.explain import KINDS, explain_unplaced
from placement.models.gpu.generate import generate as generate_gpu
from placement.models.gpu.greedy import greedy_solutions
from placement.solver import CancellationToken, InputError, SolveOptions
from placement.solver.family import family_names, get_family
from placement.solver.jsonform import MAX_FILE_BYTES
from tests.conftest import REPO
from tests.test_cli import CLI, assert_user_error, run, tiny, write

TEN_MILLION = "10000000"
COUNTS = ("positive_int", "non_negative_int")
MEMORY_CAP = 3 * 1024**3
"""Address space a child process may use in these tests: reading a bounded input (the largest
file accepted is 512 MiB) fits, an unbounded one does not."""


@pytest.fixture
def gpu_file(tmp_path: Path) -> Path:
    return write(tmp_path / "tiny.json", tiny())


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def run_capped(
    *args: str | Path, cwd: Path, stdout: int | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*CLI, *map(str, args)],
        cwd=cwd,
        stdout=stdout if stdout is not None else subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        preexec_fn=_capped,
    )


# --- item 8: no bound on input size ----------------------------------------------------------


@pytest.mark.parametrize(
    "words",
    [
        ("solve", "/dev/zero"),
        ("check", "/dev/zero", "/dev/zero"),
        ("import", "braun", "/dev/zero"),
        ("import", "wfcommons", "/dev/zero"),
        ("import", "openb", "/dev/zero", "/dev/zero"),
        ("import", "slurm", "--topology", "/dev/zero", "--nodes", "/dev/zero"),
    ],
    ids=lambda w: " ".join(w[:2]),
)
def test_an_endless_input_is_refused_after_the_size_limit(tmp_path: Path, words: tuple) -> None:
    """``/dev/zero`` has no size to stat: reading stops one byte past the limit."""
    proc = run_capped(*words, cwd=tmp_path)
    assert_user_error(proc, "/dev/zero", f"at most {MAX_FILE_BYTES} bytes")


# --- item 10: generate at sizes of ten million -----------------------------------------------


def _count_parameters() -> list[tuple[str, str]]:
    out = []
    for name in family_names():
        for generator in get_family(name).generators:
            for p in generator.parameters:
                if p.type in COUNTS:
                    out.append((name, p.name))
    return out


@pytest.mark.parametrize("family,parameter", _count_parameters())
def test_every_count_of_every_generator_has_a_maximum_and_ten_million_is_refused(
    capsys: pytest.CaptureFixture[str], family: str, parameter: str
) -> None:
    generator = get_family(family).generators[0]
    declared = next(p for p in generator.parameters if p.name == parameter)
    assert declared.maximum is not None, f"generate {family} --{parameter} has no maximum"
    required = [
        w
        for p in generator.parameters
        if p.required and p.name != parameter
        for w in (p.flag, "0.5" if p.type == "probability" or "fraction" in p.type else "4")
    ]
    flag = declared.flag
    with pytest.raises(SystemExit) as exited:  # argparse's usage error
        main(["generate", family, *required, flag, TEN_MILLION, "--out", "/dev/null"])
    code = exited.value.code
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"argument {flag}: got {TEN_MILLION}, expected" in err
    assert f"to {declared.maximum}" in err


def test_library_generators_refuse_what_the_command_line_refuses() -> None:
    with pytest.raises(InputError, match="gpus"):
        generate_gpu(gpus=10_000_000, jobs=10, seed=0)
    with pytest.raises(InputError, match="jobs"):
        generate_gpu(gpus=8, jobs=10_000_000, seed=0)


def test_a_two_node_network_with_its_one_link_can_be_generated(tmp_path: Path) -> None:
    out = tmp_path / "two.json"
    code = main(
        [
            "generate",
            "entanglement",
            "--nodes",
            "2",
            "--degree",
            "1",
            "--pairs",
            "1",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    assert len(json.loads(out.read_text())["entanglement"]["links"]) == 1


# --- item 11: user errors reported as internal errors ----------------------------------------


@pytest.mark.parametrize(
    "words",
    [("solve", "INSTANCE", "--backend", "greedy"), ("generate", "dag", "--tasks", "5")],
    ids=["solve", "generate"],
)
def test_a_full_standard_output_is_a_clear_error(
    tmp_path: Path,
    gpu_file: Path,
    words: tuple,
) -> None:
    args = [str(gpu_file) if w == "INSTANCE" else w for w in words]
    with open("/dev/full", "w") as full:
        proc = run_capped(*args, cwd=tmp_path, stdout=full)
    assert proc.returncode == 2, proc.stderr
    assert "internal error" not in proc.stderr
    assert "standard output: could not write (No space left on device)" in proc.stderr


@pytest.mark.parametrize(
    "words",
    [("import", "wfcommons", "FILE"), ("import", "k8s", "--nodes", "FILE", "--pods", "FILE")],
    ids=["wfcommons", "k8s"],
)
def test_deeply_nested_json_in_an_importer_is_a_clear_error(tmp_path: Path, words: tuple) -> None:
    deep = write(tmp_path / "deep.json", "[" * 100_000 + "]" * 100_000)
    proc = run(*[deep if w == "FILE" else w for w in words], cwd=tmp_path)
    assert_user_error(proc, str(deep), "deeply nested JSON")


# --- item 14: silently accepted ----------------------------------------------------------------


def test_a_key_given_twice_is_refused_naming_it(tmp_path: Path) -> None:
    text = json.dumps(tiny(), indent=1).replace('"name": "tiny"', '"name": "tiny", "name": "x"', 1)
    proc = run("solve", write(tmp_path / "twice.json", text), cwd=tmp_path)
    assert_user_error(proc, "name: got 'a key given twice in one object'")


def test_options_that_are_ignored_are_named(
    tmp_path: Path,
    gpu_file: Path,
) -> None:
    token = write(tmp_path / "token", "secret\n")
    proc = run(
        "solve",
        gpu_file,
        "--backend",
        "greedy",
        "--milp-solver",
        "cbc",
        "--gap",
        "0.1",
        "--token-file",
        token,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert "warning: --milp-solver cbc is used only with --backend milp" in proc.stderr
    assert "warning: --gap is ignored with --backend greedy" in proc.stderr
    assert "warning: --token-file is used only with --server" in proc.stderr


def test_library_options_are_checked_as_the_command_line_checks_them(
    gpu_file: Path,
) -> None:
    with pytest.raises(InputError, match="time_limit_s: got true"):
        SolveOptions(time_limit_s=True)
    with pytest.raises(InputError, match="seed: got true"):
        SolveOptions(seed=True)
    with pytest.raises(InputError, match="got an empty string, expected an instance"):
        placement.solve("")
    with pytest.raises(InputError, match="speed: got an unknown option"):
        placement.solve(str(gpu_file), options={"speed": 1})
    result = placement.solve(str(gpu_file), options={"time_limit_s": 5, "backend": "greedy"})
    assert result.status.value in ("optimal", "feasible")


def test_check_refuses_an_end_that_contradicts_start_and_running_time(tmp_path: Path) -> None:
    inst = REPO / "instances" / "dag" / "etl-small.json"
    out = tmp_path / "s.json"
    assert (
        run("solve", inst, "--backend", "greedy", "--out", out, "-q", cwd=tmp_path).returncode == 0
    )
    assert run("check", inst, out, cwd=tmp_path).returncode == 0
    doc = json.loads(out.read_text())
    doc["dag"]["runs"][0]["end_s"] += 5
    proc = run("check", inst, write(tmp_path / "bad.json", doc), cwd=tmp_path)
    assert_user_error(proc, "dag.runs[0].end_s", "start_s + the running time")


def test_the_library_names_every_registered_family() -> None:
    """The package docstring names every family of the registry, and says how many."""
    names = family_names()
    words = {5: "Five", 6: "Six", 7: "Seven", 8: "Eight", 9: "Nine", 10: "Ten"}
    assert f"{words[len(names)]} problem families" in placement.__doc__
    assert all(f"``{name}``" in placement.__doc__ for name in names)


# --- item 12: the greedy phase honours the deadline --------------------------------------------


def test_gpu_heuristics_stop_with_a_feasible_solution_when_told() -> None:
    inst = placement.load(generate_gpu(gpus=64, jobs=40, seed=3))
    family = get_family("gpu")
    assert family.check(inst, next(iter(greedy_solutions(inst)))[1]).objective > 0
    stopped = CancellationToken()
    stopped.cancel()
    for name, solution in greedy_solutions(inst, SolveOptions(cancel=stopped)):
        assert solution.placements == {}, name
        assert family.check(inst, solution).feasible
    reasons = explain_unplaced(inst, solution, stopped)
    assert [r["name"] for r in reasons] == [j.name for j in inst.jobs]
    assert all(r["kind"] in KINDS for r in reasons)
    assert all(r["blocking_jobs"] == [] for r in reasons)
    whole = explain_unplaced(inst, solution)
    assert [r["kind"] for r in whole] == [r["kind"] for r in reasons]


def test_the_portfolio_gives_the_heuristics_a_token_that_fires_at_the_deadline() -> None:
    inst = placement.load(generate_gpu(gpus=64, jobs=40, seed=3))
    fired: list[bool] = []
    family = get_family("gpu")
    original = family.greedy

    def watching(instance, options):  # the family's own heuristics, run late on purpose
        fired.append(options.cancel.wait(10.0))
        yield from original(instance, options)

    family.greedy = watching
    try:
        result = placement.solve(inst, time_limit_s=0.5, backend="greedy")
    finally:
        del family.greedy
    assert fired == [True], "the heuristics' token did not fire at the deadline"
    assert result.solution is not None and result.solution.placements == {}


# --- the campaign: every numeric option of every command, out of range -------------------------

HOSTILE = ("nan", "inf", "-inf", "-1", "1e23", "99999999999999999999999", "0x10", "")


def _numeric_options() -> list[tuple[str, str]]:
    out = []
    parser = build_parser()
    stack: list[tuple[tuple[str, ...], argparse.ArgumentParser]] = [((), parser)]
    while stack:
        words, p = stack.pop()
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    stack.append(((*words, name), sub))
            elif action.option_strings and action.type not in (None, str):
                out.append((" ".join(words), action.option_strings[-1]))
    return sorted(set(out))


@pytest.mark.parametrize("command,option", _numeric_options())
def test_every_numeric_option_refuses_hostile_values_in_one_line(command: str, option: str) -> None:
    """Each value is refused the way argparse reports a bad value (exit 2, one line naming
    the option) or accepted as a value the program can hold; never anything else."""
    parser = build_parser(command.split()[0])
    action = _find(parser, command.split(), option)
    for value in HOSTILE:
        try:
            parsed = action.type(value)
        except (argparse.ArgumentTypeError, ValueError, TypeError):
            continue
        if isinstance(parsed, float):
            assert parsed == parsed and abs(parsed) != float("inf"), (option, value, parsed)
        if isinstance(parsed, int):
            assert abs(parsed) < 2**63, (option, value, parsed)


def _find(parser: argparse.ArgumentParser, words: list[str], option: str) -> argparse.Action:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and words:
            return _find(action.choices[words[0]], words[1:], option)
        if option in action.option_strings and not words:
            return action
    raise AssertionError(f"{option} not found")


# --- the campaign: SIGTERM and SIGKILL at every stage --------------------------------------------

STAGES_S = (0.05, 0.4, 1.0, 2.0, 4.0)
"""When the signal comes, after the start: Python starting, the instance being read, the
greedy, the exact search, and (for a short run) the end."""


def _signal_at(args: list[str], cwd: Path, sig: int, delay: float) -> subprocess.CompletedProcess:
    proc = subprocess.Popen(
        [*CLI, *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        proc.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_a_signal_at_any_stage_of_solve_leaves_a_whole_file_or_none(
    tmp_path: Path, sig: int
) -> None:
    """Whenever the signal comes, the ``--out`` file is either absent or a whole solution that
    ``check`` accepts (never half written), there is no traceback, and a SIGTERM that found a
    solution (exit 143) wrote it."""
    instance = tmp_path / "big.json"
    assert main(["generate", "gpu", "--gpus", "128", "--jobs", "100", "--seed", "1",
                 "--out", str(instance)]) == 0  # fmt: skip
    for delay in STAGES_S:
        out = tmp_path / f"solution-{delay}.json"
        args = ["solve", str(instance), "--backend", "cpsat", "--time-limit", "3"]
        proc = _signal_at([*args, "--out", str(out)], tmp_path, sig, delay)
        assert "Traceback" not in proc.stderr, (delay, proc.stderr)
        assert proc.returncode in (0, 128 + sig, -sig), (delay, proc.returncode, proc.stderr)
        if proc.returncode == 128 + signal.SIGTERM:
            assert out.exists(), (delay, proc.stderr)
        if out.exists():
            assert run("check", instance, out, cwd=tmp_path).returncode == 0, delay


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_a_signal_at_any_stage_of_generate_leaves_a_whole_file_or_none(
    tmp_path: Path, sig: int
) -> None:
    for delay in STAGES_S:
        out = tmp_path / f"instance-{delay}.json"
        args = ["generate", "gpu", "--gpus", "80000", "--jobs", "20000", "--out", str(out)]
        proc = _signal_at(args, tmp_path, sig, delay)
        assert "Traceback" not in proc.stderr, (delay, proc.stderr)
        if out.exists():
            placement.load(str(out))  # whole and valid
