"""The dispatch family: instance errors, the checker's rules, the bound, the FCFS schedule,
the exact model against enumeration, the simulator and its policies, the trace formats."""

from __future__ import annotations

import gzip
import itertools
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from placement.benchmarks.dispatch.sweep import (
    SERVER_COUNTS,
    SWEEP_POLICIES,
    run_sweep,
    split,
    total_speed_for,
)
from placement.models.dispatch import FAMILY
from placement.models.dispatch.bound import lower_bound, own_service_bound, srpt_bound, srpt_flow
from placement.models.dispatch.explain import explain_waits
from placement.models.dispatch.formats.sacct import load_sacct
from placement.models.dispatch.formats.swf import load_swf
from placement.models.dispatch.generate import generate
from placement.models.dispatch.instance import (
    DispatchInstance,
    DispatchJob,
    DispatchServer,
    DispatchSolution,
)
from placement.models.dispatch.schedule import easy_solution, fcfs_solution
from placement.models.dispatch.sim import POLICY_NAMES, make_policy, replay
from placement.models.dispatch.sim.stages import choose_stages, grid, sample_paths, staged_ect
from placement.solver import SolutionStatus, SolveOptions, solve
from placement.solver.errors import InputError
from placement.solver.testing import instance_from_document

JOBS_DATA = Path(__file__).resolve().parents[2] / "shared" / "benchmarks" / "jobs"
NASA = JOBS_DATA / "pwa-nasa-ipsc-1993" / "NASA-iPSC-1993-3.1-cln.swf.gz"
CIRRUS = JOBS_DATA / "cirrus-2024q1" / "2024_Q1_CPU-sacct-subset.csv"


def _small() -> DispatchInstance:
    return DispatchInstance(
        [DispatchServer("a", 2), DispatchServer("b", 1, 2.0, 0.0, 1)],
        [
            DispatchJob("j0", 0, 4, 2),
            DispatchJob("j1", 1, 2, 1),
            DispatchJob("j2", 1, 3, 1, 0, 2),
            DispatchJob("j3", 2, 1, 1),
        ],
        name="small",
    )


def _document(instance: DispatchInstance) -> dict:
    return {"name": instance.name, "description": "", "dispatch": FAMILY.instance_to_dict(instance)}


# --- the instance -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "value", "word"),
    [
        ("jobs[1].cores", 3, "at most 2"),
        ("jobs[0].size", 0, "time units"),
        ("jobs[2].deadline", 1, "after the arrival"),
        ("servers[0].cores", 0, "cores"),
        ("jobs[3].arrival", -5, "time units"),
    ],
)
def test_a_bad_field_is_named_with_what_was_expected(path: str, value: int, word: str) -> None:
    document = _document(_small())
    container, _, field = path.rpartition(".")
    kind, _, index = container.partition("[")
    document["dispatch"][kind][int(index[:-1])][field] = value
    with pytest.raises(InputError) as info:
        instance_from_document(document)
    errors = [e for e in info.value.errors if e.path == f"dispatch.{path}"]
    assert errors, str(info.value)
    assert word in errors[0].expected


def test_duplicate_names_and_no_servers_are_refused() -> None:
    document = _document(_small())
    document["dispatch"]["jobs"][1]["name"] = "j0"
    with pytest.raises(InputError, match=r"dispatch.jobs\[1\].name"):
        instance_from_document(document)
    document = _document(_small())
    document["dispatch"]["servers"] = []
    with pytest.raises(InputError, match="dispatch.servers"):
        instance_from_document(document)


def test_service_time_rounds_up_and_adds_the_overhead() -> None:
    inst = _small()
    # j2: size 3 on server b (speed 2, overhead 1): ceil(1.5) + 1 = 3.
    assert inst.service[2] == [3, 3]
    assert inst.service[3] == [1, 2]


def test_a_solution_naming_an_unknown_server_is_refused() -> None:
    inst = _small()
    solution = next(iter(FAMILY.greedy(inst, SolveOptions())))[1]
    msg = FAMILY.solution_to_message(inst, solution)
    msg.runs[0].server = "nowhere"
    with pytest.raises(InputError, match=r"dispatch.runs\[0\].server"):
        FAMILY.solution_from_message(inst, msg)


# --- the checker --------------------------------------------------------------------------


