"""Generated protobuf modules of the placement/v1 schema (sources: ../proto/placement/v1/).

Regenerate with ``python -m placement.solver.schema.protogen``; tests/test_packaging.py fails when
they are stale.
"""
