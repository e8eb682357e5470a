"""Generate the Python modules of the placement/v1 schema into ``solver/schema/v1``.

    python -m placement.solver.schema.protogen            # rewrite solver/schema/v1/*_pb2*.py(i)
    python -m placement.solver.schema.protogen --check    # exit 1 if the committed modules are stale

The ``.proto`` files live in ``solver/schema/proto/placement/v1`` (their proto package and directory
are ``placement.v1``, the public contract). protoc writes imports between them as
``from placement.v1 import ...``; installed, the modules are ``placement.solver.schema.v1``, so the
imports are rewritten. protoc runs in a child process: in-process it can abort once stubs of
the same files are already imported.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

SCHEMA_DIR = Path(__file__).resolve().parent
PROTO_ROOT = SCHEMA_DIR / "proto"
PROTO_DIR = PROTO_ROOT / "placement" / "v1"
OUT_DIR = SCHEMA_DIR / "v1"

_IMPORT = re.compile(r"^from placement\.v1 import ", re.MULTILINE)


def proto_files() -> list[Path]:
    """Every ``.proto`` file of the schema, sorted."""
    return sorted(PROTO_DIR.glob("*.proto"))


def generate() -> dict[str, str]:
    """Run protoc on every schema file; returns {module file name: text}."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "grpc_tools.protoc",
                f"-I{PROTO_ROOT}",
                f"--python_out={tmp}",
                f"--pyi_out={tmp}",
                f"--grpc_python_out={tmp}",
                *(str(p) for p in proto_files()),
            ],
            check=True,
        )
        out: dict[str, str] = {}
        for path in sorted((Path(tmp) / "placement" / "v1").iterdir()):
            text = path.read_text()
            # protoc writes a gRPC module for every file; keep those that define a service.
            if path.name.endswith("_pb2_grpc.py") and "class " not in text:
                continue
            out[path.name] = _IMPORT.sub("from placement.solver.schema.v1 import ", text)
        return out


def stale(generated: dict[str, str]) -> list[str]:
    """Names of the modules in ``solver/schema/v1`` that differ from ``generated`` or are missing or
    left over."""
    committed = {
        p.name: p.read_text()
        for p in OUT_DIR.iterdir()
        if p.name.endswith(("_pb2.py", "_pb2.pyi", "_pb2_grpc.py"))
    }
    names = set(committed) | set(generated)
    return sorted(n for n in names if committed.get(n) != generated.get(n))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m placement.solver.schema.protogen", description=__doc__
    )
    parser.add_argument("--check", action="store_true", help="only report stale modules")
    args = parser.parse_args(argv)
    generated = generate()
    bad = stale(generated)
    if args.check:
        for name in bad:
            print(f"stale: solver/schema/v1/{name}", file=sys.stderr)
        return 1 if bad else 0
    for name in bad:
        target = OUT_DIR / name
        if name in generated:
            target.write_text(generated[name])
        else:
            target.unlink()
        print(
            f"wrote solver/schema/v1/{name}"
            if name in generated
            else f"removed solver/schema/v1/{name}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
