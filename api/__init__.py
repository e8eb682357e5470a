"""The top of the house: what people and programs use to run the solver.

- :mod:`.cli`: the ``placement`` command line (solve, check, batch, generate, import, plot,
  bench, serve); its entry point is :func:`placement.api.cli.main`.
- :mod:`.files`: instance and solution files (the JSON form of placement/v1) read into typed
  objects and written back; :mod:`.argtypes` the command line's value types.
- :mod:`.batch` and :mod:`.parallel`: many solves in worker processes or as Ray tasks.
- :mod:`.server` and :mod:`.client`: the gRPC service ``placement serve`` and its client.
- :mod:`.interrupt`: Ctrl-C that stops a solve and keeps its best solution.

api/ imports the solver (``placement.solver``), the families (``placement.models``) and the
schema; nothing below imports api/. Benchmarks (``placement.benchmarks``) sit beside it.
"""
