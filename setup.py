"""Map the top-level code folders into the ``placement`` import namespace.

``solver/``, ``models/``, ``api/`` and ``benchmarks/`` install as ``placement.solver``,
``placement.models``, ``placement.api`` and ``placement.benchmarks`` (regular and editable
installs), so an application that embeds the library gets no top-level module called
``models`` or ``api``. ``benchmarks/reliability/`` (the CI's fuzzing, overload, fault and
audit scripts, run from a checkout) stays out of the wheel. Everything else is in
pyproject.toml.
"""

from setuptools import find_packages, setup

FOLDERS = ("solver", "models", "api", "benchmarks")
EXCLUDED = ("benchmarks.reliability",)
"""Packages of the folders that are not installed."""

packages = ["placement"]
package_dir = {"placement": "placement"}
"""``placement`` itself: ``placement/__init__.py`` (solve, check, load, __version__) and
``py.typed``."""
for folder in FOLDERS:
    for sub in [folder, *(f"{folder}.{p}" for p in find_packages(folder))]:
        if sub in EXCLUDED or sub.startswith(tuple(f"{e}." for e in EXCLUDED)):
            continue
        name = f"placement.{sub}"
        packages.append(name)
        package_dir[name] = sub.replace(".", "/")

PROTO = "placement.solver.schema.proto.placement.v1"
"""The ``.proto`` files' folder (``solver/schema/proto/placement/v1/``): data, but setuptools
sees an importable folder and warns that it "would be ignored" unless it is listed as a
package of its own (with its parents), its files as that package's data."""
for name in ("placement.solver.schema.proto", "placement.solver.schema.proto.placement", PROTO):
    packages.append(name)
    package_dir[name] = "solver/" + name.removeprefix("placement.solver.").replace(".", "/")

setup(
    packages=packages,
    package_dir=package_dir,
    package_data={"placement": ["py.typed"], PROTO: ["*.proto"]},
)