def test_the_checker_accepts_the_fcfs_schedule_and_recomputes_its_objective() -> None:
    inst = _small()
    solution = fcfs_solution(inst, (0, 0, 1, 0))
    # a: j0 [0,4) both cores; j1 waits for it [4,6); j3 [4,5) beside j1.
    # b: j2 [1,4). Flow: 4 + 5 + 2*3 + 3 = 18.
    assert solution.start == (0, 4, 1, 4)
    report = FAMILY.check(inst, solution)
    assert report.feasible, report.violations
    assert report.terms == {"total_weighted_flow_time": 18.0}


@pytest.mark.parametrize(
    ("server_of", "start", "violation"),
    [
        ((0, 0, 1, 0), (0, 3, 1, 4), "cores in use"),  # j1 beside the 2-core j0
        ((0, 0, 1, 0), (0, 4, 1, 0), "before its arrival"),  # j3 at 0 < 2
        ((0, 0, 1, 0), (0, 5, 1, 4), "not FCFS"),  # j3 (arrived later) before j1
        ((1, 0, 1, 0), (0, 4, 1, 4), "needs 2 cores"),  # j0 on the 1-core server
        ((0, 0, 1, 2), (0, 4, 1, 4), "not served"),
        ((0, 0, 1, 1), (0, 4, 1, 3), "cores in use"),  # j3 overlaps j2 on b
    ],
)
def test_the_checker_rejects_each_broken_rule(server_of, start, violation) -> None:
    report = FAMILY.check(_small(), DispatchSolution(server_of, start))
    assert not report.feasible
    assert any(violation in v for v in report.violations), report.violations


def test_the_checker_rejects_wrong_lengths_and_types() -> None:
    inst = _small()
    assert not FAMILY.check(inst, DispatchSolution((0, 0), (0, 0))).feasible
    assert not FAMILY.check(inst, DispatchSolution((0, 0, 1, 0), (0, 4.5, 1, 4))).feasible
    assert not FAMILY.check(inst, "schedule").feasible


# --- bounds, FCFS optimality and the exact model against enumeration ----------------------


def _random_instance(rng: random.Random, n: int) -> DispatchInstance:
    servers = [
        DispatchServer("s0", 2),
        DispatchServer(
            "s1", rng.choice([1, 2, 3]), rng.choice([1.0, 0.5, 2.0]), 0.0, rng.choice([0, 1])
        ),
    ]
    jobs = [
        DispatchJob(
            f"j{i}",
            rng.randint(0, 8),
            rng.choice([1, 2, 3, 7]),
            rng.choice([1, 1, 2]),
            0,
            rng.choice([1, 1, 3]),
        )
        for i in range(n)
    ]
    return DispatchInstance(servers, jobs)


def _enumerated_optimum(inst: DispatchInstance) -> float:
    return min(
        FAMILY.check(inst, fcfs_solution(inst, a)).objective
        for a in itertools.product(*inst.eligible)
    )


@pytest.mark.parametrize("seed", range(6))
def test_bound_greedy_and_exact_agree_with_enumeration(seed: int) -> None:
    rng = random.Random(seed)
    inst = _random_instance(rng, 6)
    inst = instance_from_document(_document(inst))  # validated as files are
    optimum = _enumerated_optimum(inst)
    assert lower_bound(inst) <= optimum
    for _, solution in FAMILY.greedy(inst, SolveOptions()):
        assert FAMILY.check(inst, solution).objective >= optimum
    for backend in ("cpsat", "milp"):
        result = solve(inst, SolveOptions(backend=backend, time_limit_s=20, threads=1))
        assert result.status == SolutionStatus.OPTIMAL, result.message
        assert result.objective == optimum


