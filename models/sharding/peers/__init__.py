"""Other systems' sharding algorithms, scored by the family's checker: TorchRec's planner
as it ships (:mod:`.torchrec_planner`, an optional extra) and the size- and lookup-balanced
greedy placements (:mod:`.balanced`)."""
