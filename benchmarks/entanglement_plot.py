"""Plot the entanglement sweeps from their CSVs: mean EXT (and simulated delivery) of
Q-CAST's greedy, REPS-style rounding and ours against n and against p.

    python benchmarks/entanglement_plot.py   # after the sweep-n and sweep-p runs

Writes docs/benchmarks/entanglement-sweeps.png.
"""

from __future__ import annotations

import csv
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT_DIR = REPO / "docs" / "benchmarks"
METHODS = (("qcast", "Q-CAST greedy"), ("reps", "REPS-style rounding"), ("ours", "ours (MILP)"))


def _means(path: Path, key: str) -> dict[str, list[tuple[float, float, float]]]:
    rows = list(csv.DictReader(path.open()))
    xs = sorted({float(r[key]) for r in rows})
    out: dict[str, list[tuple[float, float, float]]] = {m: [] for m, _ in METHODS}
    for x in xs:
        group = [r for r in rows if float(r[key]) == x]
        for m, _ in METHODS:
            ext = statistics.mean(float(r[f"{m}_ext"]) for r in group)
            sim = statistics.mean(float(r[f"{m}_sim"]) for r in group)
            out[m].append((x, ext, sim))
    return out


def main() -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [
        ("entanglement-sweep-n.csv", "nodes", "n (p = 0.6)"),
        ("entanglement-sweep-p.csv", "success", "mean link success p (n = 100)"),
    ]
    panels = [(OUT_DIR / f, k, label) for f, k, label in panels if (OUT_DIR / f).exists()]
    if not panels:
        print("no sweep CSVs found", file=sys.stderr)
        return 2
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4.5), squeeze=False)
    for ax, (path, key, label) in zip(axes[0], panels, strict=True):
        for m, name in METHODS:
            points = _means(path, key)[m]
            xs = [p[0] for p in points]
            line = ax.plot(xs, [p[1] for p in points], marker="o", label=f"{name}: EXT")[0]
            ax.plot(
                xs,
                [p[2] for p in points],
                ls="--",
                marker="x",
                color=line.get_color(),
                label=f"{name}: simulated",
            )
        ax.set_xlabel(label)
        ax.set_ylabel("pairs per slot (10 S-D pairs, mean over topologies)")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    out = OUT_DIR / "entanglement-sweeps.png"
    fig.savefig(out, dpi=120)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
