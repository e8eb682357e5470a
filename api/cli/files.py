"""``placement generate``, ``placement import`` and ``placement plot``: each registered family's
declared hooks (its ``generators``, ``importers`` and ``plot``) between files and instances."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from placement.api.cli.exits import EXIT_OK, err
from placement.api.files import (
    check_writable,
    read_instance,
    read_solution,
    write_json,
)
from placement.solver import InputError, get_family
from placement.solver.family import family_names, instance_document
from placement.solver.hooks import Generator, Importer


def generators() -> dict[str, Generator]:
    """``placement generate`` subcommand name -> generator, over every registered family."""
    return {g.family: g for name in family_names() for g in get_family(name).generators}


def importers() -> dict[str, Importer]:
    """``placement import`` format -> importer, over every registered family."""
    found: dict[str, Importer] = {}
    for name in family_names():
        for importer in get_family(name).importers:
            if importer.format in found:
                raise ValueError(f"import format {importer.format!r} is declared twice")
            found[importer.format] = importer
    return found


def plotters() -> dict[str, Callable[[Any, Any, str], None]]:
    """Family name -> ``draw(instance, solution, out_path)``, for the families that draw."""
    drawn = {name: get_family(name).plot for name in family_names()}
    return {name: draw for name, draw in drawn.items() if draw is not None}


def parameter_values(args: argparse.Namespace, hook: Generator | Importer) -> dict[str, Any]:
    """What ``hook.build`` gets: every declared parameter by name, and ``out`` (None for
    standard output)."""
    values = {p.name: getattr(args, p.name) for p in hook.parameters}
    values["out"] = None if args.out == "-" else args.out
    return values


def cmd_generate(args: argparse.Namespace) -> int:
    """``placement generate FAMILY``."""
    generator = args.hook
    if args.out != "-":
        check_writable(args.out)
    return _write_instance(generator.build(parameter_values(args, generator)), args.out)


def cmd_import(args: argparse.Namespace) -> int:
    """``placement import FORMAT``."""
    importer = args.hook
    if args.out != "-":
        check_writable(args.out)
    return _write_instance(importer.build(parameter_values(args, importer)), args.out)


def _write_instance(instance: Any, out: str) -> int:
    """Write the instance file of a generated or imported instance (``-``: standard output)."""
    document = instance_document(instance)
    if out == "-":
        print(json.dumps(document, indent=2, ensure_ascii=False))
    else:
        write_json(out, document)
        err(f"wrote {out}")
    return EXIT_OK


def cmd_plot(args: argparse.Namespace) -> int:
    """``placement plot INSTANCE SOLUTION --out FILE``."""
    loaded = read_instance(args.instance)
    draw = loaded.family.plot
    if draw is None:
        raise InputError.single(
            "family",
            loaded.family_name,
            f"a family that can be drawn: {', '.join(plotters()) or 'none yet'}",
            file=args.instance,
        )
    solution, _ = read_solution(args.solution, loaded)
    check_writable(args.out)
    draw(loaded.instance, solution, args.out)
    err(f"wrote {args.out}")
    return EXIT_OK
