"""The Alibaba openb trace (Weng et al., USENIX ATC 2023) and the FGD paper's replay protocol.

Pods arrive one at a time on a cluster that never frees anything; schedulers are compared
by the GPU allocation ratio against the arrived demand. Nothing here uses the exact GPU
model (the MILP / CP-SAT encodings of the family).

The trace's CSV files are read by :mod:`placement.models.gpu.formats.openb`, the paper's six
peer policies are :mod:`placement.models.gpu.peers.fgd`. Parts: :mod:`.replay` (the static
:class:`~.replay.TraceCluster`, the pods, the mutable :class:`~.replay.TraceState`, the
workload and the online replay), :mod:`.online` (our online policy: FGD with a best-fit
tie-break), :mod:`.batch` (batch mode: every B arrivals the pending pods placed jointly by
CP-SAT), :mod:`.offline_bound` (an LP upper bound on what any policy can allocate),
:mod:`.config_bound` (the stronger configuration-LP bound, with a checked witness packing),
:mod:`.defrag` (the replay with migration cycles), :mod:`.defrag_cycle` (one cycle: its
CP-SAT model, its check, a cycle within a wall-time budget), :mod:`.defrag_bound` (bounds on
what any consolidation could gain), :mod:`.budget_curve` (the best placement reachable from an
end state with at most K migrations), :mod:`.budget_round` (its integer witness by a
pod-level rounding of the master LP), :mod:`.repack` (the replay with re-packing cycles within
a migration budget), :mod:`.departures` (replays where pods also leave), :mod:`.variants` (the
FGD paper's trace variants, built from the default trace).
"""
