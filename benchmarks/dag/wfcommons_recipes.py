"""Synthetic WfCommons workflows of 300-1,000 tasks, generated at run time by the
``wfcommons`` package's WfChef recipes (realistic structure and runtime / file-size
distributions fitted to real execution traces), seeded, written to a temporary file in the
WfCommons JSON form and read back by our own loader.

Nothing is copied from the public instances: the recipe statistics ship inside the
``wfcommons`` package (PyPI, `pip install wfcommons`; https://github.com/wfcommons/WfCommons,
version 1.6, ``wfcommons/wfchef/recipes/*/``), and the workflows are drawn here.
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

import numpy as np

from placement.models.dag.formats.loaders import load_wfcommons
from placement.models.dag.instance import DagInstance, DagLink, DagMachine

RECIPES = {
    "blast": "BlastRecipe",
    "bwa": "BwaRecipe",
    "cycles": "CyclesRecipe",
    "epigenomics": "EpigenomicsRecipe",
    "1000genome": "GenomeRecipe",
    "montage": "MontageRecipe",
    "seismology": "SeismologyRecipe",
    "soykb": "SoykbRecipe",
    "srasearch": "SrasearchRecipe",
}
"""Our name -> the WfChef recipe class (``wfcommons.wfchef.recipes``)."""


def available() -> str | None:
    """None when the ``wfcommons`` package can be imported, else why not."""
    try:
        # Optional and slow to import (pandas, scipy): only when a generated workflow is asked.
        import wfcommons  # noqa: F401
    except ImportError as exc:
        return f"the wfcommons package is not installed ({exc}); pip install wfcommons"
    return None


def generate_workflow(
    recipe: str,
    tasks: int,
    seed: int,
    machines: list[DagMachine] | None = None,
    links: list[DagLink] | None = None,
) -> DagInstance:
    """A ``recipe`` workflow of at most ``tasks`` tasks drawn with ``seed`` (Python's and
    numpy's global generators, which WfChef draws from), on a machine set (default:
    ``default_machine_set()``)."""
    # Optional dependency, imported only when a generated workflow is asked for.
    from wfcommons import WorkflowGenerator
    from wfcommons.wfchef import recipes

    cls = getattr(recipes, RECIPES[recipe])
    random.seed(seed)
    np.random.seed(seed)
    workflow = WorkflowGenerator(cls.from_num_tasks(tasks)).build_workflow()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{recipe}-{tasks}-s{seed}.json"
        workflow.write_json(path)
        return load_wfcommons(path, machines, links, name=f"{recipe}-{tasks}-s{seed}")
