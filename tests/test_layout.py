"""The package's layering, read from the import statements of every module (no import runs).

data -> methods -> privacy: ``privacy/`` is pure torch/numpy (no Lightning, nothing from the
rest of the package), ``data/`` reads and prepares graphs and knows nothing of mechanisms or
methods, and ``methods/`` uses ``data/`` only for its DataModules.

zoo, callbacks -> methods -> publish: ``publish/`` (the hub format and the model card) imports
nothing of ``methods/``, ``zoo/`` or ``callbacks/``, and no import cycle joins those four
(``callbacks/`` and ``zoo/`` are top-level folders mapped into the package: their modules are
read under their import names, ``lightning_dpgnn.callbacks`` and ``lightning_dpgnn.zoo``).
Every import counts, those inside functions included; only ``if TYPE_CHECKING:`` blocks,
which never run, are left out of the cycle check.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.quick  # the check of an install (pytest -m quick)

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "lightning_dpgnn"
#: import name -> folder, as pyproject.toml maps them (``lightning_dpgnn.zoo`` -> ``zoo/``)
PACKAGE_DIRS = {
    name: ROOT / folder
    for name, folder in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"][
        "setuptools"]["package-dir"].items()
}
#: the groups whose import graph must have no cycle
GROUPS = ("methods", "zoo", "callbacks", "publish")


def _module_name(path: Path) -> str:
    """The import name of ``path``, through the package-dir mapping (longest folder first)."""
    path = path.resolve()
    for name, folder in sorted(PACKAGE_DIRS.items(), key=lambda kv: -len(kv[1].parts)):
        if folder.resolve() in path.parents:
            parts = [*name.split("."), *path.relative_to(folder.resolve()).with_suffix("").parts]
            break
    else:
        raise ValueError(f"{path} is in no package")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _type_checking_only(tree: ast.AST) -> set[int]:
    """``id`` of every node inside an ``if TYPE_CHECKING:`` block."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for stmt in node.body:
                skipped |= {id(n) for n in ast.walk(stmt)}
    return skipped


def _imports(path: Path, runtime_only: bool = False) -> list[tuple[str, tuple[str, ...]]]:
    """``(absolute module, imported names)`` for every import statement of ``path``
    (``runtime_only``: without those under ``if TYPE_CHECKING:``)."""
    name = _module_name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: list[tuple[str, tuple[str, ...]]] = []
    tree = ast.parse(path.read_text(), str(path))
    skipped = _type_checking_only(tree) if runtime_only else set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
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
    """The modules of group ``sub`` (``methods``, ``zoo``, ...), wherever its folder is."""
    folder = PACKAGE_DIRS.get(f"lightning_dpgnn.{sub}", PACKAGE / sub)
    return sorted(folder.rglob("*.py"))


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
        if _within(module, "lightning_dpgnn") and module not in LEAVES:
            assert _within(module, "lightning_dpgnn.privacy"), f"{path.name} imports {module}"


#: leaves every layer may import: the vocabulary of privacy levels and units, and the
#: declared tensor caches, the Poincaré-ball geometry and the warning filters of what the
#: library causes (they import nothing of the package)
LEAVES = ("lightning_dpgnn.levels", "lightning_dpgnn.caches", "lightning_dpgnn.hyperbolic",
          "lightning_dpgnn._quiet")


@pytest.mark.parametrize("leaf", LEAVES)
def test_the_shared_leaves_import_nothing_of_the_package(leaf):
    path = PACKAGE / f"{leaf.rsplit('.', 1)[1]}.py"
    assert [m for m, _ in _imports(path) if _within(m, "lightning_dpgnn") or
            _within(m, "lightning")] == []


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
        if module == "lightning_dpgnn.data.simple":  # the simple-graph rule (invariant)
            assert set(names) <= {"require_simple"}, names
            continue
        assert module in ("lightning_dpgnn.data", "lightning_dpgnn.data.datamodules"), module
        allowed = ("NodeDataSource", "TrainsFromGraph")  # the data modules' protocols
        assert all(n.endswith("DataModule") or n in allowed for n in names), names


