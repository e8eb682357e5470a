"""Generated protobuf modules of the placement/v1 schema (see api/proto/placement/v1/).

Regenerate with: python -m grpc_tools.protoc -I api/proto --python_out=api/v1 --pyi_out=api/v1 api/proto/placement/v1/placement.proto
(then move api/v1/placement/v1/* to api/v1/). tests/test_packaging.py checks they are current.
"""
