"""The model zoo: recipes (YAML configs for ``dpgnn fit --config``), the registry of private
models and ``dpgnn zoo``. The hub folder format and the model cards live in
:mod:`lightning_dpgnn.publish`.

>>> from lightning_dpgnn import zoo
>>> zoo.list()                        # the registry as a table
>>> model = zoo.load("gap-edge-csbm-eps1", build=True)   # a local build, the hub, or built now
>>> probs = model.predict_step(zoo.data("gap-edge-csbm-eps1"), 0)   # its training graph
"""

from pathlib import Path

from .registry import ZooEntry, build, entries, entry, load, push, table

RECIPES = Path(__file__).parent / "recipes"

__all__ = ["list", "recipes", "recipe_path", "entries", "entry", "load", "data", "build",
           "push", "ZooEntry"]


def list():  # noqa: A001 - public name fixed by the design (zoo.list())
    """The published models of the registry as a table (a :class:`pandas.DataFrame`)."""
    return table()


def data(name: str):
    """The graph zoo entry ``name`` is trained on (:meth:`ZooEntry.data`)."""
    return entry(name).data()


def recipes() -> "list[str]":
    """Names of the bundled recipes (``zoo/recipes/<name>.yaml``)."""
    return sorted(p.stem for p in RECIPES.glob("*.yaml"))


def recipe_path(name: str) -> Path:
    """Path of a bundled recipe, with a clear error listing the known ones."""
    path = RECIPES / f"{name}.yaml"
    if not path.exists():
        raise ValueError(f"unknown recipe {name!r}; known: {', '.join(recipes()) or '(none yet)'}")
    return path
