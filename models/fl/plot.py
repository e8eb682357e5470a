"""Draw an assignment: per job, its round time in every round, and the devices'
participation."""

from __future__ import annotations

from placement.models.fl.check import participation, round_times_us
from placement.models.fl.instance import FlInstance, FlSolution
from placement.models.fl.timing import US_PER_S


def draw(instance: FlInstance, solution: FlSolution, out_path: str) -> None:
    """Write an image of ``solution`` (format from the suffix of ``out_path``): each job's
    round time (s) by round, and the histogram of the devices' rounds served."""
    # matplotlib with pyplot loads in 1-2 s: only when a drawing is asked for
    import matplotlib

    matplotlib.use("Agg")
    # pyplot after the Agg backend is chosen (no display needed)
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    per = round_times_us(instance, solution)
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(7, 6))
    for j, job in enumerate(instance.jobs):
        xs = [r for r in range(len(per)) if per[r][j]]
        ax.plot(xs, [per[r][j] / US_PER_S for r in xs], marker=".", label=job.name)
    ax.set_xlabel("round")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("round time (s)")
    ax.legend(fontsize=7)
    ax.set_title(
        f"{instance.name or 'fl'}: {len(instance.jobs)} jobs, {len(instance.devices)} devices"
    )
    counts = participation(instance, solution)
    ax2.hist(counts, bins=range(int(counts.max(initial=0)) + 2), align="left", rwidth=0.8)
    ax2.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax2.set_xlabel("rounds served by a device")
    ax2.set_ylabel("devices")
    fig.tight_layout()
    fig.savefig(out_path)
    plt.close(fig)
