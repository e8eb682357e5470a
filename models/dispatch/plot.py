"""Draw a dispatch schedule: one lane per server, each job a bar from start to end (height:
its share of the server's cores), its wait as a thin line from arrival; below it, the jobs in
system (waiting or running) over time and each job's response time at its arrival."""

from __future__ import annotations

from placement.models.dispatch.instance import DispatchInstance, DispatchSolution


def draw(instance: DispatchInstance, solution: DispatchSolution, out_path: str) -> None:
    """Write a Gantt chart of ``solution`` (format from the suffix of ``out_path``)."""
    # matplotlib with pyplot loads in 1-2 s: only when a drawing is asked for
    import matplotlib

    matplotlib.use("Agg")
    # pyplot after the Agg backend is chosen (no display needed)
    import matplotlib.pyplot as plt

    m = len(instance.servers)
    fig, (ax, low) = plt.subplots(
        2,
        1,
        figsize=(9, max(2.5, 0.6 * m + 1) + 2.5),
        sharex=True,
        gridspec_kw={"height_ratios": [max(2.5, 0.6 * m + 1), 2.5]},
    )
    offset = [0] * m  # cores stacked so far in each lane (integers: no float drift)
    for j in instance.order:
        s = solution.server_of[j]
        if not 0 <= s < m:
            continue
        job, server = instance.jobs[j], instance.servers[s]
        start, end = solution.start[j], solution.start[j] + instance.service[j][s]
        h = 0.8 * job.cores / server.cores
        y = s - 0.4 + 0.8 * (offset[s] % server.cores) / server.cores
        offset[s] += job.cores
        ax.broken_barh([(start, end - start)], (y, h), edgecolor="black", linewidth=0.3)
        if start > job.arrival:
            ax.plot([job.arrival, start], [y + h / 2] * 2, color="grey", lw=0.6)
    ax.set_yticks(range(m), [s.name for s in instance.servers])
    events: list[tuple[int, int]] = []
    arrivals, responses = [], []
    for j, s in enumerate(solution.server_of):
        if not 0 <= s < m or j >= len(solution.start):
            continue
        end = solution.start[j] + instance.service[j][s]
        events += [(instance.jobs[j].arrival, 1), (end, -1)]
        arrivals.append(instance.jobs[j].arrival)
        responses.append(end - instance.jobs[j].arrival)
    events.sort(key=lambda e: (e[0], e[1]))  # at a tie, a job that ends leaves first
    times, counts, n = [], [], 0
    for t, d in events:
        n += d
        times.append(t)
        counts.append(n)
    low.step(times, counts, where="post", color="tab:blue", lw=0.8, label="jobs in system")
    low.set_ylabel("jobs in system")
    right = low.twinx()
    right.scatter(arrivals, responses, s=3, color="tab:orange", label="response time")
    right.set_ylabel("response time")
    low.set_xlabel("time")
    ax.set_title(f"{instance.name or 'dispatch'}: {len(instance.jobs)} jobs on {m} servers")
    fig.tight_layout()
    fig.savefig(out_path)
    plt.close(fig)
