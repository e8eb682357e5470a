"""Other routing algorithms the entanglement family is measured against: :mod:`.reps` (REPS's
LP rounding, Zhao and Qiao, INFOCOM 2021) over its provisioning LP :mod:`.reps_lp`. (Q-CAST's
greedy is the family's fallback, in :mod:`placement.models.entanglement.greedy`.)
"""
