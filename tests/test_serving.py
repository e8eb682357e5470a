"""The serving family: the known optima by enumeration, the checker's rules, errors that name
the field and by how much, the exact model against the heuristics, the Azure importer, the
measured profiles, and the warm start."""

from __future__ import annotations

import copy
import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest

from placement.models.serving import FAMILY, generate
from placement.models.serving.check import check
from placement.models.serving.fluid import rows as fluid_rows
from placement.models.serving.formats.azure import length_classes, read_trace, trace_instance
from placement.models.serving.instance import (
    DECODE,
    MIXED,
    PREFILL,
    Deployment,
    Route,
    ServingSolution,
    kinds,
)
from placement.models.serving.milp import MilpEncoding
from placement.models.serving.profiles import SPLITWISE_MEASURED, splitwise_profile
from placement.models.serving.routing import counts_cost_milli, gpus_fit, route_fill
from placement.solver import SolutionStatus, SolveOptions, StopReason, solve
from placement.solver.backends.base import BackendRun, RunStatus
from placement.solver.errors import InputError
from placement.solver.schema.v1 import placement_pb2
from placement.solver.testing import ExactContext, instance_document, instance_from_document
from tests import optima
from tests.conftest import REPO

SHARED = Path(__file__).resolve().parents[2] / "shared" / "benchmarks" / "serving"
CONV = SHARED / "azure-llm-2023" / "AzureLLMInferenceTrace_conv.csv"
CODE = SHARED / "azure-llm-2023" / "AzureLLMInferenceTrace_code.csv"


def _kind(instance, role: str, gpu: str = "a100", share: float | None = None) -> int:
    for i, k in enumerate(kinds(instance)):
        p = instance.profiles[k.profile]
        if k.role == role and p.gpu_type == gpu and (share is None or k.prefill_share == share):
            return i
    raise AssertionError(role)


def _document(instance) -> dict:
    return json.loads(json.dumps(instance_document(instance)))


# --- the known optima ---------------------------------------------------------------------


