"""The gRPC service behind ``placement serve`` (see docs/api.md and docs/architecture.md)."""