def test_the_import_parser_reads_the_mapped_folders_under_their_import_names():
    assert _module_name(ROOT / "zoo" / "registry.py") == "lightning_dpgnn.zoo.registry"
    assert _module_name(ROOT / "callbacks" / "__init__.py") == "lightning_dpgnn.callbacks"
    found = dict(_imports(ROOT / "callbacks" / "__init__.py"))
    assert "lightning_dpgnn.callbacks.privacy_audit" in found  # ``from .privacy_audit import``
    assert all(_modules(g) for g in GROUPS)


def _group(module: str) -> str | None:
    for g in GROUPS:
        if _within(module, f"lightning_dpgnn.{g}"):
            return g
    return None


def _group_arrows() -> dict[tuple[str, str], list[str]]:
    """``(importer group, imported group) -> [module: import, ...]`` over the runtime imports
    of every module of the four groups."""
    arrows: dict[tuple[str, str], list[str]] = {}
    for g in GROUPS:
        for path in _modules(g):
            for module, names in _imports(path, runtime_only=True):
                targets = [module] + [f"{module}.{n}" for n in names]
                to = next((t for t in map(_group, targets) if t not in (None, g)), None)
                if to is not None:
                    arrows.setdefault((g, to), []).append(f"{_module_name(path)}: {module}")
    return arrows


def _cycles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """Every elementary cycle of a small directed graph (as node lists)."""
    found = []
    nodes = sorted({a for a, _ in edges} | {b for _, b in edges})

    def walk(start: str, node: str, path: list[str]) -> None:
        for a, b in sorted(edges):
            if a != node:
                continue
            if b == start:
                found.append([*path, b])
            elif b not in path and b > start:  # each cycle once, from its smallest node
                walk(start, b, [*path, b])

    for n in nodes:
        walk(n, n, [n])
    return found


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({("methods", "publish"), ("publish", "methods")}) == [
        ["methods", "publish", "methods"]]
    assert _cycles({("zoo", "methods"), ("methods", "publish"), ("zoo", "publish")}) == []


def test_no_import_cycle_joins_methods_zoo_callbacks_and_publish():
    arrows = _group_arrows()
    cycles = _cycles(set(arrows))
    detail = {" -> ".join(c): [arrows[(a, b)][0] for a, b in zip(c, c[1:], strict=False)]
              for c in cycles}
    assert not cycles, f"import cycles (one import per arrow): {detail}"
    assert ("methods", "publish") in arrows  # save_pretrained & co. use publish/


@pytest.mark.parametrize("path", _modules("publish"), ids=lambda p: p.name)
def test_publish_imports_nothing_from_methods_zoo_or_callbacks(path):
    """Publishing sits below the methods: it reads a model through its interface
    (``PublishableModel``), not through their classes, not even for type checking."""
    for module, names in _imports(path):
        for banned in ("methods", "zoo", "callbacks"):
            targets = [module] + [f"{module}.{n}" for n in names]
            assert not any(_within(t, f"lightning_dpgnn.{banned}") for t in targets), (
                f"{path.name} imports {module} {names}")


BENCHMARKS = ROOT / "benchmarks"
#: the shared modules of ``benchmarks/`` (runner, settings, summarizer): the only ones a
#: benchmark script may import (``benchmarks/README.md``)
BENCHMARK_SHARED = {"common", "settings", "summarize"}


@pytest.mark.parametrize("path", sorted(BENCHMARKS.glob("*.py")), ids=lambda p: p.name)
def test_a_benchmark_script_imports_no_other_script(path):
    """Scripts share code through ``common``, ``settings`` and ``summarize`` only, never by
    importing each other (every import counts, those inside functions included)."""
    local = {p.stem for p in BENCHMARKS.glob("*.py")}
    imported = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            imported.add(node.module.split(".")[0])
    assert imported & local <= BENCHMARK_SHARED, f"{path.name} imports {imported & local}"


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