def _carries(instance, counts: dict[int, int], permille: int) -> int:
    """Milli-requests per second of the one class that ``counts`` carries with every row at
    ``permille`` thousandths of its capacity: each deployment its own rows' least quotient
    (``n floor(permille cap / 1000) // coef``), mixed ones alone, prefill and decode ones in
    pairs; at most the arrival rate. Exact for one class (no routing choice)."""
    ks, rs = kinds(instance), fluid_rows(instance)
    mixed = prefill = decode = 0
    for k, n in counts.items():
        r, role = rs[k], ks[k].role
        if (role != DECODE and r.prefill[0] is None) or (role != PREFILL and r.decode[0] is None):
            continue
        most = min(
            n * (cap * permille // 1000) // coef[0]
            for coef, cap in (
                (r.prefill, r.prefill_cap),
                (r.busy, r.busy_cap),
                (r.decode, r.decode_cap),
                (r.kv, r.kv_cap),
            )
            if coef[0] is not None
        )
        if role == MIXED:
            mixed += most
        elif role == PREFILL:
            prefill += most
        else:
            decode += most
    return min(instance.class_rates_milli[0], mixed + min(prefill, decode))


def _brute(instance) -> dict[str, float]:
    """Every count of every kind within the GPUs (one class): with a budget the most goodput,
    then the least peak load (the least thousandths at which the configuration still carries
    that goodput, by bisection on :func:`_carries`), then the least cost; without, the least
    cost carrying every request."""
    ks = kinds(instance)
    ub = [
        instance.gpu_types[instance.gpu_index[instance.profiles[k.profile].gpu_type]].count
        // instance.profiles[k.profile].tensor_parallel
        for k in ks
    ]
    configs = []
    for counts in itertools.product(*[range(u + 1) for u in ub]):
        chosen = {k: n for k, n in enumerate(counts) if n}
        if gpus_fit(instance, chosen):
            configs.append(chosen)
    cost = {id(c): counts_cost_milli(instance, c) / 1000 for c in configs}
    if not instance.maximise_goodput:
        need = instance.class_rates_milli[0]
        return {
            "cost_per_hour": min(
                cost[id(c)] for c in configs if _carries(instance, c, 1000) >= need
            )
        }
    goodput = max(_carries(instance, c, 1000) for c in configs)
    best = None
    for c in configs:
        if _carries(instance, c, 1000) < goodput:
            continue
        lo, hi = 0, 1000
        while lo < hi:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if _carries(instance, c, mid) >= goodput else (mid + 1, hi)
        key = (hi, cost[id(c)])
        best = key if best is None or key < best else best
    assert best is not None
    return {"goodput_per_s": goodput / 1000, "peak_load": best[0] / 1000, "cost_per_hour": best[1]}


@pytest.mark.parametrize("case", optima.cases("serving"), ids=lambda c: c.name)
def test_the_known_optima_are_what_enumeration_finds(case) -> None:
    instance = case.instance()
    assert len(instance.classes) == 1
    assert _brute(instance) == case.optimum


# --- the peak-load tier ---------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["milp", "cpsat"])
@pytest.mark.parametrize(("rate", "seed"), [(0.5, 0), (2.0, 1), (6.0, 2), (40.0, 3)])
def test_the_peak_load_tier_is_what_enumeration_finds(rate: float, seed: int, backend: str) -> None:
    """One class on 16 A100s and 8 H100s under a 16-GPU budget, from light (everything served:
    the goodput is tied) to overloaded: every tier proved and equal to enumeration's."""
    instance = generate(1, rate, 16, h100=8, budget=16, seed=seed)
    result = solve(instance, SolveOptions(time_limit_s=20, backend=backend, threads=1))
    assert result.status == SolutionStatus.OPTIMAL, result.message
    assert "optimal for the fluid model" in result.message
    assert result.objective_terms == _brute(instance)


@pytest.mark.parametrize(
    ("name", "peak", "one_probe"),
    [("one_class_budget", 1.0, True), ("one_class_budget_light", 0.236, False)],
)
def test_the_bisection_proves_the_peak_load_driven_directly(
    name: str, peak: float, one_probe: bool
) -> None:
    """The MILP encoding alone: at capacity the first probe (just below the plan's peak)
    proves the peak at once; at a light load the bisection takes more probes; either way
    the proved tier is the checker's value of the proved plan."""
    instance = optima.instance("serving", name)
    encoding = MilpEncoding()
    ctx = ExactContext(instance, SolveOptions(time_limit_s=20, threads=1), backend="milp")
    outcome = encoding.solve(instance, ctx)
    assert outcome.proven_optimal, outcome.message
    assert outcome.tier_bounds["peak_load"] == peak
    assert check(instance, outcome.proven_solution).terms["peak_load"] == peak
    assert (encoding.last_stats["headroom_probes"] == 1) is one_probe
    assert not ctx.rejected


class _ProbesTimeOut(MilpEncoding):
    """The MILP encoding whose runs after the goodput tier stop at the time limit without a
    solution (a probe that runs out of time)."""

    def _run(self, backend, sense, objective, hint, share, ctx):
        if getattr(self, "_tier1_done", False):
            return BackendRun(RunStatus.NO_SOLUTION, StopReason.TIME_LIMIT), None
        self._tier1_done = True
        return super()._run(backend, sense, objective, hint, share, ctx)


def test_a_probe_that_runs_out_of_time_leaves_the_peak_load_unproved() -> None:
    instance = optima.instance("serving", "one_class_budget_light")
    ctx = ExactContext(instance, SolveOptions(time_limit_s=20, threads=1), backend="milp")
    outcome = _ProbesTimeOut().solve(instance, ctx)
    assert not outcome.proven_optimal
    assert outcome.stop_reason == StopReason.TIME_LIMIT
    assert "goodput proved, peak load not proved (between 0.0 and " in outcome.message
    assert outcome.bound == 3.0
    assert outcome.tier_bounds == {"goodput_per_s": 3.0, "peak_load": 0.0}


def _light():
    return optima.instance("serving", "one_class_budget_light")


def test_a_budget_left_idle_ranks_below_the_plan_with_headroom() -> None:
    """The defect of issue 38's low-load run: with the goodput tied, the least-cost plan (one
    GPU of three) served everything; the checker now ranks it below the plan that spreads
    the load over the budget, and the solver returns that one even when started from it."""
    instance = _light()
    mixed = _kind(instance, MIXED)
    idle = route_fill(instance, {mixed: 1})
    cheap = check(instance, idle)
    assert cheap.feasible and cheap.terms["goodput_per_s"] == 3.0
    assert cheap.terms["cost_per_hour"] == 1.0
    result = solve(instance, SolveOptions(time_limit_s=10, threads=1))
    spread = check(instance, result.solution)
    assert spread.terms["goodput_per_s"] == cheap.terms["goodput_per_s"]
    assert spread.terms["peak_load"] < cheap.terms["peak_load"]
    assert spread.better_than(cheap) and not cheap.better_than(spread)
    started = solve(
        instance, SolveOptions(time_limit_s=10, threads=1), start=_start(instance, idle)
    )
    assert started.objective_terms == spread.terms


def _start(instance, solution):
    """The ``placement.v1.Solution`` of a typed solution (a warm start)."""
    msg = placement_pb2.Solution()
    msg.serving.CopyFrom(FAMILY.solution_to_message(instance, solution))
    return msg


def test_the_checker_computes_the_peak_load_by_hand() -> None:
    """One mixed deployment of two instances: the peak is the fullest row, per instance and
    rounded up to its integer unit, in thousandths rounded up."""
    instance = _light()
    mixed = _kind(instance, MIXED)
    rate = 1234
    plan = ServingSolution((Deployment(mixed, 2),), (Route(0, 0, rate),))
    r = fluid_rows(instance)[mixed]
    expected = max(
        -(-1000 * -(-rate * coef[0] // 2) // cap)
        for coef, cap in (
            (r.prefill, r.prefill_cap),
            (r.busy, r.busy_cap),
            (r.decode, r.decode_cap),
            (r.kv, r.kv_cap),
        )
    )
    report = check(instance, plan)
    assert report.feasible
    assert report.terms["peak_load"] == expected / 1000
    assert list(report.terms) == ["goodput_per_s", "peak_load", "cost_per_hour"]
    # The same rate on one instance: its rows twice as full.
    one = check(instance, ServingSolution((Deployment(mixed, 1),), (Route(0, 0, rate),)))
    assert one.terms["peak_load"] > report.terms["peak_load"]
    assert not one.better_than(report)


def test_a_plan_that_misses_the_proved_peak_load_is_not_called_optimal() -> None:
    """The encoding's proof of the peak load is what the checker computes of its plan; a plan
    with the optimum's goodput but a fuller row is worse than the proved bound."""
    instance = _light()
    result = solve(instance, SolveOptions(time_limit_s=10, threads=1))
    assert result.status == SolutionStatus.OPTIMAL
    best = check(instance, result.solution)
    worse = route_fill(instance, {_kind(instance, MIXED): 2})
    report = check(instance, worse)
    assert report.feasible
    assert report.terms["goodput_per_s"] == best.terms["goodput_per_s"]
    assert report.terms["peak_load"] > best.terms["peak_load"]
    assert report.score() < best.score()


def test_without_a_budget_the_tiers_are_the_cost_alone() -> None:
    instance = optima.instance("serving", "one_class_cost")
    assert not instance.maximise_goodput
    result = solve(instance, SolveOptions(time_limit_s=10, threads=1))
    assert result.status == SolutionStatus.OPTIMAL
    assert list(result.objective_terms) == ["cost_per_hour"]
    assert result.objective_terms == _brute(instance)


# --- the checker --------------------------------------------------------------------------


@pytest.fixture
def budget_instance():
    return generate(4, 6.0, 16, h100=8, budget=16, seed=3)


def test_the_checker_accepts_the_solver_and_rejects_broken_solutions(budget_instance) -> None:
    instance = budget_instance
    result = solve(instance, SolveOptions(time_limit_s=10))
    good = result.solution
    assert check(instance, good).feasible
    deployments, routes = good.deployments, good.routes
    broken = {
        "over the GPU count": ServingSolution(
            (Deployment(deployments[0].kind, 99), *deployments[1:]), routes
        ),
        "unknown kind": ServingSolution((Deployment(999, 1), *deployments[1:]), routes),
        "kind twice": ServingSolution((*deployments, deployments[0]), routes),
        "more than arrives": ServingSolution(
            deployments,
            (
                *routes,
                *(
                    Route(r.cls, r.deployment, 10 * instance.class_rates_milli[r.cls])
                    for r in routes[:1]
                ),
            ),
        ),
        "zero rate": ServingSolution(deployments, (Route(routes[0].cls, routes[0].deployment, 0),)),
    }
    for what, solution in broken.items():
        report = check(instance, solution)
        assert not report.feasible, what
        assert report.violations, what


def test_the_checker_rejects_an_unbalanced_split_and_an_overload() -> None:
    instance = generate(1, 50.0, 16, budget=16, seed=1)
    pre, dec = _kind(instance, PREFILL), _kind(instance, DECODE)
    rate = instance.class_rates_milli[0]
    deployments = (Deployment(pre, 1), Deployment(dec, 1))
    # Prefilled but not decoded.
    report = check(instance, ServingSolution(deployments, (Route(0, 0, 100),)))
    assert not report.feasible
    assert any("prefilled but" in v for v in report.violations)
    # Everything on one pair: beyond its SLO-feasible capacity.
    report = check(instance, ServingSolution(deployments, (Route(0, 0, rate), Route(0, 1, rate))))
    assert not report.feasible
    assert any("SLO-feasible capacity" in v for v in report.violations)


def test_the_budget_is_a_rule() -> None:
    instance = generate(2, 2.0, 16, budget=8, seed=2)
    mixed = _kind(instance, MIXED)
    report = check(instance, route_fill(instance, {mixed: 2}))
    assert not report.feasible
    assert any("over the budget of 8" in v for v in report.violations)


def test_without_a_budget_every_class_must_be_served() -> None:
    instance = generate(2, 2.0, 16, seed=2)
    assert not instance.maximise_goodput
    mixed = _kind(instance, MIXED)
    full = route_fill(instance, {mixed: 1})
    assert check(instance, full).feasible
    short = ServingSolution(full.deployments, full.routes[:-1])
    report = check(instance, short)
    assert not report.feasible
    assert any("every request is served" in v for v in report.violations)


# --- the exact model against the heuristics ------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("backend", ["milp", "cpsat"])
def test_the_exact_model_is_at_least_every_greedy(seed: int, backend: str) -> None:
    instance = generate(4, 8.0, 16, h100=8, budget=16, seed=seed)
    result = solve(instance, SolveOptions(time_limit_s=20, backend=backend, threads=1))
    assert result.solution is not None
    report = check(instance, result.solution)
    assert report.feasible
    for name, solution in FAMILY.greedy(instance, SolveOptions()):
        greedy = check(instance, solution)
        assert greedy.feasible, name
        assert report.score() >= greedy.score(), name
    if result.status == SolutionStatus.OPTIMAL:
        assert result.stop_reason == StopReason.PROVEN
        assert "fluid model" in result.message


def test_the_result_says_the_bound_is_the_fluid_models() -> None:
    instance = generate(3, 30.0, 16, budget=8, seed=4)
    result = solve(instance, SolveOptions(time_limit_s=20))
    assert result.status == SolutionStatus.OPTIMAL
    assert "fluid model" in result.message
    assert result.bound == pytest.approx(result.objective)


def test_without_enough_gpus_the_least_cost_model_is_proved_infeasible() -> None:
    instance = generate(2, 500.0, 8, seed=5)
    result = solve(instance, SolveOptions(time_limit_s=20))
    assert result.solution is None
    assert result.status == SolutionStatus.INFEASIBLE
    assert "fluid model" in result.message


# --- bad input ----------------------------------------------------------------------------


def _error(document: dict) -> InputError:
    with pytest.raises(InputError) as info:
        instance_from_document(document)
    return info.value


def test_a_negative_rate_is_refused_naming_the_field() -> None:
    document = _document(generate(2, 2.0, 8))
    document["serving"]["arrival_rate_per_s"] = -3.0
    err = _error(document)
    assert [e.path for e in err.errors] == ["serving.arrival_rate_per_s"]
    assert "req/s" in str(err)


def test_a_rare_class_is_planned_at_the_models_unit_at_least() -> None:
    """A class arriving at under 0.001 req/s (a rare length of a trace at a light load) is
    planned at 1 milli-request per second, not rounded away: the plan routes it, so our
    router admits its requests."""
    document = _document(generate(3, 0.5, 16, budget=16, seed=1))
    document["serving"]["classes"][0]["share"] = 1e-4
    instance = instance_from_document(document)
    assert instance.class_rates_milli[0] == 1
    result = solve(instance, SolveOptions(time_limit_s=10, threads=1))
    assert result.status == SolutionStatus.OPTIMAL
    assert any(r.cls == 0 for r in result.solution.routes)


def test_a_rate_under_the_models_unit_is_refused() -> None:
    document = _document(generate(2, 2.0, 8))
    document["serving"]["arrival_rate_per_s"] = 0.0004
    err = _error(document)
    assert [e.path for e in err.errors] == ["serving.arrival_rate_per_s"]
    assert "at least 0.001 requests per second" in str(err)


def test_a_profile_that_gets_faster_with_more_tokens_is_refused() -> None:
    document = _document(generate(2, 2.0, 8))
    points = document["serving"]["profiles"][0]["prefill"]
    points[2]["ms"] = points[1]["ms"] - 5.0
    err = _error(document)
    assert [e.path for e in err.errors] == ["serving.profiles[0].prefill[2].ms"]
    assert "5 ms short" in str(err)


def test_a_ttft_target_no_profile_meets_names_the_field_and_the_margin() -> None:
    instance = generate(2, 2.0, 8, h100=8, seed=1)
    document = _document(instance)
    longest = max(instance.classes, key=lambda c: c.input_tokens)
    best = min(p.prefill_ms(longest.input_tokens) for p in instance.profiles)
    document["serving"]["slo"]["ttft_ms"] = best - 10.0
    err = _error(document)
    assert [e.path for e in err.errors] == ["serving.slo.ttft_ms"]
    assert f"at least {best:.3f} ms" in str(err)
    assert "10.000 ms short" in str(err)


def test_a_tpot_target_no_profile_meets_names_the_field() -> None:
    document = _document(generate(2, 2.0, 8))
    document["serving"]["slo"]["tpot_ms"] = 5.0
    err = _error(document)
    assert [e.path for e in err.errors] == ["serving.slo.tpot_ms"]
    assert "ms short" in str(err)


def test_weights_that_do_not_fit_are_refused() -> None:
    document = _document(generate(2, 2.0, 8))
    document["serving"]["profiles"][0]["weights_bytes"] = 10**13
    err = _error(document)
    assert [e.path for e in err.errors] == ["serving.profiles[0].weights_bytes"]


def test_the_cli_exits_2_on_a_bad_instance(tmp_path: Path) -> None:
    document = _document(generate(2, 2.0, 8))
    document["serving"]["arrival_rate_per_s"] = -1
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"name": "bad", **document}))
    run = subprocess.run(
        [sys.executable, "-m", "placement.api.cli", "solve", str(path)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 2
    assert "serving.arrival_rate_per_s" in run.stderr


def test_plot_draws_the_bundled_configuration_and_its_replayed_latencies(tmp_path: Path) -> None:
    """``placement solve`` then ``placement plot`` on the bundled Azure instance: a PNG with
    the configuration and the TTFT / TPOT / end-to-end CDFs of a simulator replay."""
    cli = [sys.executable, "-m", "placement.api.cli"]
    instance = REPO / "instances" / "serving" / "azure-conv-16gpu.json"
    solution, png = tmp_path / "s.json", tmp_path / "s.png"
    for args in (
        ["solve", str(instance), "--time-limit", "5", "--threads", "1", "--out", str(solution)],
        ["plot", str(instance), str(solution), "--out", str(png)],
    ):
        run = subprocess.run([*cli, *args], capture_output=True, text=True)
        assert run.returncode == 0, run.stderr[-2000:]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000


# --- profiles, the importer, the warm start ------------------------------------------------


def test_the_measured_profiles_keep_the_measured_points_and_fit_the_decode_line() -> None:
    for gpu, data in SPLITWISE_MEASURED.items():
        p = splitwise_profile(gpu)
        assert dict(p.prefill) == data["prompt_ms"]
        for batch, ms in data["token_ms"].items():
            # A least-squares line through the measured steps stays within 15 % of each.
            assert abs(p.decode_step_ms(batch, 0) - ms) < 0.15 * ms, (gpu, batch)
        assert "measured" in p.source


@pytest.mark.skipif(not CONV.exists(), reason=f"shared trace absent: {CONV}")
def test_the_azure_conversation_trace_reads_as_published() -> None:
    requests = read_trace(CONV)
    assert len(requests) == 19366
    assert requests[0].arrival_s == 0
    assert all(a.arrival_s <= b.arrival_s for a, b in itertools.pairwise(requests))
    classes = length_classes(requests)
    assert sum(c.share for c in classes) == 19366
    instance = trace_instance(CONV, a100=16, budget=16)
    assert instance.arrival_rate_per_s == pytest.approx(5.53, abs=0.01)


@pytest.mark.skipif(not CODE.exists(), reason=f"shared trace absent: {CODE}")
def test_the_azure_code_trace_imports_through_the_cli(tmp_path: Path) -> None:
    out = tmp_path / "code.json"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "placement.api.cli",
            "import",
            "azure-llm",
            str(CODE),
            "--a100",
            "16",
            "--budget",
            "16",
            "--out",
            str(out),
        ],  # fmt: skip
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    instance = instance_from_document(json.loads(out.read_text()))
    assert instance.arrival_rate_per_s == pytest.approx(2.57, abs=0.01)


def test_a_malformed_trace_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.97,12,x\n")
    with pytest.raises(InputError) as info:
        read_trace(path)
    assert "line 2" in str(info.value)


def test_a_warm_start_drops_kinds_that_are_gone(budget_instance) -> None:
    instance = budget_instance
    result = solve(instance, SolveOptions(time_limit_s=10))
    msg = FAMILY.solution_to_message(instance, result.solution)
    fewer = copy.deepcopy(instance)
    fewer.profiles = [p for p in instance.profiles if p.gpu_type == "a100"]
    fewer.__dict__.pop("_fluid_rows", None)
    adapted = FAMILY.adapt_start(fewer, msg)
    assert adapted.solution is not None
    assert check(fewer, adapted.solution).feasible
    gone = [d.name for d in msg.deployments if d.gpu_type == "h100"]
    assert {name for name, _ in adapted.dropped} == set(gone)


def test_unserved_classes_are_explained() -> None:
    instance = generate(4, 200.0, 8, budget=8, seed=6)
    result = solve(instance, SolveOptions(time_limit_s=10))
    assert result.solution is not None
    reasons = FAMILY.explain_unplaced(instance, result.solution)
    served = {r.cls for r in result.solution.routes}
    assert reasons
    assert {r["name"] for r in reasons} >= {
        c.name for i, c in enumerate(instance.classes) if i not in served
    }
    assert all(r["kind"] in ("capacity", "no_kind") and r["unserved_per_s"] > 0 for r in reasons)


def test_measured_profiles_need_eight_gpus_of_a_type() -> None:
    with pytest.raises(InputError) as info:
        generate(2, 2.0, 4)
    assert "need 8 GPUs" in str(info.value)
