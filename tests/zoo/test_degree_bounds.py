"""Node-level recipes and benchmarks declare the degree bound D from public knowledge, never read
it off the private graph (design invariant 1, issue 27 fault 2).

The graphs are read through ``DPGNN_DATA`` to compute their observed maximum degree: a check of
the recipes, not a publication. A recipe whose ``max_degree`` equals the observed maximum (the
bound used before issue 27: musae-facebook 709, Rutgers89 568, Wisconsin87 2,999) fails, and so
does one below it (the fit would refuse the graph) or one without a stated source."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
import torch
import yaml
from lightning_dpgnn.zoo import registry

from lightning_dpgnn.data import NodeDataModule, count_repeated_edges
from lightning_dpgnn.privacy.aggregation import degrees

ROOT = Path(__file__).resolve().parents[2]
RECIPES = ROOT / "zoo" / "recipes"


def _node_recipes() -> list[Path]:
    out = []
    for path in sorted(RECIPES.glob("*.yaml")):
        init = yaml.safe_load(path.read_text())["model"]["init_args"]
        if init.get("max_degree") is not None:
            out.append(path)
    return out


NODE_RECIPES = _node_recipes()
_OBSERVED: dict[str, int] = {}


def _observed_max_degree(data_args: dict) -> int:
    key = repr(sorted(data_args.items()))
    if key not in _OBSERVED:
        data = NodeDataModule(**data_args).data
        assert count_repeated_edges(data.edge_index, data.num_nodes) == 0  # invariant 12
        in_deg, out_deg = degrees(data.edge_index, data.num_nodes)
        _OBSERVED[key] = int(torch.maximum(in_deg, out_deg).max())
    return _OBSERVED[key]


def test_the_node_level_recipes_are_found():
    names = {p.stem for p in NODE_RECIPES}
    assert {"gap-node-rutgers89", "gap-node-wisconsin87", "progap-node-rutgers89",
            "dpgnn-node-rutgers89"} <= names
    # musae-facebook has no public degree bound (review 2, F2): no node-level recipe on it
    assert not any(name.endswith("node-facebook") for name in names)


@pytest.mark.parametrize("path", NODE_RECIPES, ids=lambda p: p.stem)
def test_a_recipes_degree_bound_is_declared_not_the_graphs_observed_maximum(path):
    text = path.read_text()
    recipe = yaml.safe_load(text)
    d = int(recipe["model"]["init_args"]["max_degree"])
    observed = _observed_max_degree(recipe["data"]["init_args"])
    assert d != observed, f"{path.name}: max_degree {d} is the graph's observed maximum degree"
    assert d > observed, f"{path.name}: max_degree {d} is below the graph's maximum {observed}"
    assert f"# max_degree {d}: " in text, f"{path.name}: say where max_degree {d} comes from"


def _settings(monkeypatch):
    """``benchmarks/settings.py``, where every benchmark and recipe takes its bounds from."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    return importlib.import_module("settings")


def test_the_benchmarks_bounds_are_the_declared_ones(monkeypatch):
    settings = _settings(monkeypatch)
    # musae-facebook has no public bound (review 2, F2): no node-level row declares one
    assert set(settings.MAX_DEGREE) == set(settings.DATASETS) - {"musae-facebook"}
    for name, d in settings.MAX_DEGREE.items():
        assert d != settings.OBSERVED_MAX_DEGREE[name] and settings.DEGREE_BOUND_SOURCE[name]
        args = {"name": name, **settings.DATASETS[name]}
        assert _observed_max_degree(args) == settings.OBSERVED_MAX_DEGREE[name]


@pytest.mark.parametrize("path", NODE_RECIPES, ids=lambda p: p.stem)
def test_a_recipes_header_is_its_declared_bounds_source(path, monkeypatch):
    """The header names the source :data:`settings.DEGREE_BOUND_SOURCE` gives (the recipe
    scripts write it with ``settings.degree_comment``)."""
    settings = _settings(monkeypatch)
    text = path.read_text()
    data = yaml.safe_load(text)["data"]["init_args"]["name"]
    assert settings.degree_comment(path.stem, data) in text


def test_registry_entries_state_the_recipes_bound_and_its_source():
    for e in registry.entries().values():
        recipe = yaml.safe_load(e.recipe_path.read_text())
        d = recipe["model"]["init_args"].get("max_degree")
        if e.level != "node" or d is None:
            continue
        assert e.unit.endswith(f"among graphs whose degrees are <= {d:,}"), e.name
        assert e.degree_bound_source, f"{e.name}: the registry says where D comes from"
