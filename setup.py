"""Map the top-level code folders into the ``placement`` import namespace.

``solver/``, ``models/`` and ``api/`` install as ``placement.solver``, ``placement.models``
and ``placement.api`` (regular and editable installs), so an application that embeds the
library gets no top-level module called ``models`` or ``api``. Everything else is in
pyproject.toml.
"""

from setuptools import find_packages, setup

FOLDERS = ("solver", "models", "api")

packages = []
package_dir = {}
for folder in FOLDERS:
    for sub in [folder, *(f"{folder}.{p}" for p in find_packages(folder))]:
        name = f"placement.{sub}"
        packages.append(name)
        package_dir[name] = sub.replace(".", "/")

setup(
    packages=packages,
    package_dir=package_dir,
    package_data={"placement.solver.schema": ["proto/placement/v1/*.proto"]},
)
