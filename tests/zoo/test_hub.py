"""save_pretrained / push_to_hub / from_pretrained: the guarantee travels with the weights.

Every round trip runs against a folder or the hub server of ``zoo_testing.py`` on 127.0.0.1;
nothing touches the network. Every method's round trip, with the audit of what its published
folder holds, is in tests/privacy/test_attacks.py (beside the checkpoint audit)."""

from __future__ import annotations

import json

import pytest
import torch
from huggingface_hub import ModelCard, constants
from lightning_dpgnn.callbacks import PrivacyBudget
from safetensors.torch import load_file, save_file
from zoo_testing import quiet_trainer

import lightning_dpgnn
from lightning_dpgnn import GAP, LPGNN, PGCLinkPrediction, PrivateModule
from lightning_dpgnn.data import NodeDataModule
from lightning_dpgnn.methods import DPMLP
from lightning_dpgnn.publish.hub import (
    CONFIG,
    OUTPUTS,
    REPORT,
    WEIGHTS,
    PublishError,
    VerificationError,
)


def _predict(model, dm, tmp_path):
    return quiet_trainer(tmp_path).predict(model, dm)[0]


# -- round trips ---------------------------------------------------------------------------------
def test_a_folder_round_trip_predicts_the_same_and_reports_the_same(gap_edge, csbm, tmp_path):
    model, before = gap_edge
    model.save_pretrained(tmp_path / "gap")
    assert {p.name for p in (tmp_path / "gap").iterdir()} == {
        WEIGHTS, OUTPUTS, CONFIG, REPORT, "README.md"}
    loaded = GAP.from_pretrained(tmp_path / "gap")
    assert torch.equal(_predict(loaded, csbm, tmp_path), before)
    assert loaded.privacy_spent() == model.privacy_spent()
    assert loaded.accountant.total_count("pma") == 2 and loaded.pma is None  # nothing re-ran
    # the published folder holds exactly the checkpoint's private-data-derived values
    saved = load_file(tmp_path / "gap" / OUTPUTS)["s.outputs.pma"]
    assert torch.equal(saved, model.releases["pma"])


def test_push_then_pull_gives_identical_predictions_and_report(gap_edge, csbm, hub, tmp_path):
    model, before = gap_edge
    url = model.push_to_hub("org/gap-edge-csbm")
    assert hub.endpoint in url
    assert ("POST", "/api/models/org/gap-edge-csbm/preupload/main") in hub.state.calls
    assert set(hub.state.repos["org/gap-edge-csbm"].files) >= {WEIGHTS, OUTPUTS, CONFIG, REPORT}
    pulled = GAP.from_pretrained("org/gap-edge-csbm")
    assert torch.equal(_predict(pulled, csbm, tmp_path), before)
    assert pulled.privacy_spent() == model.privacy_spent()
    # the pulled files are byte-identical to a local save
    model.save_pretrained(tmp_path / "local")
    report = json.loads((tmp_path / "local" / REPORT).read_text())
    assert json.loads(hub.state.repos["org/gap-edge-csbm"].files[REPORT]) == report
    # the ModelHubMixin spelling: save and push in one call
    model.save_pretrained(tmp_path / "both", push_to_hub=True, repo_id="org/both")
    assert torch.equal(_predict(GAP.from_pretrained("org/both"), csbm, tmp_path), before)


