"""Generated protobuf modules of the placement/v1 schema (sources: api/proto/placement/v1/).

Regenerate with ``python -m placement.api.protogen``; tests/test_packaging.py fails when
they are stale.
"""
