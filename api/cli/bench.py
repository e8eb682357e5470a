"""``placement bench``: run benchmark suites with the runner of :mod:`placement.benchmarks`."""

from __future__ import annotations

import argparse
import signal
from pathlib import Path

from placement.api.argtypes import CONVERTERS
from placement.api.cli.exits import EXIT_FAILED, EXIT_OK, err, exit_for_signal
from placement.solver import InputError
from placement.solver.parallel import connect_ray


def cmd_bench(args: argparse.Namespace) -> int:
    """``placement bench``."""
    # The one api -> benchmarks import: the suites sit above api/ (they drive it).
    from placement.benchmarks.runner import BenchConfig, command_line, data_root, run_suite, suites

    registered = suites()
    if args.list or not args.suites:
        width = max(len(n) for n in registered)
        for name, suite in registered.items():
            needs = f" [data: {suite.data}]" if suite.data else ""
            if suite.parameters:
                needs += " [--param " + ", ".join(f"{p.name}=" for p in suite.parameters) + "]"
            print(f"{name:<{width}}  {suite.help}{needs}")
        return EXIT_OK
    names = list(registered) if args.suites == ["all"] else args.suites
    for name in names:
        if name not in registered:
            raise InputError.single(
                "SUITE", name, "a registered suite ('placement bench --list') or 'all'"
            )
    given = _given_params(args.param, [registered[n] for n in names])
    given.update(_selection(args, [registered[n] for n in names], list(registered.values())))
    if args.ray:
        connect_ray(args.ray, args.jobs)  # fail early and clearly, before any case runs
    out = Path(args.out or ("build/bench-quick" if args.quick else "docs/benchmarks"))
    root = data_root(args.data)
    skip_missing = args.suites == ["all"]
    code = EXIT_OK
    for name in names:
        suite = registered[name]
        if skip_missing and suite.data and not (root / suite.data).is_dir():
            err(f"bench {name}: skipped: its public data is not at {root / suite.data}")
            continue
        argv = ["bench", name]
        if args.time_limit is not None:
            argv += ["--time-limit", f"{args.time_limit:g}"]
        if args.quick:
            argv.append("--quick")
        if args.jobs != 1:
            argv += ["--jobs", str(args.jobs)]
        if args.ray:
            argv += ["--ray", args.ray]
        params = {}
        for p in suite.parameters:
            if p.name in given:
                params[p.name] = given[p.name][1]
                word = given[p.name][0]
                argv += word if isinstance(word, list) else ["--param", word]
        limit = args.time_limit
        if limit is None:
            limit = suite.quick_time_limit_s if args.quick else suite.time_limit_s
        config = BenchConfig(
            suite=name,
            time_limit_s=limit,
            quick=args.quick,
            out=out,
            data=root,
            jobs=args.jobs,
            ray=args.ray,
            command=command_line(argv),
            params=params,
        )
        outcome = run_suite(suite, config, progress=not args.quiet)
        state = "interrupted" if outcome.interrupted else "done"
        err(
            f"bench {name}: {state}: {outcome.finished} of {outcome.cases} cases, "
            f"{len(outcome.failed)} failed, {outcome.invalid} invalid solutions; "
            f"{outcome.md_path} and {outcome.csv_path}"
        )
        err(f"bench {name}: reproduce with: {config.command}")
        if outcome.interrupted:
            return exit_for_signal(outcome.signal or signal.SIGINT)
        if outcome.failed or outcome.invalid:
            code = EXIT_FAILED
    return code


SELECTION = ("trace", "seeds", "modes")
"""Options of ``placement bench`` that a suite takes by declaring a parameter of that name
(the traces, seeds and modes to run)."""


def _selection(
    args: argparse.Namespace, chosen: list, every: list
) -> dict[str, tuple[list[str], object]]:
    """``--trace``, ``--seeds``, ``--modes`` -> {name: (their words, value)}; InputError
    naming the option when a chosen suite does not take it."""
    out: dict[str, tuple[list[str], object]] = {}
    for name in SELECTION:
        value = getattr(args, name, None)
        if not value:
            continue
        missing = [s.name for s in chosen if name not in {p.name for p in s.parameters}]
        if missing:
            takers = (
                ", ".join(sorted(s.name for s in every if name in {p.name for p in s.parameters}))
                or "none"
            )
            raise InputError.single(
                f"--{name}", ", ".join(missing), f"a suite that takes --{name} ({takers})"
            )
        if name == "trace":
            words = [w for path in value for w in ("--trace", path)]
        elif name == "seeds":
            words = ["--seeds", f"{value[0]}-{value[-1]}"]
        else:
            words = ["--modes", ",".join(value)]
        out[name] = (words, list(value) if name == "trace" else value)
    return out


def _given_params(texts: list[str], chosen: list) -> dict[str, tuple[str, object]]:
    """``--param NAME=VALUE`` words -> {name: (word, converted value)}, checked against the
    parameters the chosen suites declare (InputError naming the bad word otherwise)."""
    declared = {p.name: p for suite in chosen for p in suite.parameters}
    out: dict[str, tuple[str, object]] = {}
    for text in texts:
        name, sep, value = text.partition("=")
        if not sep or name not in declared:
            known = ", ".join(sorted(declared)) or "none for these suites"
            raise InputError.single("--param", text, f"NAME=VALUE with NAME one of: {known}")
        parameter = declared[name]
        try:
            converted = CONVERTERS[parameter.type](value)
        except (argparse.ArgumentTypeError, ValueError) as exc:
            # The converters say "got VALUE, expected WHAT"; the error adds the "got" itself.
            reason = str(exc)
            _, said, expected = reason.partition(", expected ")
            raise InputError.single(
                f"--param {name}", value, expected if said else (reason or parameter.type)
            ) from None
        out[name] = (text, converted)
    return out