def test_the_fcfs_schedule_is_optimal_for_its_assignment() -> None:
    """Every start of every job, tried against the earliest-start schedule: none better."""
    rng = random.Random(11)
    for _ in range(5):
        inst = instance_from_document(_document(_random_instance(rng, 4)))
        for assignment in itertools.product(*inst.eligible):
            best = FAMILY.check(inst, fcfs_solution(inst, assignment)).objective
            horizon = 40
            for start in itertools.product(range(horizon // 4), repeat=4):
                report = FAMILY.check(inst, DispatchSolution(assignment, start))
                if report.feasible:
                    assert report.objective >= best
            break


def test_srpt_matches_a_hand_computed_example() -> None:
    # Rate 1: job A (0, 5), job B (1, 1): SRPT runs A [0,1), B [1,2), A [2,6): flows 6 + 1.
    assert srpt_flow([0.0, 1.0], [5.0, 1.0], 1.0) == pytest.approx(7.0)
    inst = DispatchInstance([DispatchServer("s")], [DispatchJob("a", 0, 5), DispatchJob("b", 1, 1)])
    assert srpt_bound(inst) == 7
    assert own_service_bound(inst) == 6
    # One server, FCFS: a [0,5), b [5,6): 5 + 5 = 10 >= 7.
    assert _enumerated_optimum(inst) == 10


# --- the simulator and the policies -------------------------------------------------------


@pytest.mark.parametrize("policy", POLICY_NAMES)
def test_every_policy_replays_to_a_checked_schedule_no_better_than_the_bound(policy: str) -> None:
    inst = generate(400, 4, 0.9, seed=3)
    result = replay(inst, policy)
    assert FAMILY.check(inst, result.solution).feasible
    assert result.objective >= lower_bound(inst)
    assert len(result.decision_s) == len(inst.jobs)


def test_ect_equals_lwl_and_central_fcfs_on_identical_single_core_servers() -> None:
    inst = generate(500, 4, 0.9, seed=5)
    objectives = {p: replay(inst, p).objective for p in ("ect", "lwl", "central-fcfs")}
    assert len(set(objectives.values())) == 1, objectives


def test_replay_on_multicore_heterogeneous_servers_is_checked() -> None:
    rng = random.Random(2)
    inst = instance_from_document(_document(_random_instance(rng, 60)))
    for policy in POLICY_NAMES:
        assert FAMILY.check(inst, replay(inst, policy).solution).feasible


def test_generate_is_seeded() -> None:
    a, b = generate(50, 3, 0.7, seed=9), generate(50, 3, 0.7, seed=9)
    assert FAMILY.instance_to_dict(a) == FAMILY.instance_to_dict(b)
    assert FAMILY.instance_to_dict(a) != FAMILY.instance_to_dict(generate(50, 3, 0.7, seed=10))
    c = generate(50, 3, 0.7, seed=9, distribution="lognormal")
    assert FAMILY.instance_to_dict(a) != FAMILY.instance_to_dict(c)


# --- formats ------------------------------------------------------------------------------


def test_swf_reads_header_and_jobs_and_names_a_bad_line(tmp_path: Path) -> None:
    text = (
        "; MaxNodes: 8\n1 0 -1 10 4 -1 -1 4 -1 -1 1 1 1 -1 1 -1 -1 -1\n"
        "2 5 -1 -1 2 -1 -1 2 -1 -1 1 1 1 -1 1 -1 -1 -1\n3 7 -1 3 16 -1 -1 16 -1 -1 1 1 1 -1 1 -1 -1 -1\n"
        "4 9 -1 2 -1 -1 -1 1 -1 -1 1 1 1 -1 1 -1 -1 -1\n"
    )
    path = tmp_path / "log.swf.gz"
    with gzip.open(path, "wt") as f:
        f.write(text)
    inst = load_swf(str(path))
    assert [(j.name, j.arrival, j.size, j.cores) for j in inst.jobs] == [
        ("job1", 0, 10, 4),
        ("job4", 9, 2, 1),
    ]
    assert inst.servers[0].cores == 8 and "2 without" in inst.description
    bad = tmp_path / "bad.swf"
    bad.write_text("1 0 x 10\n")
    with pytest.raises(InputError, match="line 1"):
        load_swf(str(bad))


def test_sacct_skips_never_started_and_wide_jobs(tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text(
        "JobID,NCPUS,NNodes,Submit,Start,End,ElapsedRaw,State\n"
        "1,4,1,100,100,110,10,COMPLETED\n2,72,2,101,101,111,10,COMPLETED\n"
        "3,1,1,102,None,None,0,CANCELLED\n4,1,1,105,106,106,0,COMPLETED\n"
    )
    inst = load_sacct(str(path), servers=2, cores=36)
    assert [(j.name, j.arrival, j.size, j.cores) for j in inst.jobs] == [
        ("job1", 0, 10, 4),
        ("job4", 5, 1, 1),
    ]
    path.write_text("JobID,Submit\n1,2\n")
    with pytest.raises(InputError, match="header"):
        load_sacct(str(path))


@pytest.mark.skipif(not NASA.exists(), reason=f"shared trace absent: {NASA}")
def test_the_nasa_log_replays_through_every_policy() -> None:
    inst = load_swf(str(NASA), servers=2, cores=64, limit=3000)
    assert len(inst.jobs) == 3000
    for policy in POLICY_NAMES:
        assert FAMILY.check(inst, replay(inst, policy).solution).feasible


@pytest.mark.skipif(not CIRRUS.exists(), reason=f"shared trace absent: {CIRRUS}")
def test_the_cirrus_sacct_trace_reads_and_replays() -> None:
    inst = load_sacct(str(CIRRUS), limit=3000)
    assert len(inst.jobs) == 3000 and inst.servers[0].cores == 36
    assert FAMILY.check(inst, replay(inst, "ect").solution).feasible


# --- the command line ---------------------------------------------------------------------


def test_generate_and_solve_json_on_the_command_line(tmp_path: Path) -> None:
    out = tmp_path / "t.json"
    cli = [sys.executable, "-m", "placement.api.cli"]
    done = subprocess.run(
        [
            *cli,
            "generate",
            "dispatch",
            "--jobs",
            "8",
            "--servers",
            "2",
            "--load",
            "0.9",
            "--mean-size",
            "4",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    done = subprocess.run(
        [*cli, "solve", str(out), "--json", "--time-limit", "20"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "optimal"
    document = json.loads(out.read_text())
    document["dispatch"]["jobs"][0]["size"] = -1
    out.write_text(json.dumps(document))
    done = subprocess.run([*cli, "solve", str(out)], capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert "dispatch.jobs[0].size" in done.stderr and "Traceback" not in done.stderr


def test_the_rollout_dispatcher_is_checked_and_seeded() -> None:
    """A generous budget: no fallback, so two replays give the same schedule."""
    inst = generate(300, 4, 0.9, seed=4)
    runs = []
    for _ in range(2):
        policy = make_policy("rollout")
        policy.budget_s = 60.0
        result = replay(inst, policy)
        assert FAMILY.check(inst, result.solution).feasible
        assert policy.fallbacks == 0
        runs.append(result.solution)
    assert runs[0] == runs[1]


def test_a_typed_instance_with_zero_speed_or_weight_is_refused_by_name() -> None:
    inst = DispatchInstance(
        [DispatchServer("a", 1, 0.0)], [DispatchJob("j", 0, 1, 1, 0, 0)], name="typed"
    )
    with pytest.raises(InputError) as info:
        FAMILY.validate(inst)
    paths = {e.path for e in info.value.errors}
    assert {"dispatch.servers[0].speed", "dispatch.jobs[0].weight"} <= paths


def test_explain_waits_names_the_jobs_ahead() -> None:
    inst = DispatchInstance(
        [DispatchServer("a")],
        [DispatchJob("long", 0, 10), DispatchJob("short", 1, 1), DispatchJob("later", 20, 1)],
    )
    reasons = explain_waits(inst, fcfs_solution(inst, (0, 0, 0)))
    assert [(r["name"], r["wait"], r["ahead"]) for r in reasons] == [("short", 9, ["long"])]


def test_the_command_in_the_description_makes_the_same_file(tmp_path: Path) -> None:
    cli = [sys.executable, "-m", "placement.api.cli"]
    first, again = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    again.mkdir()
    argv = ["generate", "dispatch", "--jobs", "20", "--servers", "3", "--load", "0.7",
            "--distribution", "lognormal", "--server-cores", "2", "--out", "gen.json"]  # fmt: skip
    done = subprocess.run([*cli, *argv], cwd=first, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    description = json.loads((first / "gen.json").read_text())["description"]
    command = description[description.index("placement generate ") :].split()
    done = subprocess.run(
        [*cli, *command[1:]], cwd=again, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert (again / "gen.json").read_bytes() == (first / "gen.json").read_bytes()


def test_easy_backfills_a_short_job_past_a_wide_one_in_backfill_mode() -> None:
    jobs = [DispatchJob("long", 0, 10), DispatchJob("wide", 1, 1, 2), DispatchJob("short", 2, 2)]
    fcfs = DispatchInstance([DispatchServer("a", 2)], jobs)
    backfill = DispatchInstance([DispatchServer("a", 2)], jobs, mode="backfill")
    assert easy_solution(backfill, (0, 0, 0)).start == (0, 10, 2)
    assert fcfs_solution(fcfs, (0, 0, 0)).start == (0, 10, 11)
    # The same out-of-order schedule: accepted in backfill mode, refused under FCFS.
    easy = easy_solution(backfill, (0, 0, 0))
    assert FAMILY.check(backfill, easy).feasible
    assert FAMILY.check(backfill, easy).objective == 10 + 10 + 2
    report = FAMILY.check(fcfs, easy)
    assert not report.feasible and "not FCFS" in report.violations[0]
    names = [name for name, _ in FAMILY.greedy(backfill, SolveOptions())]
    assert names == ["ect", "ect-easy", "est", "est-easy"]


@pytest.mark.parametrize("seed", range(3))
def test_easy_schedules_of_multicore_servers_pass_the_checker(seed: int) -> None:
    rng = random.Random(seed)
    jobs = [
        DispatchJob(f"j{i}", rng.randint(0, 30), rng.choice([1, 2, 5, 20]), rng.choice([1, 2, 4]))
        for i in range(40)
    ]
    inst = DispatchInstance(
        [DispatchServer("a", 4), DispatchServer("b", 2, 1.5, 0.0, 1)], jobs, mode="backfill"
    )
    for name, solution in FAMILY.greedy(inst, SolveOptions()):
        report = FAMILY.check(inst, solution)
        assert report.feasible, (name, report.violations)


# --- the staged rollout and the server-count sweep ----------------------------------------


def test_the_stages_chosen_are_the_least_score_over_the_whole_grid() -> None:
    inst = generate(300, 4, 0.95, seed=6)
    chosen = choose_stages(inst, paths=2, jobs=400, seed=1, budget_s=600.0)
    paths = sample_paths(inst, 2, 400, 1)
    scores = {
        (first, cutoff): sum(staged_ect(inst, a, js, first, second, cutoff) for a, js in paths) / 2
        for first, second, cutoff in grid(inst)
    }
    assert chosen.evaluated == len(grid(inst))
    assert chosen.score == pytest.approx(min(scores.values()))
    assert scores[(chosen.first, chosen.cutoff)] == pytest.approx(chosen.score)
    assert (tuple(range(4)), None) in scores  # no split is a candidate


def test_the_staged_rollout_keeps_every_job_in_its_stage() -> None:
    inst = generate(400, 6, 0.95, seed=2)
    policy = make_policy("staged-rollout")
    policy.budget_s = 60.0
    result = replay(inst, policy)
    assert FAMILY.check(inst, result.solution).feasible
    stages = policy.stages
    if stages.cutoff is not None:
        for j, s in enumerate(result.solution.server_of):
            assert s in stages.of(inst.jobs[j].size), (j, s, stages)


def test_on_many_servers_the_rollout_leaves_the_decision_to_earliest_completion() -> None:
    """Above MAX_SCANS server scans a decision is earliest completion's, counted."""
    inst = generate(120, 1200, 0.5, seed=1)
    policy = make_policy("rollout")
    result = replay(inst, policy)
    assert policy.fallbacks == 120 - policy.warmup
    assert result.solution == replay(inst, "ect").solution


def test_the_sweep_splits_a_fixed_total_speed_and_every_replay_is_checked() -> None:
    inst = generate(300, 8, 0.9, seed=1)
    total = total_speed_for(inst, 0.9)
    work = sum(j.size for j in inst.jobs)
    span = max(j.arrival for j in inst.jobs) - min(j.arrival for j in inst.jobs)
    assert float(total) == pytest.approx(work / (0.9 * span), abs=1 / 64)
    four = split(inst, 4, total)
    assert [s.speed for s in four.servers] == [float(total / 4)] * 4
    rows = run_sweep({"sweep": "t"}, inst, total)
    assert len(rows) == len(SERVER_COUNTS) * len(SWEEP_POLICIES)
    assert all(r["invalid"] == 0 for r in rows)
    one = [r["mean_response"] for r in rows if r["servers"] == 1]
    assert len(set(one)) == 1  # one server: every policy is FCFS on it
