"""Instance and solution files: reading them into typed objects and writing them back.

Files are the proto3 JSON form of ``placement.v1.Instance`` and ``placement.v1.Solution``
(see ``solver/schema/proto/placement/v1/placement.proto``). The ``oneof family`` key (``"gpu"``, ...)
says which registered family reads the section. Every problem with a file is an
:class:`~placement.solver.errors.InputError` that names the file and the JSON path of the bad
field, so the command line can print it as one line.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from placement.solver.errors import InputError
from placement.solver.family import Family, family_names, get_family
from placement.solver.jsonform import (
    check_file_kind,
    family_key,
    instance_message,
    load_json,
    parse_json_text,
    solution_message,
    start_message,
)
from placement.solver.schema.v1 import placement_pb2 as pb

__all__ = [
    "LoadedInstance",
    "check_writable",
    "placed_count",
    "read_instance",
    "read_solution",
    "solution_document",
    "write_json",
    "write_text",
]


@dataclass(frozen=True)
class LoadedInstance:
    """An instance file read and validated.

    Attributes
    ----------
    path:
        The file as the user named it (used in every message about it).
    family:
        The registered family object that reads the file's family section.
    instance:
        The family's typed instance (for example a ``GpuInstance``).
    name, description:
        The envelope's ``name`` and ``description`` fields.
    """

    path: str
    family: Family
    instance: Any
    name: str
    description: str

    @property
    def family_name(self) -> str:
        """The family key of the file, e.g. ``gpu``."""
        return self.family.name

    @property
    def display_name(self) -> str:
        """The instance name, or the file's stem when the file gives none."""
        return self.name or Path(self.path).stem


def _family_fields(message_cls: Any) -> list[str]:
    """Names of the ``oneof family`` fields of an envelope message."""
    return [f.name for f in message_cls.DESCRIPTOR.oneofs_by_name["family"].fields]


def _check_envelope_keys(data: dict[str, Any], message: Any, file: str) -> None:
    """Refuse unknown top-level keys with a message that lists the family sections.

    The schema layer would call an unknown family key "not a known field"; at the top level
    the likely mistake is a misspelt or unsupported family, so say which families exist.
    """
    descriptor = message.DESCRIPTOR
    known = {f.name for f in descriptor.fields} | {f.json_name for f in descriptor.fields}
    for key in data:
        if key not in known:
            families = ", ".join(_family_fields(message))
            plain = ", ".join(f.name for f in descriptor.fields if f.containing_oneof is None)
            raise InputError.single(
                key, key, f"a family section ({families}) or one of: {plain}", file=file
            )


def _family_for(key: str, file: str) -> Family:
    """The registered family for a file's family key, as an InputError when unknown."""
    try:
        return get_family(key)
    except KeyError:
        raise InputError.single(
            key, key, "a registered family: " + ", ".join(family_names()), file=file
        ) from None


def _read_envelope(
    path: str | os.PathLike[str], message_cls: Any, parse: Any, text: str | None = None
) -> tuple[str, Any, str]:
    """Read an envelope file (or its ``text``): its name, the parsed message and its family
    key."""
    file = os.fspath(path)
    data = load_json(file) if text is None else parse_json_text(text, file=file)
    try:
        check_file_kind(data, "instance" if message_cls is pb.Instance else "solution")
    except InputError as exc:
        raise exc.with_file(file) from None
    _check_envelope_keys(data, message_cls, file)
    try:
        msg = parse(data)
        return file, msg, family_key(msg)
    except InputError as exc:
        raise exc.with_file(file) from None


def read_instance(path: str | os.PathLike[str], text: str | None = None) -> LoadedInstance:
    """Read and validate an instance file of any registered family.

    Parameters
    ----------
    path:
        The JSON file (proto3 JSON form of ``placement.v1.Instance``).
    text:
        The file's content, when it was read elsewhere (a batch on Ray reads the files on
        the driver); ``path`` then only names it in errors.

    Returns
    -------
    LoadedInstance
        The typed instance with its family and envelope fields.

    Raises
    ------
    InputError
        For every problem with the file (missing, not JSON, unknown field, bad value, unknown
        or missing family); the error names the file and the JSON path of the field.
    """
    file, msg, key = _read_envelope(path, pb.Instance, instance_message, text)
    family = _family_for(key, file)
    section = getattr(msg, key)
    try:
        instance = family.instance_from_message(section, name=msg.name, description=msg.description)
    except InputError as exc:
        raise exc.with_file(file) from None
    return LoadedInstance(file, family, instance, msg.name, msg.description)


