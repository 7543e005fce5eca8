"""A published GAP/ProGAP model on a graph the user brings: the mechanism runs on that graph
with fresh noise and its own report; the published model's guarantee is untouched."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

from lightning_dpgnn import GAP, ProGAP
from lightning_dpgnn.data import NodeDataModule

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "zoo_predict_on_your_graph.py"


def _your_graph(num_nodes: int = 500):
    data = NodeDataModule("csbm", dataset_kwargs={"seed": 7, "num_nodes": num_nodes}).data
    data.inductive = True
    return data


def test_a_loaded_gap_runs_the_mechanism_on_your_graph_with_its_own_report(gap_edge, tmp_path):
    model, _ = gap_edge
    model.save_pretrained(tmp_path / "gap")
    published = GAP.from_pretrained(tmp_path / "gap")
    before = published.privacy_spent()
    yours = _your_graph()
    first = published.predict_step(yours, 0)
    second = published.predict_step(yours, 0)
    # one release per graph: a repeated call reads it again (averaging fresh draws would spend
    # more than the report says; tests/methods/test_gap.py has the attack)
    assert first.shape == (500, 5) and torch.equal(first, second)
    report = published.last_inference_report
    assert report.count("pma") == 2 and report.level == "edge"
    assert report.delta < 1 / (yours.num_edges // 2)  # delta="auto" from *your* edges
    assert published.privacy_spent() == before  # the training graph is not queried again
    assert published.pma.calls == 2


def test_a_graph_with_other_features_is_refused_clearly(gap_edge, tmp_path):
    model, _ = gap_edge
    yours = _your_graph()
    yours.x = yours.x[:, :10]
    with pytest.raises(ValueError, match="trained on 64 features"):
        model.predict_step(yours, 0)


def test_a_loaded_progap_predicts_on_your_graph(csbm, tmp_path):
    from zoo_testing import quiet_trainer

    model = ProGAP(privacy="edge", epsilon=1.0, epochs_per_stage=1)
    quiet_trainer(tmp_path, max_epochs=3).fit(model, csbm)
    model.save_pretrained(tmp_path / "progap")
    published = ProGAP.from_pretrained(tmp_path / "progap")
    probs = published.predict_step(_your_graph(), 0)
    assert probs.shape == (500, 5)
    assert published.last_inference_report.count("nap") == published.hparams.depth


def test_the_example_runs(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("zoo_example", EXAMPLE)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    out = example.main(tmp_path / "published", epochs=3)
    assert out["yours"].count("pma") == 2 and out["model"].count("pma") == 2
    assert "your graph's own cost" in capsys.readouterr().out


LDP_DM = dict(split="lpgnn", feature_range=(0.0, 1.0), feature_bounds=(-4.0, 4.0))


@pytest.mark.parametrize("make", [
    # LPGNN with noisy features refuses a new graph: it fitted its training collection's noise
    # draw (tests/methods/test_inductive.py); with clear or ad-hoc features no noise is drawn
    lambda: __import__("lightning_dpgnn").PGC(x_epsilon=2.0),
], ids=["pgc"])
def test_a_loaded_ldp_model_predicts_from_your_nodes_private_features(make, tmp_path):
    from zoo_testing import quiet_trainer

    dm = NodeDataModule("csbm", **LDP_DM)
    model = make()
    trainer = quiet_trainer(tmp_path, max_epochs=2)
    trainer.fit(model, dm)
    model.save_pretrained(tmp_path / "ldp")
    published = type(model).from_pretrained(tmp_path / "ldp")
    on_training_graph = quiet_trainer(tmp_path).predict(published, dm)[0]
    before = published.privacy_spent()

    yours = NodeDataModule("csbm", dataset_kwargs={"seed": 7, "num_nodes": 300}, **LDP_DM).data
    yours.y = None  # your labels stay with you: only features are perturbed and sent
    sent = published.collect_from(yours)  # on your nodes' devices in a deployment
    report = published.last_inference_report
    assert report.level == "ldp" and len(report.ledger) == 1  # features only, no label
    assert report.epsilon == pytest.approx(before.epsilon - _label_eps(published), rel=1e-9)
    probs = published.predict_inductive(yours, sent)
    assert probs.shape == (300, 5) and torch.allclose(probs.sum(-1), torch.ones(300))
    yours.inductive = True  # or let predict_step collect: the same graph's nodes do not send
    # again (invariant 13: a repeated release on one graph is the cached one, not a new spend)
    assert torch.equal(published.predict_step(yours, 0), probs)
    assert published.last_inference_report == report
    # the training graph's cached collection, report and GCN normalisation are untouched
    assert published.privacy_spent() == before
    assert torch.equal(quiet_trainer(tmp_path).predict(published, dm)[0], on_training_graph)


def _label_eps(model) -> float:
    eps = model.collector.y_epsilon
    return 0.0 if eps is None else float(eps)
