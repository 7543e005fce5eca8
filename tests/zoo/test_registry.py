"""The zoo registry, ``zoo.list()`` / ``zoo.load()`` and ``dpgnn zoo``; one entry built end to
end (the demo entry on the embedded graph, shortened) and published to the local hub."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import yaml
from huggingface_hub import ModelCard
from lightning_dpgnn.zoo import hub, registry
from zoo_testing import quiet_trainer

import lightning_dpgnn
from lightning_dpgnn import GAP, zoo
from lightning_dpgnn.cli import main

ROOT = Path(__file__).resolve().parents[2]
ENTRIES = registry.entries()


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
        assert (e.level, args["x_eps"] + args["y_eps"]) == ("ldp", e.epsilon)
    else:
        assert e.level == "ldp"
    assert recipe["data"]["init_args"]["name"] in e.dataset
    if e.accuracy:  # the accuracy is a row of the benchmark file it cites
        source = ROOT / e.accuracy["source"].split(" ")[0]
        a = e.accuracy
        assert f"{a['mean']} ({a['low']}–{a['high']})" in source.read_text()
        assert e.accuracy["command"].split()[2] in {
            f"benchmarks/{p.name}" for p in (ROOT / "benchmarks").glob("*.py")}


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
    assert t.loc["gap-node-facebook-eps8", "test acc % (95% CI)"] == "83.5 (82.9–84.1)"


def test_unknown_entries_are_reported_with_the_known_ones(capsys):
    with pytest.raises(SystemExit) as err:
        main(["zoo", "info", "nope"])
    assert err.value.code == 2
    assert "unknown zoo model 'nope'" in capsys.readouterr().err


def test_build_push_pull_and_load_one_entry_end_to_end(hub, tmp_path, monkeypatch, capsys):
    name = "gap-edge-csbm-eps1"
    monkeypatch.setenv(registry.BUILD_ENV, str(tmp_path / "built"))
    fast = ["--trainer.max_epochs", "4", "--model.init_args.encoder_epochs", "2",
            "--model.init_args.classifier_epochs", "2"]
    main(["zoo", "build", name, "--override", *fast])
    folder = tmp_path / "built" / name
    assert "built" in capsys.readouterr().out
    card = ModelCard.load(folder / "README.md")
    assert card.data.privacy["level"] == "edge" and card.data.privacy["epsilon"] <= 1.0
    assert card.data.privacy["unit"].startswith("one undirected edge")
    assert "--override --trainer.max_epochs 4" in card.text  # the card says how it was built
    assert "This model's test accuracy" in card.text

    main(["zoo", "info", name])
    assert "verified" in capsys.readouterr().out
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
    assert local.privacy_spent() == cached.privacy_spent()
    report = json.loads((folder / "privacy_report.json").read_text())
    assert report["report"] == cached.privacy_spent().to_dict()
    with pytest.raises(FileNotFoundError, match="dpgnn zoo build"):
        zoo.load("gap-node-facebook-eps8", prefer_local=False)


def test_build_refuses_before_writing_when_the_model_may_not_be_published(tmp_path):
    with pytest.raises(hub.PublishError, match="reproducible"):
        registry.build("gap-edge-csbm-eps1", tmp_path / "seeded", overrides=[
            "--trainer.max_epochs", "2", "--model.init_args.encoder_epochs", "1",
            "--model.init_args.classifier_epochs", "1", "--model.init_args.noise_seed", "1"])
    assert not (tmp_path / "seeded").exists()


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
    assert all(name in out for name in ENTRIES) and "71.2 (70.7–71.6)" in out
    with pytest.raises(SystemExit) as err:
        main(["zoo", "build"])
    assert err.value.code == 2
    assert capsys.readouterr().err.startswith("error: give one entry name or --all")