def read_start(path: str | os.PathLike[str], loaded: LoadedInstance) -> Any:
    """Read a warm start (``--start``): a solution file, or the ``--json`` output of
    ``placement solve``, of the instance's family; its names are resolved later against the
    instance, which may differ from the one it was found for.

    Returns the ``placement.v1.Solution`` message. Raises InputError naming the file (and
    ``--start``) on a malformed file or a section of another family.
    """
    file = os.fspath(path)
    data = load_json(file)
    try:
        msg = start_message(data)
        key = family_key(msg)
    except InputError as exc:
        raise exc.with_file(file) from None
    if key != loaded.family_name:
        raise InputError.single(
            key,
            key,
            f"a {loaded.family_name!r} solution for --start, the family of {loaded.path}",
            file=file,
        )
    return msg


def read_solution(path: str | os.PathLike[str], loaded: LoadedInstance) -> tuple[Any, str]:
    """Read a solution file for an instance already read.

    Parameters
    ----------
    path:
        The JSON file (proto3 JSON form of ``placement.v1.Solution``).
    loaded:
        The instance the solution is for.

    Returns
    -------
    tuple
        The family's typed solution and the file's ``instance_name`` (may be empty).

    Raises
    ------
    InputError
        Naming the solution file and the JSON path, e.g. ``gpu.placements[3].job`` for a job
        the instance does not have, or the family section when it differs from the instance's.
    """
    file, msg, key = _read_envelope(path, pb.Solution, solution_message)
    if key != loaded.family_name:
        raise InputError.single(
            key,
            key,
            f"a {loaded.family_name!r} section, the family of the instance {loaded.path}",
            file=file,
        )
    family = loaded.family
    section = getattr(msg, key)
    try:
        solution = family.solution_from_message(loaded.instance, section)
    except InputError as exc:
        raise exc.with_file(file) from None
    return solution, msg.instance_name


def solution_document(
    loaded: LoadedInstance, solution: Any, unplaced: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The solution file content (``placement.v1.Solution`` JSON) with reasons for unplaced work."""
    section = loaded.family.solution_to_dict(loaded.instance, solution, unplaced)
    return {"instance_name": loaded.display_name, loaded.family_name: section}


def placed_count(solution_section: dict[str, Any] | None) -> int | None:
    """Number of placed items in a solution section, where the family lists ``placements``."""
    if not solution_section or not isinstance(solution_section.get("placements"), list):
        return None
    return len(solution_section["placements"])


def check_writable(
    path: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str] | None] = ()
) -> None:
    """Fail early, before a long solve, when ``path`` cannot be written, or is one of the
    command's ``inputs`` (writing it would destroy what the command read).

    Raises
    ------
    InputError
        When the parent folder is missing, ``path`` is a folder, or ``path`` is an input.
    """
    file = os.fspath(path)
    p = Path(file)
    for source in inputs:
        if (
            source is not None
            and p.exists()
            and Path(source).exists()
            and os.path.samefile(p, source)
        ):
            raise InputError.single(
                "--out", file, f"a file other than the input {os.fspath(source)}"
            )
    if p.is_dir():
        raise InputError.single("", file, "a file path, not a directory", file=file)
    if p.exists() and not p.is_file():
        # A device or pipe (/dev/stdout): written in place, so the file itself must be writable.
        if not os.access(p, os.W_OK):
            raise InputError.single("", file, "a writable file", file=file)
        return
    parent = p.parent
    if not parent.is_dir():
        raise InputError.single("", str(parent), "an existing output folder", file=file)
    # Files are written to a temporary sibling and renamed, so the folder must be writable.
    if not os.access(parent, os.W_OK):
        raise InputError.single("", str(parent), "a writable output folder", file=file)


def write_json(path: str | os.PathLike[str], data: Any) -> None:
    """Write ``data`` as indented JSON; atomic, so a reader never sees half a file.

    Raises
    ------
    InputError
        When the file cannot be written (missing folder, permissions, full disk).
    """
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    write_text(path, text)


def write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` atomically (temporary file in the same folder, then rename)."""
    file = os.fspath(path)
    p = Path(file)
    check_writable(p)
    if p.exists() and not p.is_file():
        # A device or pipe (/dev/stdout, a FIFO): write in place, never rename over it.
        try:
            with open(p, "w", encoding="utf-8", newline="") as fh:
                fh.write(text)
        except OSError as exc:
            raise InputError.single(
                "", file, f"a writable file ({exc.strerror or exc})", file=file
            ) from None
        return
    # A sibling temporary name (not mkstemp) so the file gets the usual umask permissions.
    tmp: Path | None = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        os.replace(tmp, p)
        tmp = None
    except OSError as exc:
        raise InputError.single(
            "", file, f"a writable file ({exc.strerror or exc})", file=file
        ) from None
    finally:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
