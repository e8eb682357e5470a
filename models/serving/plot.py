"""Draw a configuration and what it serves: per deployment its instances with the fluid
model's loads, and below, the time-to-first-token, time-per-output-token and end-to-end
latency distributions of a simulator replay (:mod:`.replay`) of ``PLOT_REQUESTS`` Poisson
requests at the instance's rate through the configuration with its router."""

from __future__ import annotations

from typing import Any

from placement.models.serving.check import deployment_loads
from placement.models.serving.fluid import rows
from placement.models.serving.instance import ServingInstance, ServingSolution, kinds
from placement.models.serving.replay import Replay, poisson_requests, simulate

PLOT_REQUESTS = 2000
"""Requests the drawing's replay draws (seed 0)."""


def draw(instance: ServingInstance, solution: ServingSolution, out_path: str) -> None:
    """Write an image of ``solution`` (format from the suffix of ``out_path``): per
    deployment its instances, labelled with its prefill and decode loads; under it the
    latency CDFs of a replay (module docstring), rejected requests counted as never served."""
    # matplotlib with pyplot loads in 1-2 s: only when a drawing is asked for
    import matplotlib

    matplotlib.use("Agg")
    # pyplot after the Agg backend is chosen (no display needed)
    import matplotlib.pyplot as plt

    ks = kinds(instance)
    rs = rows(instance)
    loads = deployment_loads(instance, solution)
    fig = plt.figure(figsize=(max(10.0, 0.6 * len(solution.deployments) + 3), 7.5))
    grid = fig.add_gridspec(2, 3, height_ratios=[0.8, 1])
    ax = fig.add_subplot(grid[0, :])
    names = [ks[d.kind].name for d in solution.deployments]
    xs = list(range(len(names)))
    ax.bar(xs, [d.instances for d in solution.deployments])
    ax.set_xticks(xs, names, rotation=60, fontsize=6, ha="right")
    ax.set_ylabel("instances")
    for i, (d, load) in enumerate(zip(solution.deployments, loads, strict=True)):
        row = rs[d.kind]
        shown = [
            load.prefill / (d.instances * row.prefill_cap) if row.prefill_cap else 0,
            load.decode / (d.instances * row.decode_cap) if row.decode_cap else 0,
        ]
        ax.text(
            i,
            d.instances,
            " / ".join(f"{100 * s:.0f}%" for s in shown),
            ha="center",
            fontsize=6,
            va="bottom",
        )
    ax.set_title(f"{instance.name or 'serving'} (prefill / decode load, fluid model)", fontsize=8)
    replayed = simulate(instance, solution, poisson_requests(instance, PLOT_REQUESTS, seed=0))
    slo = instance.slo
    for col, (key, label, target) in enumerate(
        (
            ("ttft_ms", "TTFT (ms)", slo.ttft_ms),
            ("tpot_ms", "TPOT (ms)", slo.tpot_ms),
            ("e2e_ms", "end-to-end (ms)", None),
        )
    ):
        _cdf(fig.add_subplot(grid[1, col]), replayed, key, label, target)
    fig.suptitle(
        f"simulated replay: {PLOT_REQUESTS} Poisson requests at "
        f"{instance.arrival_rate_per_s:g} req/s (seed 0), goodput "
        f"{replayed.goodput_per_s:.3g} req/s, {len(replayed.rejected)} rejected",
        fontsize=8,
        y=0.02,
        va="bottom",
    )
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(out_path)
    plt.close(fig)


def _cdf(ax: Any, replayed: Replay, key: str, label: str, target: float | None) -> None:
    """One latency CDF over every request (a rejected one never reaches 1)."""
    values = sorted(
        getattr(s, key) for s in replayed.served if key != "tpot_ms" or s.output_tokens > 1
    )
    total = len(replayed.served) + len(replayed.rejected)
    if values:
        ax.step(values, [(i + 1) / total for i in range(len(values))], where="post")
        if min(values) > 0:
            ax.set_xscale("log")
            ax.tick_params(axis="x", which="minor", labelbottom=False)
    ax.tick_params(labelsize=7)
    if target is not None:
        ax.axvline(target, color="grey", lw=0.8, ls="--")
    ax.set_xlabel(label, fontsize=8)
    ax.set_ylabel("share of requests", fontsize=8)
