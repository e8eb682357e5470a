"""``placement bench gpu-openb``: the FGD paper's protocol on the Alibaba openb trace.

The six peers (reproduced), our online, batch and defragmenting modes, the offline LP bound;
the trace with departures (:mod:`placement.models.gpu.sim.openb.departures`); the latency of one
defragmentation cycle on the whole cluster. Every policy of
:mod:`placement.models.gpu.peers.fgd` and our online policy
(:mod:`placement.models.gpu.sim.openb.online`) replay the seeds' workloads (the paper's 42-51)
with :func:`placement.models.gpu.sim.openb.replay.replay`; our batch mode (B pending pods per
cycle, CP-SAT per cycle) with :func:`~placement.models.gpu.sim.openb.batch.replay_batch`; the
offline LP bound (:mod:`placement.models.gpu.sim.openb.offline_bound`) on the same workloads;
on the default trace and on the all-fractional ``gpushare100`` variant, against the
published means (``fgd_published_allocation.csv`` beside the trace). Every replay's
placements, online and batch, are re-checked from scratch against the cluster's capacities
(:func:`placement.models.gpu.sim.openb.batch.check_placement`).

One module per experiment, and what they share:

* :mod:`.suite`: the suite's cases (``--trace``, ``--seeds``, ``--modes``), the run of one
  case and the report that puts the experiments together;
* :mod:`.replays`: one replay of a seed's workload (:func:`~.replays.run_case`);
* :mod:`.peers`: the six peers against the published figures, and the ablation;
* :mod:`.modes`: ours (online, batch) against FGD and the offline bound;
* :mod:`.bounds`: the configuration LP bound and the never-refusing bound;
* :mod:`.defragmentation`: unallocated GPUs against the share of pods migrated;
* :mod:`.curve`: the end-state curve of a migration budget;
* :mod:`.repacking`: online re-packing within a migration budget, its settings and table;
* :mod:`.departures`: the trace with departures;
* :mod:`.variants`: the FGD paper's trace variants (``--trace variant:NAME``), paired with FGD;
* :mod:`.latency`: the latency of one cycle on the whole cluster;
* :mod:`.shared`: the traces, their loading and the targets.
"""
