"""Other systems' GPU placement algorithms, written from their papers and sources: the peers
the GPU family is measured against.

:mod:`.kueue_tas` (Kueue's Topology Aware Scheduling), :mod:`.kai` (KAI-Scheduler),
:mod:`.volcano` (Volcano's network-topology-aware plugin), :mod:`.lyra` (Lyra's reclaim
greedy), :mod:`.fgd` (the six policies of the FGD paper's openb replay).
"""
