"""The zoo registry, ``zoo.list()`` / ``zoo.load()`` and ``dpgnn zoo``; one entry built end to
end (the demo entry on the embedded graph, shortened) and published to the local hub."""

from __future__ import annotations

import importlib
import json
import math
from pathlib import Path

import pytest
import torch
import yaml
from huggingface_hub import ModelCard
from lightning_dpgnn.zoo import registry
from zoo_testing import quiet_trainer

import lightning_dpgnn
from lightning_dpgnn import GAP, zoo
from lightning_dpgnn.cli import main
from lightning_dpgnn.publish import hub

ROOT = Path(__file__).resolve().parents[2]
ENTRIES = registry.entries()
MEASURED = sorted(name for name, e in ENTRIES.items() if e.accuracy)


#: renamed hyper-parameters: the name a benchmark row recorded -> the name a recipe uses
RENAMED = {"x_eps": "x_epsilon", "y_eps": "y_epsilon"}

def _benchmark(module: str, monkeypatch):
    """A module of ``benchmarks/`` (they import each other by bare name)."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    return importlib.import_module(module)


def _plain(value):
    """``value`` as JSON would hold it (tuples as lists)."""
    return json.loads(json.dumps(value))


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_every_entry_matches_its_recipe_and_its_benchmark(name):
    e = ENTRIES[name]
    recipe = yaml.safe_load(e.recipe_path.read_text())
    model = recipe["model"]
    assert model["class_path"] == f"lightning_dpgnn.{e.method}"
    assert isinstance(getattr(lightning_dpgnn, e.method), type)
    args = model["init_args"]
    assert "noise_seed" not in args  # the zoo refuses reproducible noise
    if "privacy" in args:  # GAP, ProGAP
        assert (args["privacy"], args["epsilon"]) == (e.level, e.epsilon)
    elif e.method == "DPMLP":
        assert (e.level, args["epsilon"]) == ("node", e.epsilon)
    elif e.method == "LPGNN":  # features and labels: sequential composition per node
        assert (e.level, args["x_epsilon"] + args["y_epsilon"]) == ("ldp", e.epsilon)
    elif e.method == "HeteroRR":  # the edge release only: one guarantee
        assert (e.level, args["epsilon"], args["x_epsilon"]) == ("edge", e.epsilon, math.inf)
    else:
        assert e.level == "ldp"
    assert recipe["data"]["init_args"]["name"] in e.dataset


@pytest.mark.parametrize("name", MEASURED)
def test_each_registry_accuracy_is_its_benchmark_rows_at_the_recipes_own_settings(
    name, monkeypatch
):
    """The registry's mean and CI are recomputed from the rows of the results file it cites,
    and those rows were measured with exactly the recipe's settings: its preprocessing, its
    unit and epsilon, and (where a row records them) its hyper-parameters and early stopping.
    A recipe that drifts from its benchmark (a default changed, a setting forgotten) fails."""
    common = _benchmark("common", monkeypatch)
    e = ENTRIES[name]
    a = e.accuracy
    path = ROOT / a["source"]
    assert path.suffix == ".jsonl", "cite the rows (results/*.jsonl), not a table"
    rows = [r for r in common.load_rows(path)
            if all(r.get(k) == v for k, v in a["rows"].items()) and common.is_valid(r)]
    assert len(rows) == a["seeds"] == len({r["seed"] for r in rows})
    metric = "test_acc" if "test_acc" in rows[0] else "test_metric"
    cell = (round(v, 2) for v in common.bootstrap_ci([100 * r[metric] for r in rows]))
    assert (a["mean"], a["low"], a["high"]) == tuple(float(f"{v:.1f}") for v in cell)
    # what `dpgnn zoo build` compares one build with: these rows' single runs
    metric = "test_acc" if "test_acc" in rows[0] else "test_metric"
    assert sorted(e.benchmark_accuracies()) == pytest.approx(sorted(100 * r[metric] for r in rows))
    runs = e.benchmark_accuracies()
    assert "within" in e.compare_build(min(runs) / 100)
    assert "OUTSIDE" in e.compare_build((min(runs) - 0.5) / 100)
    assert "OUTSIDE" in e.compare_build((max(runs) + 0.5) / 100)
    script = Path(a["command"].split()[2])  # DPGNN_DATA=... python benchmarks/<script> ...
    assert script.name == Path(rows[0]["command"].split()[1]).name
    assert path.name == f"{script.stem}.jsonl" or f"--out {a['source']}" in a["command"]

    recipe = yaml.safe_load(e.recipe_path.read_text())
    init, data = recipe["model"]["init_args"], recipe["data"]["init_args"]
    model = getattr(lightning_dpgnn, e.method)(**init)  # no data: the settings only
    data_class = getattr(lightning_dpgnn.data, recipe["data"]["class_path"].rsplit(".", 1)[1])
    settings = _plain(common.datamodule_settings(data_class(**data)))
    stoppers = [c["init_args"] for c in recipe.get("trainer", {}).get("callbacks", [])
                if c["class_path"].endswith("DropEarlyStopping")]
    for r in rows:
        assert r["dataset"] == data["name"]
        if "preprocessing" in r:  # an option the row lacks (or the code renamed) is unset
            recorded = _plain(r["preprocessing"])
            keys = recorded.keys() | settings.keys()
            assert {k: recorded.get(k) for k in keys} == {k: settings.get(k) for k in keys}
        if "unit" in r:
            assert (r["unit"], r["target_epsilon"]) == (common.model_unit(model), init["epsilon"])
        for recorded in ("config", "hparams"):  # LPGNN / PGC rows record their model's
            # rows written before the budgets were renamed (x_eps -> x_epsilon, y_eps -> ...)
            names = {k: RENAMED.get(k, k) for k in r.get(recorded, {})}
            assert {k: init[names[k]] for k in names} == r.get(recorded, {})
        if "patience" in r:
            assert (r["patience"], r["max_epochs"]) == (
                stoppers[0].get("patience"), recipe["trainer"]["max_epochs"])
        if "epsilon_per_feature" in r:
            assert r["epsilon_per_feature"] == init["x_epsilon"]
        if "rounds" in r:  # GW-LDP: its FedAvg rounds, clients, partition, GNN and release
            assert (r["rounds"], r["clients"], r["dirichlet_alpha"], r["split"]) == (
                recipe["trainer"]["max_epochs"], data["num_clients"], data["dirichlet_alpha"],
                data["split"])
            assert {k: r[k] for k in ("gnn", "epsilon", "local_epochs", "embedding")} == {
                k: init[k] for k in ("gnn", "epsilon", "local_epochs", "embedding")}
            assert init["mode"] == "ldp" and init.get("size", "public") == "public"
            assert (r.get("fedavg_epsilon"), r.get("fedavg_clip")) == (
                init.get("fedavg_epsilon"), init.get("fedavg_clip")) and init["dp_fedavg"]
        if hasattr(model, "label_counts"):  # rows made before the option had none (False)
            assert r.get("label_counts", False) == model.label_counts, "re-run at today's default"


@pytest.mark.parametrize("script", ["make_recipes", "lpgnn_make_recipes", "baselines_accuracy"])
def test_the_recipes_are_what_their_benchmarks_settings_generate(script, monkeypatch):
    """A recipe is written by a script from the constants its benchmark runs with: a recipe
    edited by hand, or a benchmark setting changed without regenerating, fails here."""
    made = _benchmark(script, monkeypatch).recipes()
    for name, cfg in made.items():
        cfg = cfg[0] if isinstance(cfg, tuple) else cfg
        assert yaml.safe_load(zoo.recipe_path(name).read_text()) == _plain(cfg), name


def test_the_registry_covers_every_method_and_level_the_issue_asks_for():
    have = {(e.method, e.level) for e in ENTRIES.values()}
    assert have >= {("GAP", "edge"), ("GAP", "node"), ("ProGAP", "edge"), ("ProGAP", "node"),
                    ("LPGNN", "ldp"), ("PGC", "ldp"), ("DPMLP", "node")}
    datasets = {e.dataset for e in ENTRIES.values()}
    assert any(d.startswith("facebook100/") for d in datasets)
    assert {"musae-facebook", "cora"} <= datasets


def test_zoo_list_is_a_table_of_the_registry():
    t = zoo.list()
    assert list(t.index) == list(ENTRIES)
    assert {"method", "level", "epsilon", "test acc % (95% CI)", "repo_id"} <= set(t.columns)
    a = ENTRIES[MEASURED[0]].accuracy
    assert t.loc[MEASURED[0], "test acc % (95% CI)"] == f"{a['mean']} ({a['low']}–{a['high']})"


def test_dpgnn_zoo_list_is_narrow_and_lists_every_method_with_a_recipe(capsys):
    """``dpgnn zoo list`` printed a ~210-column table and had no PoinDP or HeteroRR entry
    although both have recipes (issue 41)."""
    main(["zoo", "list"])
    out = capsys.readouterr().out
    assert max(map(len, out.splitlines())) <= 100
    assert all(name in out for name in ENTRIES)
    assert {"PoinDP", "HeteroRR"} <= {e.method for e in ENTRIES.values()}


def test_unknown_entries_are_reported_with_the_known_ones(capsys):
    with pytest.raises(SystemExit) as err:
        main(["zoo", "info", "nope"])
    assert err.value.code == 2
    assert "unknown zoo model 'nope'" in capsys.readouterr().err


def test_build_push_pull_and_load_one_entry_end_to_end(hub, tmp_path, monkeypatch, capsys):
    name = "gap-edge-csbm-eps1"
    monkeypatch.setenv(registry.BUILD_ENV, str(tmp_path / "built"))
    monkeypatch.chdir(tmp_path)
    fast = ["--trainer.max_epochs", "4", "--model.init_args.encoder_epochs", "2",
            "--model.init_args.classifier_epochs", "2"]
    main(["zoo", "build", name, "--override", *fast])
    folder = tmp_path / "built" / name
    built = capsys.readouterr().out
    assert f"{name}: built {folder}" in built and "% (this build)" in built
    written = [p for p in tmp_path.rglob("*") if p.is_file() and folder not in p.parents]
    assert [p for p in written if "hub-cache" not in p.parts] == []  # no checkpoint left
    card = ModelCard.load(folder / "README.md")
    acc = card.data.measured_test_accuracy
    assert 0.0 <= acc <= 1.0 and f"test accuracy {100 * acc:.1f}% (this build)" in built
    assert card.data.privacy["level"] == "edge" and card.data.privacy["epsilon"] <= 1.0
    assert card.data.privacy["unit"].startswith("one undirected edge")
    assert "--override --trainer.max_epochs 4" in card.text  # the card says how it was built
    assert "This model's test accuracy" in card.text

    main(["zoo", "info", name])
    assert f"verified); test accuracy {100 * acc:.1f}% (this build)" in capsys.readouterr().out
    main(["zoo", "push", name, "--repo-id", "org/demo"])
    assert "pushed to org/demo" in capsys.readouterr().out
    main(["zoo", "pull", name, "--repo-id", "org/demo"])
    assert "verified; edge-level DP" in capsys.readouterr().out

    local = zoo.load(name)  # the local build
    hub.httpd.shutdown()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cached = zoo.load(name, repo_id="org/demo", prefer_local=False)  # the hub cache, offline
    dm = lightning_dpgnn.data.NodeDataModule("csbm")
    assert torch.equal(quiet_trainer(tmp_path).predict(local, dm)[0],
                       quiet_trainer(tmp_path).predict(cached, dm)[0])
    # the README's three lines: the entry's own graph, from its recipe, read transductively
    graph = zoo.data(name)
    assert torch.equal(graph.x, dm.data.x) and torch.equal(graph.edge_index, dm.data.edge_index)
    assert torch.allclose(local.predict_step(graph, 0), cached.predict_step(graph, 0))
    assert local.privacy_spent() == cached.privacy_spent()
    report = json.loads((folder / "privacy_report.json").read_text())
    assert report["report"] == cached.privacy_spent().to_dict()
    with pytest.raises(FileNotFoundError, match="dpgnn zoo build"):
        zoo.load("gap-node-rutgers89-eps8", prefer_local=False)


def test_build_refuses_before_writing_when_the_model_may_not_be_published(tmp_path):
    with pytest.raises(hub.PublishError, match="reproducible"):
        registry.build("gap-edge-csbm-eps1", tmp_path / "seeded", overrides=[
            "--trainer.max_epochs", "2", "--model.init_args.encoder_epochs", "1",
            "--model.init_args.classifier_epochs", "1", "--model.init_args.noise_seed", "1"])
    assert not (tmp_path / "seeded").exists()


def test_gwldp_entry_card_carries_its_interval_and_the_paper_code_mode_is_refused(tmp_path):
    """The GW-LDP entry's card states its benchmark interval and the one-run accuracy of its
    metric (``test/svm_acc``: the server's SVM on the release; a model fitted on a fifth of
    MUTAG here, the full build takes minutes); ``dpgnn zoo build`` refuses the paper-code reference
    mode (not differentially private) before any fit, and writes nothing."""
    import lightning as L

    from lightning_dpgnn import GWLDP
    from lightning_dpgnn.data import GraphDataModule

    e = ENTRIES["gwldp-mutag-eps8"]
    assert e.metric == "test/svm_acc" and e.accuracy["seeds"] == 10
    init = yaml.safe_load(e.recipe_path.read_text())["model"]["init_args"]
    model = GWLDP(**init, svm_c_grid=[1.0], svm_gamma_grid=[1.0])
    trainer = L.Trainer(max_epochs=1, logger=False, enable_progress_bar=False,
                        enable_checkpointing=False, enable_model_summary=False)
    full = GraphDataModule("mutag")
    full.setup()
    dm = GraphDataModule("mutag", graphs=[full.dataset[i] for i in range(0, 188, 5)],
                         split=(0.6, 0.2, 0.2), num_clients=4, dirichlet_alpha=5.0)
    trainer.fit(model, dm)
    measured = trainer.test(model, dm, verbose=False)[0][e.metric]
    model.save_pretrained(tmp_path / "gw", model_card_kwargs={**e.card_kwargs(),
                                                               "measured_accuracy": measured})
    card = (tmp_path / "gw" / "README.md").read_text()
    a = e.accuracy
    assert f"**{a['mean']}%** (95% CI {a['low']}–{a['high']}) over 10 seeds" in card
    assert f"This model's test accuracy (one run): {100 * measured:.1f}%" in card
    with pytest.raises(hub.PublishError, match="NOT differentially private"):
        registry.build("gwldp-mutag-eps8", tmp_path / "paper",
                       overrides=["--model.init_args.mode", "paper-code"])
    assert not (tmp_path / "paper").exists()


def test_a_pulled_model_predicts_with_the_gap_api(gap_edge, csbm, tmp_path):
    model, before = gap_edge
    model.save_pretrained(tmp_path / "m")
    loaded = GAP.from_pretrained(tmp_path / "m")
    assert torch.equal(loaded.predict_step(csbm.data, 0), before)


def test_the_docs_table_lists_every_entry_with_its_guarantee_and_accuracy():
    doc = (ROOT / "docs" / "zoo.md").read_text()
    rows = {line.split("|")[1].strip(): line for line in doc.splitlines()
            if line.startswith("| ") and line.count("|") == 8}
    for name, e in ENTRIES.items():
        assert name in rows, name
        cells = [c.strip() for c in rows[name].split("|")[1:-1]]
        assert (cells[3], float(cells[4])) == (e.level, e.epsilon)
        if e.accuracy:
            assert cells[6] == f"{e.accuracy['mean']} ({e.accuracy['low']}–{e.accuracy['high']})"


def test_dpgnn_zoo_list_prints_every_entry_and_build_needs_a_name(capsys):
    main(["zoo", "list"])
    out = capsys.readouterr().out
    assert all(name in out for name in ENTRIES)
    assert all(f"{e.accuracy['mean']} ({e.accuracy['low']}–" in out
               for e in ENTRIES.values() if e.accuracy)
    with pytest.raises(SystemExit) as err:
        main(["zoo", "build"])
    assert err.value.code == 2
    assert capsys.readouterr().err.startswith("error: give one entry name or --all")
