"""Draw a partition: per core, its three utilisation sums and its EDF-VD slack (under
AMC-rtb: its verdict)."""

from __future__ import annotations

from placement.models.mc.check import core_tests
from placement.models.mc.instance import AMC_RTB, McInstance, McSolution


def draw(instance: McInstance, solution: McSolution, out_path: str) -> None:
    """Write an image of ``solution`` (format from the suffix of ``out_path``): for each core,
    bars of U_LO^LO, U_HI^LO and U_HI^HI, and its slack."""
    # matplotlib with pyplot loads in 1-2 s: only when a drawing is asked for
    import matplotlib

    matplotlib.use("Agg")
    # pyplot after the Agg backend is chosen (no display needed)
    import matplotlib.pyplot as plt

    tests = core_tests(instance, solution)
    xs = range(len(tests))
    fig, ax = plt.subplots(figsize=(max(4.0, 0.9 * len(tests) + 2), 3.5))
    width = 0.27
    ax.bar([x - width for x in xs], [float(t.lo) for t in tests], width, label="U_LO^LO")
    ax.bar(list(xs), [float(t.hi_lo) for t in tests], width, label="U_HI^LO")
    ax.bar([x + width for x in xs], [float(t.hi_hi) for t in tests], width, label="U_HI^HI")
    for x, t in zip(xs, tests, strict=True):
        # Under AMC-rtb EDF-VD's slack means nothing: the verdict instead.
        label = f"slack {float(t.slack):.3f}"
        if instance.test == AMC_RTB:
            label = "AMC-rtb passes" if t.passes else "fails"
        ax.annotate(label, (x, 1.02), ha="center", fontsize=7)
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_xticks(list(xs), [t.core for t in tests], rotation=45, ha="right")
    ax.set_ylim(0, 1.15)
    ax.set_ylabel("utilisation")
    dropped = sum(1 for c in solution.core_of if c == -1)
    ax.set_title(f"{instance.name or 'mc'}: {len(instance.tasks)} tasks, {dropped} dropped")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(out_path)
    plt.close(fig)
