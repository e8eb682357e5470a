"""Reading and writing the placement/v1 JSON form (instance and solution files).

The schema is the protobuf in ``api/proto/placement/v1/placement.proto``; files are its proto3
JSON form. This module turns JSON text into a protobuf message with one-line, path-naming
errors, and back. Families then build their typed objects from the message's dict form.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from google.protobuf import json_format

from placement.solver.errors import InputError

MAX_FILE_BYTES = 512 * 1024 * 1024
"""Files larger than this are refused before reading."""

_AT = re.compile(r' at "([^"]*)"')
_NO_FIELD = re.compile(r'has no field named "([^"]+)"')


def _pb():
    from placement.api.v1 import placement_pb2

    return placement_pb2


def load_json(path: str | Path) -> dict[str, Any]:
    """Read a JSON object from ``path``; every failure is an :class:`InputError`."""
    p = Path(path)
    file = str(path)
    if not p.exists():
        raise InputError.single("", file, "an existing file", file=file)
    if p.is_dir():
        raise InputError.single("", file, "a file, not a directory", file=file)
    size = p.stat().st_size
    if size > MAX_FILE_BYTES:
        raise InputError.single("", f"{size} bytes", f"at most {MAX_FILE_BYTES} bytes", file=file)
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError.single("", f"byte {exc.start}", "UTF-8 text", file=file) from None
    except OSError as exc:
        raise InputError.single("", file, f"a readable file ({exc.strerror})", file=file) from None
    return parse_json_text(text, file=file)


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number")


def parse_json_text(text: str, file: str | None = None) -> dict[str, Any]:
    """Parse JSON text into a dict; NaN and Infinity are refused."""
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise InputError.single(
            f"line {exc.lineno} column {exc.colno}", exc.msg, "valid JSON", file=file
        ) from None
    except ValueError as exc:
        raise InputError.single("", str(exc), "finite JSON numbers", file=file) from None
    except RecursionError:
        raise InputError.single("", "deeply nested JSON", "at most a few hundred levels", file=file) from None
    if not isinstance(data, dict):
        raise InputError.single("", type(data).__name__, "a JSON object", file=file)
    return data


def _message_from_dict(data: dict[str, Any], message: Any, root: str) -> Any:
    try:
        json_format.ParseDict(data, message)
    except json_format.ParseError as exc:
        text = str(exc).split("\n")[0]
        m = _AT.search(text)
        path = m.group(1) if m else ""
        # protobuf names the message type first ("Instance.gpu.jobs[0]"): drop it.
        path = path.split(".", 1)[1] if "." in path else ("" if path == root else path)
        field = _NO_FIELD.search(text)
        if field:
            full = f"{path}.{field.group(1)}" if path else field.group(1)
            raise InputError.single(full, field.group(1), "a known field of the placement/v1 schema") from None
        detail = _AT.sub("", text).strip().rstrip(".")
        raise InputError.single(path, detail, "a value of the placement/v1 schema type") from None
    except RecursionError:
        raise InputError.single("", "deeply nested JSON", "at most a few hundred levels") from None
    return message


def instance_message(data: dict[str, Any]) -> Any:
    """A ``placement.v1.Instance`` from its JSON dict."""
    return _message_from_dict(data, _pb().Instance(), "Instance")


def solution_message(data: dict[str, Any]) -> Any:
    """A ``placement.v1.Solution`` from its JSON dict."""
    return _message_from_dict(data, _pb().Solution(), "Solution")


def message_to_dict(message: Any) -> dict[str, Any]:
    """The JSON dict of a message: snake_case names, defaults included for readability."""
    return json_format.MessageToDict(
        message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )


def family_key(message: Any, path: str = "") -> str:
    """The family a message is for (the name of its ``oneof family`` field)."""
    which = message.WhichOneof("family")
    if which is None:
        raise InputError.single(
            path or "family", None, "one family section, e.g. {\"gpu\": {...}}"
        )
    return which


def finite(value: float) -> bool:
    """True for a finite number."""
    return isinstance(value, int | float) and math.isfinite(value)
