"""Recipes: YAML configs for ``dpgnn fit --config`` (``zoo/recipes/<name>.yaml``)."""

from pathlib import Path

RECIPES = Path(__file__).parent / "recipes"


def list() -> list[str]:  # noqa: A001 - public name fixed by the design (zoo.list())
    """Names of the bundled recipes (``zoo/recipes/<name>.yaml``)."""
    return sorted(p.stem for p in RECIPES.glob("*.yaml"))


def recipe_path(name: str) -> Path:
    """Path of a bundled recipe, with a clear error listing the known ones."""
    path = RECIPES / f"{name}.yaml"
    if not path.exists():
        raise ValueError(f"unknown recipe {name!r}; known: {', '.join(list()) or '(none yet)'}")
    return path