def test_hf_endpoint_and_offline_are_read_when_called_not_at_import(monkeypatch):
    from lightning_dpgnn.publish.hub import hub_endpoint, hub_offline

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9/mirror/")
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    assert (hub_endpoint(), hub_offline()) == ("http://127.0.0.1:9/mirror", False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert hub_offline()


LDP_DM = dict(split="lpgnn", feature_range=(0.0, 1.0), feature_bounds=(-4.0, 4.0))


@pytest.mark.parametrize("make", [
    lambda: LPGNN(x_epsilon=1.0, y_epsilon=1.0, x_steps=1, y_steps=1),
    lambda: PGCLinkPrediction(x_epsilon=8.0),
], ids=["lpgnn", "pgc-link"])
def test_a_local_dp_model_pushed_and_pulled_predicts_and_reports_the_same(make, hub, tmp_path):
    """The LDP collection (and PGC link prediction's public edge split) travel through the
    hub: the pulled model predicts from them without collecting again."""
    dm = NodeDataModule("csbm", **LDP_DM)
    model = make()
    quiet_trainer(tmp_path, max_epochs=2).fit(model, dm)
    before = _predict(model, dm, tmp_path)
    model.push_to_hub("org/ldp")
    pulled = PrivateModule.from_pretrained("org/ldp")  # the report names the class
    assert type(pulled) is type(model)
    assert torch.equal(_predict(pulled, dm, tmp_path), before)
    assert pulled.privacy_spent() == model.privacy_spent()
    assert pulled.privacy_spent().level == "ldp"


def test_offline_load_from_the_hub_cache_and_from_a_folder(gap_edge, csbm, hub, monkeypatch,
                                                           tmp_path):
    model, before = gap_edge
    model.push_to_hub("org/offline")
    GAP.from_pretrained("org/offline")  # fills the cache
    hub.httpd.shutdown()  # the hub is gone
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # set after import: honoured at call time
    cached = GAP.from_pretrained("org/offline")
    assert torch.equal(_predict(cached, csbm, tmp_path), before)
    assert cached.privacy_spent() == model.privacy_spent()
    model.save_pretrained(tmp_path / "folder")
    assert torch.equal(_predict(GAP.from_pretrained(tmp_path / "folder"), csbm, tmp_path), before)
    with pytest.raises(Exception, match="offline|cache|local"):
        GAP.from_pretrained("org/never-pushed")
    assert constants.HF_HUB_OFFLINE is False  # we did not flip the library's global


# -- refusals to publish -------------------------------------------------------------------------
def test_reproducible_noise_is_refused(csbm, tmp_path):
    model = GAP(privacy="edge", epsilon=1.0, encoder_epochs=1, classifier_epochs=1, noise_seed=3)
    quiet_trainer(tmp_path, max_epochs=2).fit(model, csbm)
    with pytest.raises(PublishError, match="reproducible"):
        model.save_pretrained(tmp_path / "seeded")
    assert not (tmp_path / "seeded").exists()  # nothing written


def test_a_model_without_a_report_is_refused(tmp_path):
    unfitted = GAP(privacy="edge", epsilon=1.0, num_features=8, num_classes=3)
    with pytest.raises(PublishError, match="report is missing"):
        unfitted.save_pretrained(tmp_path / "unfitted")
    with pytest.raises(PublishError, match="no parameters"):
        GAP(privacy="edge", epsilon=1.0).save_pretrained(tmp_path / "empty")


def test_a_halted_fit_is_refused(csbm, tmp_path):
    # the trainer stops after 1 of the 2 DP-SGD epochs the noise was calibrated for
    model = DPMLP(epsilon=4.0, epochs=2, batch_size=500)
    quiet_trainer(tmp_path, max_epochs=1).fit(model, csbm)
    with pytest.raises(PublishError, match="halted"):
        model.save_pretrained(tmp_path / "halted")


def test_a_fit_stopped_by_privacy_budget_is_refused(csbm, tmp_path):
    # open-ended DP-SGD (no target): PrivacyBudget stops it before the step over the budget
    model = DPMLP(epsilon=None, noise_multiplier=2.0, batch_size=500)
    budget = PrivacyBudget(epsilon=1.0)
    trainer = quiet_trainer(tmp_path, max_epochs=-1, max_steps=10_000, callbacks=[budget])
    with pytest.warns(UserWarning, match="cannot plan"):
        trainer.fit(model, csbm)
    assert budget.stopped_early
    with pytest.raises(PublishError, match="halted"):
        model.save_pretrained(tmp_path / "stopped")


def test_an_over_budget_model_is_refused(gap_edge, tmp_path):
    model, _ = gap_edge
    over = GAP.from_pretrained(_saved(model, tmp_path))
    # one more query of the training graph recorded on the model (e.g. re-running PMA)
    over.accountant.add_gaussian("pma", over.noise_multiplier, sensitivity=2 ** 0.5)
    with pytest.raises(PublishError, match="over its target"):
        over.save_pretrained(tmp_path / "over")


def _saved(model, tmp_path):
    folder = tmp_path / "saved"
    if not folder.exists():
        model.save_pretrained(folder)
    return folder


# -- refusals to load ------------------------------------------------------------------------------
def test_a_folder_without_its_report_is_refused(gap_edge, tmp_path):
    folder = _saved(gap_edge[0], tmp_path)
    (folder / REPORT).unlink()
    with pytest.raises(VerificationError, match="no privacy_report.json"):
        GAP.from_pretrained(folder)


@pytest.mark.parametrize("name", [WEIGHTS, OUTPUTS, CONFIG])
def test_a_changed_file_is_refused(gap_edge, tmp_path, name):
    folder = _saved(gap_edge[0], tmp_path)
    if name == CONFIG:
        config = json.loads((folder / CONFIG).read_text())
        config["epsilon"] = 0.1  # claim a smaller budget
        (folder / CONFIG).write_text(json.dumps(config))
    else:
        tensors = load_file(folder / name)
        key = next(iter(tensors))
        tensors[key] = torch.zeros_like(tensors[key])  # e.g. denoised aggregates
        save_file(tensors, folder / name)
    with pytest.raises(VerificationError, match="SHA-256"):
        GAP.from_pretrained(folder)


def _rehash(folder) -> None:
    """Rewrite the report's SHA-256 of the files, and its own, as they are now (a careless
    re-publisher)."""
    from lightning_dpgnn.publish.hub import HASHED, _sha256, report_digest

    content = json.loads((folder / REPORT).read_text())
    content["sha256"] = {name: _sha256(folder / name) for name in HASHED}
    content["report_sha256"] = report_digest(content)
    (folder / REPORT).write_text(json.dumps(content))


@pytest.mark.parametrize("edit, message", [
    ({"privacy": "none"}, "says privacy='none' but privacy_report.json reports level 'edge'"),
    ({"noise_multiplier": 0.5}, "noise_multiplier=0.5 disagrees with privacy_report.json"),
])
def test_a_config_that_disagrees_with_the_report_is_refused_even_when_rehashed(
    gap_edge, tmp_path, edit, message
):
    folder = _saved(gap_edge[0], tmp_path)
    config = json.loads((folder / CONFIG).read_text())
    (folder / CONFIG).write_text(json.dumps({**config, **edit}))
    _rehash(folder)
    with pytest.raises(VerificationError, match=message):
        GAP.from_pretrained(folder)


@pytest.mark.parametrize("edit", ["reshape", "extra"])
def test_weights_that_do_not_fit_the_config_are_refused_even_when_rehashed(gap_edge, tmp_path,
                                                                           edit):
    folder = _saved(gap_edge[0], tmp_path)
    weights = load_file(folder / WEIGHTS)
    if edit == "reshape":  # e.g. the weights of a wider model under this config
        key = next(k for k, v in weights.items() if v.dim() == 2)
        weights[key] = torch.zeros(weights[key].shape[0] + 1, weights[key].shape[1])
    else:
        weights["stowaway"] = torch.zeros(3)
    save_file(weights, folder / WEIGHTS)
    _rehash(folder)
    with pytest.raises(VerificationError, match="does not fit GAP"):
        GAP.from_pretrained(folder)


def test_a_report_that_disagrees_with_its_accountant_is_refused(gap_edge, tmp_path):
    folder = _saved(gap_edge[0], tmp_path)
    content = json.loads((folder / REPORT).read_text())
    content["report"]["epsilon"] = 0.01
    (folder / REPORT).write_text(json.dumps(content))
    with pytest.raises(VerificationError, match="does not match its own SHA-256"):
        GAP.from_pretrained(folder)
    _rehash(folder)  # the report's own hash rewritten too: its accountant still says otherwise
    with pytest.raises(VerificationError, match="disagrees with the accountant"):
        GAP.from_pretrained(folder)


def test_published_hyper_parameters_cannot_be_overridden_on_load(gap_edge, tmp_path):
    with pytest.raises(ValueError, match="privacy is fixed by the published config.json"):
        GAP.from_pretrained(_saved(gap_edge[0], tmp_path), privacy="none")


def test_loading_a_folder_as_another_method_is_refused(gap_edge, tmp_path):
    with pytest.raises(VerificationError, match="not a LPGNN"):
        LPGNN.from_pretrained(_saved(gap_edge[0], tmp_path))


# -- the card ------------------------------------------------------------------------------------
def test_the_card_parses_and_states_the_guarantee(gap_edge, tmp_path):
    model, _ = gap_edge
    folder = _saved(model, tmp_path)
    card = ModelCard.load(folder / "README.md")
    report = model.privacy_spent()
    privacy = card.data.privacy
    assert privacy["level"] == "edge" and privacy["unit"] == report.unit
    assert privacy["epsilon"] == pytest.approx(report.epsilon, rel=1e-6)
    assert privacy["delta"] == report.delta
    assert card.data.library_name == "lightning-dpgnn"
    text = card.text
    assert "does not protect" in text and "not covered by epsilon" in text
    assert "No empirical audit recorded" in text


D_CSBM = 21  # largest in- and out-degree of the embedded csbm graph


@pytest.mark.parametrize("make, dm_kw, protected, unprotected", [
    (lambda: GAP(privacy="node", epsilon=8.0, max_degree=D_CSBM, batch_size=500,
                 encoder_epochs=1, classifier_epochs=1), {},
     "any single node with all its edges, features and label on graphs whose every in- and "
     f"out-degree is at most D = {D_CSBM}", "public metadata declared to the model"),
    (lambda: LPGNN(x_epsilon=1.0, y_epsilon=1.0, x_steps=1, y_steps=1), LDP_DM,
     "its features and its label (local DP, epsilon per node)",
     "the graph structure (edges) is public in this threat model"),
], ids=["gap-node", "lpgnn"])
def test_node_level_and_ldp_cards_state_their_guarantee(make, dm_kw, protected, unprotected,
                                                        tmp_path):
    model = make()
    quiet_trainer(tmp_path, max_epochs=2).fit(model, NodeDataModule("csbm", **dm_kw))
    model.save_pretrained(tmp_path / "m")
    card = ModelCard.load(tmp_path / "m" / "README.md")
    report, privacy = model.privacy_spent(), card.data.privacy
    assert (privacy["level"], privacy["unit"], privacy["delta"]) == (
        report.level, report.unit, report.delta)
    assert privacy["epsilon"] == pytest.approx(report.epsilon, rel=1e-6)
    lines = {line.split(":**")[0]: line for line in card.text.splitlines() if ":**" in line}
    assert protected in lines["**Protected"] and unprotected in lines["**Not protected"]
    assert "not covered by epsilon" in card.text and "No empirical audit recorded" in card.text
    assert card.data.library_version == lightning_dpgnn.__version__


def test_a_zoo_entrys_card_states_its_benchmark_accuracy_and_rebuild_command(gap_edge):
    from lightning_dpgnn.zoo import registry

    from lightning_dpgnn.publish.card import model_card

    entry = registry.entry("gap-edge-rutgers89-eps4")
    a = entry.accuracy
    card = model_card(gap_edge[0], **entry.card_kwargs(), measured_accuracy=0.5)
    assert f"**{a['mean']}%** (95% CI {a['low']}–{a['high']}) over {a['seeds']} seeds" in card.text
    assert a["command"] in card.text and "`dpgnn zoo build gap-edge-rutgers89-eps4" in card.text
    assert f"- Split: {entry.split}." in card.text and "(one run): 50.0%" in card.text
    meta = card.data.to_dict()
    assert meta["model-index"][0]["results"][0]["metrics"][0]["value"] == a["mean"]
    assert meta["measured_test_accuracy"] == 0.5 and meta["datasets"] == [entry.dataset]


def test_the_card_says_label_counts_and_what_a_new_graph_needs(gap_edge, csbm, tmp_path):
    """GAP/ProGAP count labels by default at edge level: the card's method line says so, the
    ledger note of the counts cites no thesis result (the thesis has no such mechanism), and
    the usage snippet says a new graph needs its known labels (``train_mask``/``y``)."""
    from lightning_dpgnn.publish.card import model_card

    model, _ = gap_edge
    assert model.label_counts
    text = model_card(model).text
    method = next(line for line in text.splitlines() if line.startswith("**Method:**"))
    assert "with label counts" in method and "not in the paper" in method
    ledger = [line for line in text.splitlines() if line.startswith("  - `label_counts:")]
    assert len(ledger) == 1
    assert "Lemma" not in ledger[0] and "Theorem" not in ledger[0]
    assert "not of the GAP/ProGAP papers or the thesis" in ledger[0]
    use = text.split("## Use")[1].split("## Rebuild")[0]
    assert "new_graph.inductive = True" in use and "new_graph.train_mask" in use
    assert "not covered by epsilon" in text

    papers = GAP(privacy="edge", epsilon=1.0, encoder_epochs=1, classifier_epochs=1,
                 label_counts=False)
    quiet_trainer(tmp_path, max_epochs=2).fit(papers, csbm)
    text = model_card(papers).text
    assert "label counts" not in text and "train_mask" not in text
    assert "new_graph.inductive = True" in text


def test_a_card_that_states_another_guarantee_is_refused(gap_edge, tmp_path):
    folder = _saved(gap_edge[0], tmp_path)
    card = ModelCard.load(folder / "README.md")
    card.text = card.text + "\nEdited prose is fine.\n"
    card.save(folder / "README.md")
    GAP.from_pretrained(folder)
    card.data.privacy = {**card.data.privacy, "epsilon": 0.1}
    card.save(folder / "README.md")
    with pytest.raises(VerificationError, match="states a guarantee other than"):
        GAP.from_pretrained(folder)


def test_a_missing_folder_is_named_as_such(tmp_path):
    with pytest.raises(FileNotFoundError, match="no published model folder"):
        GAP.from_pretrained(tmp_path / "nothing-here")


@pytest.mark.parametrize(
    "build, expected",
    [
        (
            lambda: GAP(privacy="edge", epsilon=2.0, lr=0.05, max_degree=7, edge_unit="directed"),
            {"lr": 0.05, "max_degree": 7, "edge_unit": "directed", "hops": 2, "epsilon": 2.0},
        ),
        (
            lambda: __import__("lightning_dpgnn").DPMLP(epsilon=4.0, hidden=8, batch_size=64),
            {"hidden": 8, "batch_size": 64, "epsilon": 4.0},
        ),
        (
            lambda: __import__("lightning_dpgnn").EdgeRand(epsilon=3.0, layers=3, lr=0.02),
            {"layers": 3, "lr": 0.02, "epsilon": 3.0, "density_share": 0.1},
        ),
    ],
)
def test_config_keeps_the_settings_a_method_forwards_to_its_base(build, expected):
    """GAP, DPMLP and EdgeRand take their shared settings as ``**kwargs`` (PyG style): the
    published config must still hold them, or a loaded model rebuilds with the defaults."""
    from lightning_dpgnn.publish.hub import model_config

    model = build()
    config = model_config(model)
    assert {k: config[k] for k in expected} == expected
    rebuilt = type(model)(**config)
    assert dict(rebuilt.hparams) == dict(model.hparams)


def test_a_folder_published_before_label_counts_existed_loads_as_the_papers_model(
    csbm, tmp_path
):
    """A GAP folder whose config has no ``label_counts`` (written before the option existed,
    when every model was the papers') loads without counts, though the default now turns
    them on at edge level, and predicts as published."""
    model = GAP(privacy="edge", epsilon=1.0, encoder_epochs=2, classifier_epochs=2,
                label_counts=False)
    trainer = quiet_trainer(tmp_path / "fit")
    trainer.fit(model, csbm)
    want = trainer.predict(model, csbm)[0]
    folder = _saved(model, tmp_path)
    config = json.loads((folder / CONFIG).read_text())
    del config["label_counts"]
    (folder / CONFIG).write_text(json.dumps(config))
    _rehash(folder)
    loaded = GAP.from_pretrained(folder)
    assert loaded.label_counts is False and loaded.releases.get("label_counts") is None
    assert torch.allclose(loaded.predict_step(csbm.data, 0), want, atol=1e-5)


def test_each_guarantee_states_what_it_protects_uses_in_the_clear_and_holds_under():
    """The model owns its guarantees as objects (name, level, unit, accountant, target, words,
    conditions); the card states each one's protection and conditions from them (HeteroRR's
    features guarantee had no "not protected" line; its chain condition sat under the edges'
    "not protected")."""
    from lightning_dpgnn import HeteroRR
    from lightning_dpgnn.levels import Level
    from lightning_dpgnn.publish.card import model_card

    model = HeteroRR(epsilon=1.0, x_epsilon=2.0, feature_mechanism="multibit")
    edges, features = model.guarantees()
    assert (edges.name, edges.level, edges.target) == ("edges", Level.EDGE, 1.0)
    assert (features.name, features.level, features.target) == ("features", Level.LDP, 2.0)
    assert edges.accountant is model.accountant
    assert features.accountant is model.accountant_of("features")
    assert edges.unit == model.privacy_spent()["edges"].unit
    assert "equilibrium" in edges.conditions[0] and features.conditions == ()
    lines = {line.split(":**")[0]: line for line in model_card(model).text.splitlines()
             if ":**" in line}
    assert "private edge" in lines["**Protected (edges)"]
    assert edges.conditions[0] in lines["**Protected (edges)"]
    assert features.public in lines["**Not protected (features)"]
    node, = GAP(privacy="node", epsilon=1.0, max_degree=21).guarantees()
    assert node.name == "node" and "D = 21" in node.conditions[0]


@pytest.mark.parametrize("privacy, says, not_says", [
    ("edge", ["perturbed once with calibrated Gaussian noise", "with label counts"],
     ["DP-SGD", "in the clear"]),
    ("node", ["perturbed once", "train with DP-SGD"], ["label counts"]),
    ("none", ["aggregations in the clear: non-private", "with label counts"], ["perturbed"]),
])
def test_the_gap_method_line_states_the_model_as_built(privacy, says, not_says):
    """Review 2's F7: the card's GAP method line said "private multi-hop aggregation" whatever
    was built; it states whether the aggregations are perturbed, DP-SGD at node level, and
    the label counts when the model reads them."""
    from lightning_dpgnn.publish.card import model_card

    model = GAP(privacy=privacy, epsilon=1.0, max_degree=21)
    method = next(line for line in model_card(model).text.splitlines()
                  if line.startswith("**Method:**"))
    assert all(s in method for s in says) and not any(s in method for s in not_says), method
