"""Other systems' device-selection policies, scored by the family's checker: FedACT's
alignment-score greedy with participation fairness (:mod:`.fedact`) and FedAvg's random
selection (:mod:`.random_selection`)."""
