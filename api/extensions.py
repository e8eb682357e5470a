"""What each family adds to the command line: generators, importers and plotters.

A family's command-line hooks live in ``placement.api.families.<family>``; that module calls
:func:`register` once per hook, and :data:`FAMILY_CLI_MODULES` names it (one line per family).
The command line builds ``placement generate <family>``, ``placement import <format>`` and
``placement plot`` from these registries. Hooks never touch files except through the paths
they are given: generators and importers return a typed instance, and the command line writes
it.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "FAMILY_CLI_MODULES",
    "GENERATORS",
    "IMPORTERS",
    "PLOTTERS",
    "Generator",
    "Importer",
    "Plotter",
    "lazy",
    "load",
    "register",
]

FAMILY_CLI_MODULES: tuple[str, ...] = ("gpu", "dag", "entanglement", "partition")
"""Modules under ``placement.api.families`` that register a family's hooks."""


@dataclass(frozen=True)
class Generator:
    """One ``placement generate <family>`` subcommand.

    Attributes
    ----------
    family:
        The registered family name; also the subcommand name.
    help:
        One line for ``placement generate --help``.
    description:
        A paragraph for ``placement generate <family> --help``.
    add_arguments:
        Adds the generator's own options to its subparser (``--out`` is added for it).
    build:
        Turns the parsed options into a typed instance of the family (``name`` and
        ``description`` set). May raise :class:`~placement.solver.errors.InputError`.
    """

    family: str
    help: str
    description: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    build: Callable[[argparse.Namespace], Any]


@dataclass(frozen=True)
class Importer:
    """One ``placement import <format>`` subcommand: a public file format -> an instance.

    Attributes
    ----------
    format:
        The subcommand name, e.g. ``openb``, ``braun``, ``stg``, ``wfcommons``.
    family:
        The family of the instances it makes.
    help, description:
        As for :class:`Generator`.
    add_arguments:
        Adds the importer's arguments (input paths, options); ``--out`` is added for it.
    build:
        Reads the files named by the parsed arguments and returns a typed instance. Raises
        :class:`~placement.solver.errors.InputError` naming the file, line or field and the
        expected value on a malformed input.
    """

    format: str
    family: str
    help: str
    description: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    build: Callable[[argparse.Namespace], Any]


@dataclass(frozen=True)
class Plotter:
    """How ``placement plot`` draws a solution of a family.

    ``draw(instance, solution, out_path)`` writes an image (the format from the suffix,
    e.g. PNG) of a typed solution of the typed instance. Each family keeps it in
    ``models/<family>/plot.py`` as ``draw`` and registers ``lazy(that module, "draw")``.
    """

    family: str
    draw: Callable[[Any, Any, str], None]


GENERATORS: dict[str, Generator] = {}
"""Family name -> generator, in registration order."""
IMPORTERS: dict[str, Importer] = {}
"""Format name -> importer, in registration order."""
PLOTTERS: dict[str, Plotter] = {}
"""Family name -> plotter."""


def register(hook: Generator | Importer | Plotter) -> Any:
    """Make a hook available on the command line; returns it."""
    if isinstance(hook, Generator):
        GENERATORS[hook.family] = hook
    elif isinstance(hook, Importer):
        if hook.format in IMPORTERS:
            raise ValueError(f"import format {hook.format!r} is registered twice")
        IMPORTERS[hook.format] = hook
    elif isinstance(hook, Plotter):
        PLOTTERS[hook.family] = hook
    else:
        raise TypeError(f"not a command-line hook: {hook!r}")
    return hook


def lazy(module: str, name: str) -> Callable[..., Any]:
    """A function that imports ``module`` on its first call and calls its ``name`` (so that
    ``placement --help`` does not import matplotlib or a solver)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__name__ = name
    call.__qualname__ = f"{module}.{name}"
    return call


def load() -> None:
    """Import every family's hook module (once)."""
    for name in FAMILY_CLI_MODULES:
        importlib.import_module(f"placement.api.families.{name}")
