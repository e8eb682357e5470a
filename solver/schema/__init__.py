"""The placement/v1 schema: the bottom rung of the house.

``proto/placement/v1/*.proto`` is the public contract (instances, solutions, the gRPC
service); ``v1`` holds the modules protoc generates from it (``python -m
placement.solver.schema.protogen``). Files are the messages' proto3 JSON form. This package
imports nothing of placement: ``solver/``, ``models/`` and ``api/`` all build on it. It sits
inside ``solver/`` because the product's layout has no folder below the engine.
"""
