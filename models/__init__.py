"""Problem families. Each subpackage (``placement.models.<family>``) exposes ``FAMILY``,
an object implementing :class:`placement.solver.family.Family`: instance parsing and
validation, greedy heuristics, CP-SAT and MILP encodings, an independent checker, a seeded
generator and loaders for public formats."""
