"""``placement generate``, ``placement import``, ``placement export`` and ``placement plot``:
each registered family's declared hooks (its ``generators``, ``importers``, ``exporters`` and
``plot``) between files, instances and solutions."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
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
from placement.solver.hooks import Exporter, Generator, Importer


def generators() -> dict[str, Generator]:
    """``placement generate`` subcommand name -> generator, over every registered family."""
    return {g.family: g for name in family_names() for g in get_family(name).generators}


def importers() -> dict[str, Importer]:
    """``placement import`` format -> importer, over every registered family."""
    return _by_format("importers", "import")


def exporters() -> dict[str, Exporter]:
    """``placement export`` format -> exporter, over every registered family."""
    return _by_format("exporters", "export")


def _by_format(member: str, command: str) -> dict[str, Any]:
    """The families' ``member`` hooks (importers or exporters) by format; a format two
    families declare is a programming error."""
    found: dict[str, Any] = {}
    for name in family_names():
        for hook in getattr(get_family(name), member):
            if hook.format in found:
                raise ValueError(f"{command} format {hook.format!r} is declared twice")
            found[hook.format] = hook
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


def cmd_export(args: argparse.Namespace) -> int:
    """``placement export FORMAT SOLUTION --instance INSTANCE``: a solution the family's
    checker accepts, written as the objects of another system."""
    exporter: Exporter = args.hook
    loaded = read_instance(args.instance)
    if loaded.family_name != exporter.family:
        raise InputError.single(
            "family",
            loaded.family_name,
            f"an instance of the {exporter.family!r} family (export {exporter.format})",
            file=args.instance,
        )
    solution, _ = read_solution(args.solution, loaded)
    report = loaded.family.check(loaded.instance, solution)
    if not report.feasible:
        raise InputError.single(
            "",
            report.violations[0],
            f"a solution the checker accepts ({len(report.violations)} violation(s); "
            f"see 'placement check {args.instance} {args.solution}')",
            file=args.solution,
        )
    if args.out != "-":
        check_writable(args.out, inputs=(args.instance, args.solution))
    values = {p.name: getattr(args, p.name) for p in exporter.parameters}
    try:
        document = exporter.build(loaded.instance, solution, values)
    except InputError as exc:
        # the instance lacks what the format needs (e.g. pod names): name its file
        raise (exc if exc.file else exc.with_file(args.instance)) from None
    if args.out == "-":
        print(json.dumps(document, indent=2, ensure_ascii=False))
    else:
        write_json(args.out, document)
        err(f"wrote {args.out}")
    return EXIT_OK


def _write_instance(instance: Any, out: str) -> int:
    """Write the instance file of a generated or imported instance (``-``: standard output)."""
    document = instance_document(instance)
    if out == "-":
        print(json.dumps(document, indent=2, ensure_ascii=False))
    else:
        write_json(out, document)
        err(f"wrote {out}")
    return EXIT_OK


PLOT_SUFFIXES = (".png", ".svg", ".pdf")
"""The image formats ``placement plot`` writes (matplotlib picks the format from the suffix)."""


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
    if Path(args.out).suffix.lower() not in PLOT_SUFFIXES:
        raise InputError.single(
            "--out", args.out, f"an image file ending in {', '.join(PLOT_SUFFIXES)}"
        )
    check_writable(args.out, inputs=(args.instance, args.solution))
    draw(loaded.instance, solution, args.out)
    err(f"wrote {args.out}")
    return EXIT_OK
