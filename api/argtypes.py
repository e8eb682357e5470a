"""argparse value types of the command line: each rejects a bad value with
"got VALUE, expected WHAT", which the CLI prints as a one-line usage error (exit 2)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any

from placement.solver.hooks import Parameter
from placement.solver.options import MAX_THREADS, MAX_TIME_LIMIT_S, SEED_RANGE

MAX_COUNT = 2**31 - 1
"""The largest integer any option takes (an option with a tighter range says so): no count,
size or seed of this program means anything beyond a 32-bit integer, and every solver and
library below takes one."""


def int_at_least(text: str, low: int) -> int:
    """An integer from ``low`` to :data:`MAX_COUNT`."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"got {text!r}, expected an integer >= {low}") from None
    if not low <= value <= MAX_COUNT:
        raise argparse.ArgumentTypeError(
            f"got {value}, expected an integer from {low} to {MAX_COUNT}"
        )
    return value


def positive_int(text: str) -> int:
    """An integer >= 1."""
    return int_at_least(text, 1)


def non_negative_int(text: str) -> int:
    """An integer >= 0."""
    return int_at_least(text, 0)


def _number(text: str, expected: str, ok: object) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"got {text!r}, expected {expected}") from None
    if not (math.isfinite(value) and ok(value)):  # type: ignore[operator]
        raise argparse.ArgumentTypeError(f"got {text!r}, expected {expected}")
    return value


def positive_seconds(text: str) -> float:
    """A finite number of seconds > 0."""
    return _number(text, "a finite number of seconds > 0", lambda v: v > 0)


def time_limit(text: str) -> float:
    """A solve's time limit: seconds > 0, at most :data:`~placement.solver.options.MAX_TIME_LIMIT_S`."""
    return _number(
        text,
        f"a finite number of seconds > 0 and <= {MAX_TIME_LIMIT_S:g}",
        lambda v: 0 < v <= MAX_TIME_LIMIT_S,
    )


def thread_count(text: str) -> int:
    """Worker threads: 0 (all cores) to :data:`~placement.solver.options.MAX_THREADS`."""
    value = int_at_least(text, 0)
    if value > MAX_THREADS:
        raise argparse.ArgumentTypeError(
            f"got {value}, expected an integer from 0 (all cores) to {MAX_THREADS}"
        )
    return value


def generator_seed(text: str) -> int:
    """The seed of a generator or an importer's random choices: 0 to :data:`MAX_COUNT` (numpy's
    generators take no negative seed)."""
    return int_at_least(text, 0)


def seed(text: str) -> int:
    """A random seed every backend takes (:data:`~placement.solver.options.SEED_RANGE`)."""
    low, high = SEED_RANGE
    expected = f"an integer from {low} to {high}"
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"got {text!r}, expected {expected}") from None
    if not low <= value <= high:
        raise argparse.ArgumentTypeError(f"got {value}, expected {expected}")
    return value


def fraction(text: str) -> float:
    """A number in [0, 1]."""
    return _number(text, "a number in [0, 1]", lambda v: 0 <= v <= 1)


def relative_gap(text: str) -> float:
    """A number in [0, 1)."""
    return _number(text, "a number in [0, 1)", lambda v: 0 <= v < 1)


def name_list(text: str) -> tuple[str, ...]:
    """Comma-separated non-empty names."""
    names = tuple(part.strip() for part in text.split(","))
    if not all(names):
        raise argparse.ArgumentTypeError(f"got {text!r}, expected names separated by commas")
    return names


def port(text: str) -> int:
    """A TCP port, 0..65535 (0 = any free port)."""
    value = int_at_least(text, 0)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"got {value}, expected a port in 0..65535")
    return value


def server_address(text: str) -> str:
    """A server's ``HOST:PORT`` (``[::1]:PORT`` for IPv6; a ``unix:PATH`` target as is), port
    1..65535: gRPC would otherwise take a missing port for 443 and wrap a large one."""
    expected = "HOST:PORT with a port in 1..65535, e.g. 127.0.0.1:50051"
    if text.startswith("unix:"):
        return text
    host, sep, number = text.rpartition(":")
    bracketed = host.startswith("[") and host.endswith("]")
    if not sep or not host or (":" in host and not bracketed) or not number.isdigit():
        raise argparse.ArgumentTypeError(f"got {text!r}, expected {expected}")
    if not 1 <= int(number) <= 65535:
        raise argparse.ArgumentTypeError(f"got {text!r}, expected {expected}")
    return text


