"""What each family adds to the command line: generators, importers, plotters and benchmark suites.

A family's command-line hooks live in ``placement.api.families.<family>``; that module calls
:func:`register` once per hook, and :data:`FAMILY_CLI_MODULES` names it (one line per family).
The command line builds ``placement generate <family>``, ``placement import <format>`` and
``placement plot`` and ``placement bench`` from these registries. Hooks never touch files except through the paths
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
    "SUITES",
    "Plotter",
    "Suite",
    "lazy",
    "load",
    "register",
]

FAMILY_CLI_MODULES: tuple[str, ...] = ("gpu", "dag", "entanglement", "partition", "service")
"""Modules under ``placement.api.families`` that register a family's hooks (``service``
registers the gRPC service's benchmark suite)."""


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


@dataclass(frozen=True)
class Suite:
    """One ``placement bench <name>`` suite: a benchmark of a family, run by :mod:`.bench`.

    A suite is three functions; each family keeps them in ``models/<family>/bench.py`` and
    registers them with :func:`suite_functions` (:func:`lazy` references, so that ``--list``
    imports nothing heavy, and ``run`` pickles into worker processes and Ray tasks by name).

    Attributes
    ----------
    name:
        The suite name, ``<family>-<benchmark>`` (e.g. ``dag-stg``).
    family:
        The family it measures (``service`` for the service's own suite).
    help:
        One line for ``placement bench --list``.
    cases:
        ``cases(config) -> list[dict]``: the independent cases to run (plain, picklable
        parameters), honouring ``config.quick`` (tiny sizes) and ``config.time_limit_s``.
    run:
        ``run(case, config) -> list[dict]``: runs one case (in a worker process or a Ray task)
        and returns its CSV rows. Every row has an ``invalid`` column: how many of the
        solutions behind the row the family's independent checker rejected (see
        :func:`placement.api.bench.recheck`).
    report:
        ``report(rows, config) -> str``: the Markdown tables of the rows (it may also write
        PNG plots named ``<name>*.png`` into ``config.out``).
    data:
        The folder under the public benchmark data root the suite reads, or None.
    time_limit_s, quick_time_limit_s:
        Default time limit per solve, for full and ``--quick`` runs.
    exclusive:
        Run the cases one at a time whatever ``--jobs`` says: timing is the measurement, or
        each case uses every core.
    """

    name: str
    family: str
    help: str
    cases: Callable[[Any], list[dict[str, Any]]]
    run: Callable[[dict[str, Any], Any], list[dict[str, Any]]]
    report: Callable[[list[dict[str, Any]], Any], str]
    data: str | None = None
    time_limit_s: float = 10.0
    quick_time_limit_s: float = 1.0
    exclusive: bool = False


def suite_functions(module: str, stem: str = "") -> dict[str, Any]:
    """A suite's ``cases``, ``run`` and ``report``: ``cases_<stem>``, ``run_<stem>`` and
    ``report_<stem>`` of ``module`` (``cases``, ``run``, ``report`` without a stem), each
    :func:`lazy`; pass them as ``Suite(..., **suite_functions(module, stem))``."""
    return {
        part: lazy(module, f"{part}_{stem}" if stem else part)
        for part in ("cases", "run", "report")
    }


GENERATORS: dict[str, Generator] = {}
"""Family name -> generator, in registration order."""
IMPORTERS: dict[str, Importer] = {}
"""Format name -> importer, in registration order."""
PLOTTERS: dict[str, Plotter] = {}
"""Family name -> plotter."""
SUITES: dict[str, Suite] = {}
"""Suite name -> benchmark suite, in registration order."""


def register(hook: Generator | Importer | Plotter | Suite) -> Any:
    """Make a hook available on the command line; returns it."""
    if isinstance(hook, Generator):
        GENERATORS[hook.family] = hook
    elif isinstance(hook, Importer):
        if hook.format in IMPORTERS:
            raise ValueError(f"import format {hook.format!r} is registered twice")
        IMPORTERS[hook.format] = hook
    elif isinstance(hook, Plotter):
        PLOTTERS[hook.family] = hook
    elif isinstance(hook, Suite):
        if hook.name in SUITES:
            raise ValueError(f"benchmark suite {hook.name!r} is registered twice")
        SUITES[hook.name] = hook
    else:
        raise TypeError(f"not a command-line hook: {hook!r}")
    return hook


class _Lazy:
    """A function imported on its first call; picklable by module and name."""

    def __init__(self, module: str, name: str) -> None:
        self.module = module
        self.name = name
        self.__name__ = name
        self.__qualname__ = f"{module}.{name}"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(self.module), self.name)(*args, **kwargs)

    def __repr__(self) -> str:
        return f"lazy({self.module!r}, {self.name!r})"


def lazy(module: str, name: str) -> Callable[..., Any]:
    """A function that imports ``module`` on its first call and calls its ``name`` (so that
    ``placement --help`` does not import matplotlib or a solver). It pickles by name, so it
    can be sent to worker processes and Ray tasks."""
    return _Lazy(module, name)


def load() -> None:
    """Import every family's hook module (once)."""
    for name in FAMILY_CLI_MODULES:
        importlib.import_module(f"placement.api.families.{name}")
