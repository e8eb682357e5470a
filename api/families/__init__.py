"""Command-line hooks of each family (see :mod:`placement.api.extensions`)."""
