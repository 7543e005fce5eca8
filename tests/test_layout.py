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


def _tangles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """The import cycles of a directed graph: its strongly connected components of two or
    more nodes (Tarjan), each sorted; ``[]`` when it has none."""
    graph: dict[str, list[str]] = {}
    for a, b in sorted(edges):
        graph.setdefault(a, []).append(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = stack[stack.index(v):]
            del stack[stack.index(v):]
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_finds_a_cycle():
    assert _tangles({("methods", "publish"), ("publish", "methods")}) == [
        ["methods", "publish"]]
    assert _tangles({("zoo", "methods"), ("methods", "publish"), ("zoo", "publish")}) == []
    assert _tangles({("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")}) == [["a", "b", "c"]]


def test_no_import_cycle_joins_methods_zoo_callbacks_and_publish():
    arrows = _group_arrows()
    cycles = _tangles(set(arrows))
    assert not cycles, f"import cycles between groups: {cycles}, e.g. {arrows}"
    assert ("methods", "publish") in arrows  # save_pretrained & co. use publish/


#: every module of the package, ``callbacks/`` and ``zoo/`` included, by import name
MODULES = {_module_name(p): p for folder in PACKAGE_DIRS.values() for p in folder.rglob("*.py")}


def _root_exports() -> dict[str, str]:
    """The package root's lazy exports (``_EXPORTS``: ``"GAP" -> "methods"``), as modules."""
    for node in ast.walk(ast.parse((PACKAGE / "__init__.py").read_text())):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            if isinstance(target, ast.Name) and target.id == "_EXPORTS":
                exports = ast.literal_eval(node.value)
                return {k: f"lightning_dpgnn.{v}" for k, v in exports.items()}
    raise AssertionError("lightning_dpgnn/__init__.py has no _EXPORTS table")


ROOT_EXPORTS = _root_exports()


def _targets(module: str, names: tuple[str, ...] | list[str]) -> set[str]:
    """The modules an import of ``names`` from ``module`` runs: a submodule when the name is
    one, the module a name of the package root is exported from (PEP 562), else ``module``."""
    if module != "lightning_dpgnn" and module not in MODULES:
        return set()  # not ours
    found = set()
    for n in names:
        if f"{module}.{n}" in MODULES:
            found.add(f"{module}.{n}")
        else:
            found.add(ROOT_EXPORTS.get(n, module) if module == "lightning_dpgnn" else module)
    return found or {module}


def _root_attributes(tree: ast.AST) -> set[str]:
    """What ``lightning_dpgnn.NAME`` and ``getattr(lightning_dpgnn, ...)`` reach through the
    package root (a computed name: every export)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and (
            node.value.id == "lightning_dpgnn"
        ):
            found |= _targets("lightning_dpgnn", [node.attr])
        elif isinstance(node, ast.Call) and ast.unparse(node.func) == "getattr" and (
            node.args and ast.unparse(node.args[0]) == "lightning_dpgnn"
        ):
            name = node.args[1]
            found |= (_targets("lightning_dpgnn", [name.value]) if isinstance(name, ast.Constant)
                      else set(ROOT_EXPORTS.values()))
    return found


def _module_graph() -> dict[str, set[str]]:
    """``module -> the package's modules it imports``, every import counted (those inside
    functions too; not ``if TYPE_CHECKING:``), and attribute access on the package root."""
    graph = {}
    for name, path in MODULES.items():
        found = _root_attributes(ast.parse(path.read_text(), str(path)))
        for module, names in _imports(path, runtime_only=True):
            found |= _targets(module, names)
        graph[name] = found - {name}
    return graph


def _reach(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for m in graph.get(todo.pop(), ()):
            if m not in seen:
                seen.add(m)
                todo.append(m)
    return seen


def test_the_module_graph_sees_function_local_imports_and_the_package_root():
    graph = _module_graph()
    assert "lightning_dpgnn._cli" in graph["lightning_dpgnn.cli"]  # inside main()
    assert "lightning_dpgnn.publish.hub" in graph["lightning_dpgnn.methods.base"]  # inside a method
    assert "lightning_dpgnn.methods" in graph["lightning_dpgnn.zoo.registry"]  # getattr(root, ..)
    assert "lightning_dpgnn.methods" in _targets("lightning_dpgnn", ["GAP"])


def test_no_module_of_the_package_is_in_an_import_cycle():
    """Every import counts, those inside functions included (``cli`` and ``_cli`` imported each
    other; ``dpgnn zoo build`` went ``cli -> zoo.cli -> zoo.registry -> cli``)."""
    graph = _module_graph()
    assert {"lightning_dpgnn.cli", "lightning_dpgnn._cli", "lightning_dpgnn.zoo.cli"} <= set(graph)
    cycles = _tangles({(a, b) for a, targets in graph.items() for b in targets})
    assert cycles == [], f"import cycles: {cycles}"


def test_publish_reaches_no_method_and_the_zoo_registry_no_command_line():
    """``publish/`` reads a model through its interface: no path of imports (through the
    package root included) leads from it to ``methods/``; the zoo registry runs recipes with
    the LightningCLI class, not through the ``dpgnn`` entry point."""
    graph = _module_graph()
    for module in (m for m in graph if _within(m, "lightning_dpgnn.publish")):
        reached = _reach(graph, module)
        assert not [m for m in reached if _within(m, "lightning_dpgnn.methods")], module
    reached = _reach(graph, "lightning_dpgnn.zoo.registry")
    assert not reached & {"lightning_dpgnn.cli", "lightning_dpgnn.zoo.cli"}


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
#: the shared modules of ``benchmarks/`` (runner, settings, summarizer and its table
#: declarations): the only ones a benchmark script may import (``benchmarks/README.md``)
BENCHMARK_SHARED = {"common", "settings", "summarize", "tables"}


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


#: the method classes the package root exports (``PrivateModule`` is their base, not one)
METHOD_NAMES = sorted(n for n, m in ROOT_EXPORTS.items()
                      if m == "lightning_dpgnn.methods" and n != "PrivateModule")


@pytest.mark.parametrize("path", _modules("publish"), ids=lambda p: p.name)
def test_publish_names_no_method_and_sniffs_no_attribute_of_a_model(path):
    """The card and the hub gate read a model's guarantees (``model.guarantees()``) and its own
    description (``model.describe()``): no method class is named, not even in prose, and no
    attribute of a model is probed with ``getattr`` / ``hasattr``."""
    import re

    text = path.read_text()
    named = [n for n in METHOD_NAMES if re.search(rf"\b{n}\b", text)]
    assert named == [], f"{path.name} names {named}"
    probes = [ast.unparse(node) for node in ast.walk(ast.parse(text))
              if isinstance(node, ast.Call) and ast.unparse(node.func) in ("getattr", "hasattr")
              and node.args and ast.unparse(node.args[0]) in ("model", "cls")]
    assert probes == [], f"{path.name} probes {probes}"


def _level_string_comparisons(path: Path) -> list[str]:
    """``x == "node"``, ``x != "none"``, ``x in ("edge", "node")``, ... in ``path``."""
    levels = {"none", "edge", "node", "ldp"}

    def is_level(node: ast.AST) -> bool:
        items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
        return bool(items) and all(
            isinstance(i, ast.Constant) and i.value in levels for i in items)

    return [ast.unparse(node) for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Compare)
            and any(isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) for op in node.ops)
            and any(map(is_level, [node.left, *node.comparators]))]


#: the modules that compare privacy levels as ``Level`` only: every module of the package,
#: the zoo and the callbacks (argument parsing reads strings through ``Level.of``)
LEVEL_TYPED = sorted({*PACKAGE.rglob("*.py"), *_modules("zoo"), *_modules("callbacks")})


@pytest.mark.parametrize("path", LEVEL_TYPED, ids=lambda p: p.name)
def test_the_outer_ring_compares_privacy_levels_as_levels_not_strings(path):
    assert _level_string_comparisons(path) == []
