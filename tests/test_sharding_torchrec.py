"""Our cost model means what TorchRec's does: every shard of every sharding option TorchRec
enumerates gets the same cost (to 1e-9) and the same HBM (to the byte) from
:mod:`placement.models.sharding.cost_model`; TorchRec's own plan passes our checker, and ours
is no worse. Skipped without the optional extra ``sharding-peers`` (torchrec on CPU)."""

from __future__ import annotations

import pytest

from placement.models.sharding import FAMILY, generate
from placement.models.sharding.check import check
from placement.models.sharding.cost_model import shard_hbm, shard_perf
from placement.models.sharding.peers import torchrec_planner
from placement.solver import SolveOptions, solve

pytestmark = pytest.mark.skipif(
    not torchrec_planner.available(),
    reason="torchrec is not installed (optional extra sharding-peers; see pyproject.toml)",
)


@pytest.mark.parametrize(
    ("tables", "devices", "hosts", "dims"),
    [(6, 4, 2, (64, 128, 256)), (5, 4, 1, (32, 96, 256)), (4, 8, 4, (128,))],
)
def test_every_shard_costs_what_torchrec_estimates(
    tables: int, devices: int, hosts: int, dims: tuple[int, ...]
) -> None:
    inst = generate(tables, devices, hosts=hosts, seed=tables, dims=dims)
    rows = torchrec_planner.estimate(inst)
    kinds = {r["type"] for r in rows}
    assert {"table_wise", "row_wise", "data_parallel"} <= kinds, kinds
    for r in rows:
        table = inst.tables[inst.table_index[r["table"]]]
        perf = shard_perf(inst, table, r["type"], r["cols"], r["rank"] or 0)
        assert perf.total_ms == pytest.approx(r["perf_ms"], rel=1e-9), r
        assert perf.fwd_comms + perf.bwd_comms == pytest.approx(r["comms_ms"], rel=1e-9), r
        assert shard_hbm(inst, table, r["type"], r["rows"], r["cols"]) == r["hbm_bytes"], r


def test_torchrecs_plan_passes_our_checker_and_ours_is_no_worse() -> None:
    inst = generate(16, 4, hosts=2, seed=5)
    theirs = torchrec_planner.plan(inst)
    assert theirs.solution is not None, theirs.error
    report = check(inst, theirs.solution)
    assert report.feasible, report.violations
    ours = solve(inst, SolveOptions(time_limit_s=20, threads=1))
    assert ours.solution is not None
    assert FAMILY.check(inst, ours.solution).score() >= report.score()
