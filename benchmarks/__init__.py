"""Benchmarks of the placement solver, installed as ``placement.benchmarks``.

One package per family (``gpu``, ``dag``, ``entanglement``, ``partition``) and one for the
gRPC service (``service``): each declares its ``SUITES`` in its ``__init__`` beside the code
that runs them. :mod:`.runner` is the one runner ``placement bench`` uses; it finds the suites
by listing these packages. ``reliability/`` holds the CI's fuzzing, overload, fault and audit
scripts (run from a checkout, not shipped in the wheel). Benchmarks sit on top of the library:
they may import ``placement.api``; nothing below imports them.
"""
