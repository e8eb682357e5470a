"""Every family's plot, drawn from a real solve to a real PNG file, with assertions on what the
picture says (legend entries, labels, titles), not on its pixels. (``placement plot`` on a GPU
solution through the command line is one of docs/cli.md's tested examples.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placement.api.files import read_instance
from placement.models.dag.generate import random_dag
from placement.solver import SolveOptions, solve
from placement.solver.family import get_family

matplotlib = pytest.importorskip("matplotlib")

REPO = Path(__file__).resolve().parent.parent
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _solved(path: Path, time_limit_s: float = 5.0, backend: str = "auto"):
    instance = read_instance(path).instance
    result = solve(instance, SolveOptions(time_limit_s=time_limit_s, backend=backend))
    assert result.has_solution
    return instance, result.solution


def _texts(fig) -> list[str]:
    """Every text of the figure: titles, axis labels, annotations, legend titles and entries."""
    return [t.get_text() for t in fig.findobj(matplotlib.text.Text)]


def _legend_entries(fig) -> list[str]:
    return [
        t.get_text()
        for ax in fig.axes
        for artist in [ax.get_legend(), *ax.artists]
        if isinstance(artist, matplotlib.legend.Legend)
        for t in [artist.get_title(), *artist.get_texts()]
    ]


def _is_png(path: Path) -> None:
    assert path.read_bytes()[:8] == PNG_MAGIC
    assert path.stat().st_size > 10_000


def test_gpu_plot_names_jobs_shares_and_unplaced(tmp_path):
    instance, solution = _solved(REPO / "instances/gpu/tiny.json")
    out = tmp_path / "gpu.png"
    fig = get_family("gpu").plot(instance, solution, str(out))
    _is_png(out)
    legend = "\n".join(_legend_entries(fig))
    for job in ("gang", "train", "infer"):
        assert f"{job} (" in legend
    assert "running work" in legend
    assert "unplaced jobs (1)" in legend
    assert "big: 1 x 8 x any GPU [infeasible_alone]" in legend
    texts = _texts(fig)
    assert "rack-0" in texts and "n0" in texts and "n1" in texts
    # infer holds 300 milli-GPU: a share 0.3 of a GPU cell's height (0.9) is drawn.
    shares = [
        round(float(path.get_extents().height), 3)
        for ax in fig.axes
        for c in ax.collections
        for path in c.get_paths()
    ]
    assert round(0.3 * 0.9, 3) in shares


def test_entanglement_plot_legend_endpoints_and_unserved(tmp_path):
    data = json.loads((REPO / "instances/entanglement/tiny.json").read_text())
    requests = data["entanglement"]["requests"]
    # A fidelity no path reaches (every link gives 0.9): the request stays unserved, and the
    # plot must say so.
    for link in data["entanglement"]["links"]:
        link["fidelity"] = 0.9
    requests[0]["min_fidelity"] = 0.95
    inst_path = tmp_path / "unserved.json"
    inst_path.write_text(json.dumps(data))
    instance, solution = _solved(inst_path, time_limit_s=1.0)
    out = tmp_path / "ent.png"
    fig = get_family("entanglement").plot(instance, solution, str(out))
    _is_png(out)
    legend = _legend_entries(fig)
    first = requests[0]
    assert any(
        t.startswith(f"{first['name']}: {first['source']} -> {first['destination']}, UNSERVED")
        for t in legend
    ), legend
    for req in requests[1:]:
        assert any(t.startswith(f"{req['name']}: ") and "served" in t for t in legend)
    assert "source" in legend and "destination" in legend
    texts = _texts(fig)
    for req in requests:
        assert req["source"] in texts and req["destination"] in texts


def test_gantt_at_80_tasks_names_tasks_distinct_colours_arrows_on_rows(tmp_path):
    instance = random_dag(80, 6, seed=3)
    result = solve(instance, SolveOptions(time_limit_s=5.0, backend="greedy"))
    out = tmp_path / "gantt.png"
    fig = get_family("dag").plot(instance, result.solution, str(out))
    _is_png(out)
    ax = fig.axes[0]
    names = {t.name for t in instance.tasks}
    shown = [t.get_text() for t in ax.texts if t.get_text() in names]
    assert len(shown) >= len(names) // 2
    bars = [p for p in ax.patches if isinstance(p, matplotlib.patches.Rectangle)]
    assert len(bars) == len(names)
    assert len({tuple(round(c, 3) for c in b.get_facecolor()) for b in bars}) == len(names)
    # Each transfer arrow starts on its parent's bar and ends on its child's bar's row.
    centre = {b.get_gid(): b.get_y() + b.get_height() / 2 for b in bars}
    arrows = [a for a in ax.texts if isinstance(a, matplotlib.text.Annotation)]
    assert arrows
    for a in arrows:
        parent, child = a.get_gid().split("->")
        assert a.xy[1] == pytest.approx(centre[child])
        assert a.xyann[1] == pytest.approx(centre[parent])


def test_partition_title_has_the_objective(tmp_path):
    instance, solution = _solved(REPO / "instances/partition/tiny-chain.json")
    out = tmp_path / "partition.png"
    fig = get_family("partition").plot(instance, solution, str(out))
    _is_png(out)
    report = get_family("partition").check(instance, solution)
    name, value = next(iter(report.terms.items()))
    title = fig.axes[0].get_title()
    assert f"{name} {value:.4g}" in title
