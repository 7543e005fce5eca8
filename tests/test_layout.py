"""The package's layering, read from the import statements of every module (no import runs).

data -> methods -> privacy: ``privacy/`` is pure torch/numpy (no Lightning, nothing from the
rest of the package), ``data/`` reads and prepares graphs and knows nothing of mechanisms or
methods, and ``methods/`` uses ``data/`` only for its DataModules.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "lightning_dpgnn"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[str, tuple[str, ...]]]:
    """``(absolute module, imported names)`` for every import statement of ``path``."""
    name = _module_name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: list[tuple[str, tuple[str, ...]]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, ()) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            names = tuple(alias.name for alias in node.names)
            if not node.module:  # ``from . import x``: each name is a module
                found += [(f"{module}.{n}", ()) for n in names]
            else:
                found.append((module, names))
    return found


def _modules(sub: str) -> list[Path]:
    return sorted((PACKAGE / sub).rglob("*.py"))


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_the_import_parser_resolves_relative_imports():
    found = dict(_imports(PACKAGE / "methods" / "base.py"))
    assert "lightning_dpgnn.privacy" in found
    assert "lightning" in found


@pytest.mark.parametrize("path", _modules("privacy"), ids=lambda p: p.name)
def test_privacy_imports_no_lightning_and_nothing_else_of_the_package(path):
    for module, _ in _imports(path):
        assert not _within(module, "lightning"), f"{path.name} imports {module}"
        if _within(module, "lightning_dpgnn"):
            assert _within(module, "lightning_dpgnn.privacy"), f"{path.name} imports {module}"


@pytest.mark.parametrize("path", _modules("data"), ids=lambda p: p.name)
def test_data_imports_nothing_from_privacy_or_methods(path):
    for module, _ in _imports(path):
        for banned in ("privacy", "methods", "loops"):
            assert not _within(module, f"lightning_dpgnn.{banned}"), f"{path.name}: {module}"


@pytest.mark.parametrize("path", _modules("methods"), ids=lambda p: p.name)
def test_methods_use_data_only_for_its_datamodules(path):
    for module, names in _imports(path):
        if not _within(module, "lightning_dpgnn.data"):
            continue
        assert module in ("lightning_dpgnn.data", "lightning_dpgnn.data.datamodules"), module
        allowed = ("NodeDataSource", "TrainsFromGraph")  # the data modules' protocols
        assert all(n.endswith("DataModule") or n in allowed for n in names), names


def test_the_suite_uses_a_temporary_processed_cache_by_itself():
    """``tests/conftest.py`` points ``$DPGNN_CACHE`` at a temporary folder unless the caller set
    one: the suite never writes to the user's home cache (``~/.cache/lightning_dpgnn``)."""
    from lightning_dpgnn.data.paths import resolve_cache_dir

    cache = resolve_cache_dir(None).resolve()
    home = (Path.home() / ".cache").resolve()
    assert home not in (cache, *cache.parents), f"the tests would write to {cache}"


def test_setuptools_has_nothing_to_warn_about():
    """Every folder that ships files is a listed package (setuptools warns about data-only
    folders it would install implicitly, like ``zoo/recipes``), and the licence is an SPDX
    string (a TOML table is deprecated). A wheel built from the checkout then prints no
    setuptools warning."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert isinstance(config["project"]["license"], str)
    tool = config["tool"]["setuptools"]
    shipped = set()
    for package, folder in tool["package-dir"].items():
        for path in (ROOT / folder).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                rel = path.parent.relative_to(ROOT / folder).parts
                shipped.add(".".join((package, *rel)))
    assert shipped == set(tool["packages"]), "list these folders as packages in pyproject.toml"
