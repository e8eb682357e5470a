"""Other partitioners the partition family is measured against: :mod:`.pipedream` (PipeDream's
planner as Tarnawski et al. ran it). (The Petals-style and PipeDream-style greedies that also
serve as the fallback live in :mod:`placement.models.partition.greedy`.)
"""