def limit_setting(text: str) -> tuple[str, int]:
    """``NAME=N``: a per-instance size limit."""
    name, sep, number = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"got {text!r}, expected NAME=N, e.g. jobs=50000")
    return name.strip(), int_at_least(number, 1)


def finite_float(text: str) -> float:
    """A finite number (not nan, not inf)."""
    return _number(text, "a finite number", lambda v: True)


def non_negative_float(text: str) -> float:
    """A finite number >= 0."""
    return _number(text, "a finite number >= 0", lambda v: v >= 0)


def positive_float(text: str) -> float:
    """A finite number > 0."""
    return _number(text, "a finite number > 0", lambda v: v > 0)


def probability(text: str) -> float:
    """A number in (0, 1]."""
    value = fraction(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"got {text!r}, expected a probability in (0, 1]")
    return value


def fraction_pair(text: str) -> tuple[float, float]:
    """``F`` (both ends) or ``LOW,HIGH`` with 0 <= LOW <= HIGH <= 1."""
    parts = text.split(",")
    try:
        values = [float(p) for p in parts]
    except ValueError:
        values = []
    if len(values) == 1:
        values = values * 2
    if len(values) != 2 or not (0 <= values[0] <= values[1] <= 1):
        raise argparse.ArgumentTypeError(
            f"got {text!r}, expected F or LOW,HIGH with 0 <= LOW <= HIGH <= 1"
        )
    return values[0], values[1]


def path_count(text: str) -> tuple[str, int]:
    """``FILE:N``: a file and how many (N >= 1)."""
    path, sep, count = text.rpartition(":")
    if not sep or not path:
        raise argparse.ArgumentTypeError(f"got {text!r}, expected FILE:N")
    return path, int_at_least(count, 1)


def seed_range(text: str) -> tuple[int, ...]:
    """``A-B`` (the seeds A to B, both included, 0 <= A <= B) or one seed ``A``."""
    low, sep, high = text.partition("-")
    try:
        a, b = int(low), int(high if sep else low)
    except ValueError:
        a, b = -1, -1
    if not 0 <= a <= b:
        raise argparse.ArgumentTypeError(f"got {text!r}, expected A-B or A (0 <= A <= B)")
    return tuple(range(a, b + 1))


CONVERTERS: dict[str, Callable[[str], Any]] = {
    "str": str,
    "path": str,
    "int": lambda text: int_at_least(text, -MAX_COUNT),
    "seed": generator_seed,
    "positive_int": positive_int,
    "non_negative_int": non_negative_int,
    "float": finite_float,
    "non_negative_float": non_negative_float,
    "positive_float": positive_float,
    "fraction": fraction,
    "probability": probability,
    "fraction_pair": fraction_pair,
    "name_list": name_list,
    "path_count": path_count,
}
"""The converter of each :data:`~placement.solver.family.PARAMETER_TYPES` name (``flag`` is a
switch, no converter)."""


def _at_most(convert: Callable[[str], Any], kind: str, maximum: int) -> Callable[[str], Any]:
    """``convert``, then refuse a value above ``maximum``."""
    low = {"positive_int": 1, "non_negative_int": 0}.get(kind)

    def checked(text: str) -> Any:
        value = convert(text)
        if value > maximum:
            expected = (
                f"an integer from {low} to {maximum}" if low is not None else f"at most {maximum}"
            )
            raise argparse.ArgumentTypeError(f"got {value}, expected {expected}")
        return value

    return checked


def add_parameter(parser: argparse.ArgumentParser, parameter: Parameter) -> None:
    """Add a family's declared :class:`~placement.solver.hooks.Parameter` to ``parser``."""
    options: dict[str, Any] = {"help": parameter.help}
    if parameter.type == "flag":
        parser.add_argument(parameter.flag, action="store_true", **options)
        return
    options["type"] = CONVERTERS[parameter.type]
    if parameter.maximum is not None:
        options["type"] = _at_most(options["type"], parameter.type, parameter.maximum)
        options["help"] = f"{parameter.help}; at most {parameter.maximum}"
    if parameter.metavar is not None:
        options["metavar"] = parameter.metavar
    if parameter.choices is not None:
        options["choices"] = parameter.choices
    if parameter.positional:
        parser.add_argument(parameter.name, **options)
        return
    if parameter.repeated:
        options["action"] = "append"
    if parameter.required:
        options["required"] = True
    else:
        options["default"] = parameter.default
    parser.add_argument(parameter.flag, **options)
