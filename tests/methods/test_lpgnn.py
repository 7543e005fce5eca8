"""LPGNN (thesis ch. 3): one-time collection, accounting, KProp, Drop, resume, errors."""

import math

import lightning as L
import pytest
import torch
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning_dpgnn.callbacks import DropEarlyStopping, PrivacyBudget
from lightning_dpgnn.callbacks.privacy_budget import BudgetExceededError
from torch_geometric.data import Data

from lightning_dpgnn import LPGNN
from lightning_dpgnn.nn.kprop import KProp
from lightning_dpgnn.privacy import MultiBit, RandomizedResponse
from lightning_dpgnn.privacy.local import LocalCollector
from lightning_dpgnn.privacy.mechanism import run

# tiny graphs: one thread; ``ldp_dm`` (tests/conftest.py): csbm in [0, 1], LPGNN's split
pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture
def spies(monkeypatch):
    """Count calls and rows of the node-side mechanisms."""
    counts = {"encode_calls": 0, "encode_rows": 0, "rr_calls": 0, "rr_rows": 0}
    encode, perturb = MultiBit.sample, RandomizedResponse.sample

    def spy_encode(self, x, generator=None):
        counts["encode_calls"] += 1
        counts["encode_rows"] += x.shape[0]
        return encode(self, x, generator)

    def spy_perturb(self, y, generator=None):
        counts["rr_calls"] += 1
        counts["rr_rows"] += y.shape[0]
        return perturb(self, y, generator)

    monkeypatch.setattr(MultiBit, "sample", spy_encode)
    monkeypatch.setattr(RandomizedResponse, "sample", spy_perturb)
    return counts


# -- KProp ------------------------------------------------------------------------------------
def test_kprop_equals_the_hand_computed_normalized_aggregation():
    # path 0-1-2 (both directions), an isolated node 3, and a self-loop on 1 that KProp ignores
    ei = torch.tensor([[0, 1, 1, 2, 1], [1, 0, 2, 1, 1]])
    x = torch.tensor([[1.0], [2.0], [4.0], [7.0]])
    # deg (no self-loops) = [1, 2, 1, 0]; one step: h0 = x1/sqrt2, h1 = (x0+x2)/sqrt2, h2 = x1/sqrt2
    s2 = math.sqrt(2.0)
    one = torch.tensor([[2 / s2], [5 / s2], [2 / s2], [0.0]])
    two = torch.tensor([[2.5], [2.0], [2.5], [0.0]])  # (5/sqrt2)/sqrt2, (2 sqrt2)/sqrt2
    assert torch.allclose(KProp(0)(x, ei), x)
    assert torch.allclose(KProp(1)(x, ei), one)
    assert torch.allclose(KProp(2)(x, ei), two)
    # mean aggregator: node 1 averages 1 and 4, the leaves copy node 1
    mean = torch.tensor([[2.0], [2.5], [2.0], [0.0]])
    assert torch.allclose(KProp(1, aggr="mean")(x, ei), mean)


def test_kprop_is_the_matrix_power_and_differentiable(ldp_dm):
    data = ldp_dm.data
    n = data.num_nodes
    dense = torch.zeros(n, n)
    dense[data.edge_index[1], data.edge_index[0]] = 1.0
    deg = dense.sum(1)
    norm = deg.pow(-0.5).unsqueeze(1) * dense * deg.pow(-0.5).unsqueeze(0)
    x = torch.rand(n, 3, requires_grad=True)
    out = KProp(3)(x, data.edge_index)
    assert torch.allclose(out, torch.linalg.matrix_power(norm, 3) @ x, atol=1e-5)
    out.sum().backward()
    assert x.grad is not None and torch.isfinite(x.grad).all()


# -- collection, accounting --------------------------------------------------------------------
def test_collection_runs_once_per_node_and_reports_eps_x_plus_eps_y(ldp_dm, make_trainer, spies):
    model = LPGNN(x_epsilon=1.0, y_epsilon=2.0, x_steps=2, y_steps=2, noise_seed=0)
    trainer = make_trainer(max_epochs=3)
    trainer.fit(model, ldp_dm)
    trainer.validate(model, ldp_dm, verbose=False)
    trainer.test(model, ldp_dm, verbose=False)
    trainer.predict(model, ldp_dm)
    data = ldp_dm.data
    labelled = int((data.train_mask | data.val_mask).sum())
    assert spies == {
        "encode_calls": 1,
        "encode_rows": data.num_nodes,  # every node encodes its features once
        "rr_calls": 1,
        "rr_rows": labelled,  # train + validation labels only, never the test labels
    }
    report = model.privacy_spent()
    assert report.level == "ldp" and report.delta == 0.0
    assert report.epsilon == pytest.approx(3.0)  # Corollary 2: eps_x + eps_y
    assert report.count("multibit") == 1 and report.count("randomized_response") == 1
    c = model.local.collection()
    assert c.payload.is_sparse  # m* = 1 at eps_x = 1: one non-zero code per node, kept compact
    assert c.payload._nnz() == data.num_nodes
    assert bool((c.labels[~c.label_mask] == -1).all())


def test_the_server_reads_only_the_collection(ldp_dm, make_trainer):
    model = LPGNN(x_epsilon=1.0, y_epsilon=1.0, x_steps=2, y_steps=2, noise_seed=0)
    trainer = make_trainer(max_epochs=2)
    trainer.fit(model, ldp_dm)
    before = trainer.validate(model, ldp_dm, verbose=False)[0]
    probs = trainer.predict(model, ldp_dm)[0]
    data = ldp_dm.data
    data.x = torch.full_like(data.x, float("nan"))  # raw features are gone
    y = data.y.clone()
    data.y[data.train_mask | data.val_mask] = 0  # and so are the clean train/val labels
    assert trainer.validate(model, ldp_dm, verbose=False)[0] == before
    assert torch.equal(trainer.predict(model, ldp_dm)[0], probs)
    data.y = y


def test_resume_reloads_the_collection_and_never_requeries(ldp_dm, tmp_path, spies):
    def trainer(epochs):
        return L.Trainer(
            max_epochs=epochs,
            logger=False,
            enable_progress_bar=False,
            enable_model_summary=False,
            default_root_dir=tmp_path,
            callbacks=[ModelCheckpoint(dirpath=tmp_path, save_last=True)],
        )

    first = LPGNN(x_epsilon=1.0, y_epsilon=1.0, x_steps=2, y_steps=2, noise_seed=0)
    trainer(2).fit(first, ldp_dm)
    assert spies["encode_calls"] == 1 and spies["rr_calls"] == 1
    # a different seed
    resumed = LPGNN(x_epsilon=1.0, y_epsilon=1.0, x_steps=2, y_steps=2, noise_seed=1)
    trainer(4).fit(resumed, ldp_dm, ckpt_path=str(tmp_path / "last.ckpt"))
    assert spies["encode_calls"] == 1 and spies["rr_calls"] == 1  # nodes not queried again
    a, b = first.local.collection(), resumed.local.collection()
    assert torch.equal(a.payload.to_dense(), b.payload.to_dense())
    assert torch.equal(a.labels, b.labels)
    assert resumed.privacy_spent().epsilon == pytest.approx(2.0)  # still one collection
    assert resumed.privacy_spent().count("multibit") == 1
    # a fitted checkpoint evaluates without data-side collection either
    loaded = LPGNN.load_from_checkpoint(str(tmp_path / "last.ckpt"))
    L.Trainer(logger=False, enable_progress_bar=False).test(loaded, ldp_dm, verbose=False)
    assert spies["encode_calls"] == 1 and loaded.privacy_spent().epsilon == pytest.approx(2.0)


def test_clear_budgets_are_reported_as_infinite_not_hidden(ldp_dm, make_trainer):
    model = LPGNN(x_epsilon=1.0, y_epsilon=math.inf, noise_seed=0)
    make_trainer(max_epochs=1).fit(model, ldp_dm)
    report = model.privacy_spent()
    assert math.isinf(report.epsilon) and report.count("labels/clear") == 1
    raw = LPGNN(x_epsilon=math.inf, y_epsilon=1.0, noise_seed=0)
    make_trainer(max_epochs=1).fit(raw, ldp_dm)
    assert torch.equal(raw.local.received_features(), ldp_dm.data.x)  # clear features, no mechanism
    assert math.isinf(raw.privacy_spent().epsilon)


def test_adhoc_features_spend_only_the_label_budget(ldp_dm, make_trainer):
    model = LPGNN(features="degree", y_epsilon=1.0, noise_seed=0)
    make_trainer(max_epochs=1).fit(model, ldp_dm)
    report = model.privacy_spent()
    assert report.epsilon == pytest.approx(1.0) and report.count("multibit") == 0
    x = model.local.received_features()
    deg = torch.bincount(ldp_dm.data.edge_index[1], minlength=ldp_dm.data.num_nodes)
    assert x.shape == ldp_dm.data.x.shape and torch.equal(x.argmax(1), deg)


def test_analytic_gaussian_features_are_accounted_with_their_delta(ldp_dm, make_trainer):
    model = LPGNN(mechanism="gaussian", x_epsilon=1.0, y_epsilon=1.0, gaussian_delta=1e-9,
                  noise_seed=0)
    make_trainer(max_epochs=1).fit(model, ldp_dm)
    report = model.privacy_spent()
    assert report.delta == 1e-9 and report.count("analytic_gaussian") == 1
    # RDP composition of AG + RR is valid but looser than basic composition's 1 + 1: the report
    # takes the smaller sound route (review 3, N8)
    assert report.epsilon == pytest.approx(2.0) and "smaller of" in report.accountant
    with pytest.warns(DeprecationWarning, match="renamed gaussian_delta"):
        old = LPGNN(mechanism="gaussian", delta=1e-9)
    assert old.collector.gaussian_delta == 1e-9 and "delta" not in old.hparams


def test_privacy_budget_refuses_a_collection_over_budget(ldp_dm, make_trainer, spies):
    model = LPGNN(x_epsilon=1.0, y_epsilon=1.0, noise_seed=0)
    with pytest.raises(BudgetExceededError):
        make_trainer(max_epochs=1, callbacks=[PrivacyBudget(epsilon=1.5)]).fit(model, ldp_dm)
    assert spies["encode_calls"] == 0 and spies["rr_calls"] == 0  # refused before collecting
    ok = LPGNN(x_epsilon=1.0, y_epsilon=1.0, noise_seed=0)
    make_trainer(max_epochs=1, callbacks=[PrivacyBudget(epsilon=2.0)]).fit(ok, ldp_dm)


# -- training -----------------------------------------------------------------------------------
def test_drop_learns_the_clean_labels_from_noisy_ones(ldp_dm, make_trainer):
    torch.manual_seed(0)  # weight init: independent of the tests that ran before
    model = LPGNN(x_epsilon=1.0, y_epsilon=1.0, x_steps=4, y_steps=2, noise_seed=0)
    trainer = make_trainer(max_epochs=40, callbacks=[DropEarlyStopping()])
    trainer.fit(model, ldp_dm)
    view, data = model.server_view(), ldp_dm.data
    train = data.train_mask
    noisy_acc = (view["y_noisy"][train] == data.y[train]).float().mean()
    tilde_acc = (view["y_tilde"][train] == data.y[train]).float().mean()
    assert noisy_acc < 0.45 and tilde_acc > noisy_acc + 0.15  # label KProp denoises (line 15)
    # the test accuracy (clean labels) is far above what the noisy labels themselves reach
    assert trainer.test(model, ldp_dm, verbose=False)[0]["test/acc"] > 0.7


def test_standardize_is_a_scale_free_view_of_the_same_kprop_output(ldp_dm, make_trainer):
    models = {}
    for flag in (True, False):
        models[flag] = LPGNN(x_epsilon=0.5, y_epsilon=1.0, x_steps=2, standardize=flag,
                             noise_seed=0)
        make_trainer(max_epochs=1).fit(models[flag], ldp_dm)
    h, raw = models[True].server_view()["h"].dense(), models[False].server_view()["h"].dense()
    assert raw.abs().max() > 10  # the rectifier scales codes by ~ d coth(eps/2)/2 (eq. 3.10)
    assert torch.allclose(h.mean(0), torch.zeros(h.size(1)), atol=1e-4)
    assert torch.allclose(h.std(0), torch.ones(h.size(1)), atol=1e-4)
    assert torch.allclose(h, (raw - raw.mean(0)) / raw.std(0), atol=1e-4)
    assert models[True].privacy_spent().epsilon == models[False].privacy_spent().epsilon


def test_noisy_validation_metrics_and_acc_star(ldp_dm, make_trainer):
    model = LPGNN(x_epsilon=1.0, y_epsilon=1.0, noise_seed=0)
    trainer = make_trainer(max_epochs=1)
    trainer.fit(model, ldp_dm)
    metrics = trainer.callback_metrics
    assert {"val/loss", "val/noisy_acc", "train/noisy_acc", "train/loss"} <= set(metrics)
    assert "val/acc" not in metrics  # no clean validation labels exist in this threat model
    assert model.acc_star == pytest.approx(math.e / (math.e + 4))  # 5 classes, eps_y = 1


def test_gcn_and_gat_backbones_train(csbm_dm, make_trainer):
    for backbone in ("gcn", "gat"):  # raw features (x_epsilon = inf) need no [0, 1] range
        model = LPGNN(backbone=backbone, x_epsilon=math.inf, y_epsilon=math.inf, x_steps=2,
                      noise_seed=0)
        trainer = make_trainer(max_epochs=20)
        trainer.fit(model, csbm_dm)
        assert trainer.test(model, csbm_dm, verbose=False)[0]["test/acc"] > 0.9


# -- errors ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(x_steps=-1), "x_steps must be >= 0"),
        (dict(y_steps=1.5), "y_steps must be an integer"),
        (dict(x_epsilon=0.0), "x_epsilon must be > 0"),
        (dict(y_epsilon=-1.0), "y_epsilon must be > 0"),
        (dict(x_epsilon=float("nan")), "x_epsilon must be > 0"),
        (dict(y_epsilon=None), "labels are private"),
        (dict(mechanism="rappor"), "unknown feature mechanism"),
        (dict(backbone="gin"), "backbone must be one of"),
        (dict(loss="mse"), "loss must be one of"),
        (dict(features="zeros"), "features must be one of"),
        (dict(m=0), "m must be in"),
        (dict(mechanism="laplace", m=2), "m is the multi-bit sampling parameter"),
        (dict(alpha=1.0, beta=0.0), "alpha < beta"),
    ],
)
def test_invalid_settings_are_clear_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        LPGNN(**kwargs)


def test_m_larger_than_d_and_evaluating_before_fit_are_clear_errors(ldp_dm, make_trainer):
    with pytest.raises(ValueError, match="m must be in"):
        make_trainer(max_epochs=1).fit(LPGNN(m=65, noise_seed=0), ldp_dm)  # csbm has d = 64
    with pytest.raises(RuntimeError, match="has not collected"):
        make_trainer().test(LPGNN(noise_seed=0), ldp_dm, verbose=False)
    with pytest.raises(ValueError, match="per_coordinate"):
        LocalCollector(1.0, 1.0, "multibit", per_coordinate=True)


def test_collector_works_on_a_hand_built_graph_without_lightning():
    from lightning_dpgnn.privacy import PrivacyAccountant

    data = Data(
        x=torch.rand(6, 4),
        y=torch.tensor([0, 1, 0, 1, 0, 1]),
        edge_index=torch.tensor([[0, 1, 2, 3, 4], [1, 2, 3, 4, 5]]),
        train_mask=torch.tensor([1, 1, 1, 0, 0, 0], dtype=torch.bool),
        val_mask=torch.tensor([0, 0, 0, 1, 0, 0], dtype=torch.bool),
    )
    acc = PrivacyAccountant("ldp")
    gen = torch.Generator().manual_seed(0)
    col = run(LocalCollector(0.5, 0.25, "onebit").steps(data, gen), acc, gen)
    assert col.encoding == "codes" and set(col.payload.unique().tolist()) <= {0, 1}
    assert acc.epsilon() == pytest.approx(0.75)
    assert col.label_mask.tolist() == [True, True, True, True, False, False]


# -- recipes ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["lpgnn-cora", "pgc-cora", "pgc-link-cora"])
def test_local_dp_recipes_run_end_to_end_on_the_embedded_graph(name, capsys, tmp_path, monkeypatch):
    from lightning_dpgnn import zoo
    from lightning_dpgnn.cli import main

    monkeypatch.chdir(tmp_path)  # the CLI writes its checkpoint and run file there
    main(
        [
            "fit",
            "--config",
            str(zoo.recipe_path(name)),
            "--data.name=csbm",
            "--data.split=lpgnn",
            "--trainer.max_epochs=2",
            "--trainer.check_val_every_n_epoch=1",
            "--trainer.enable_progress_bar=false",
        ]
    )
    out = capsys.readouterr().out
    eps = float(out.split("epsilon spent:")[1].split()[0])
    expected = 2.0 if name.startswith("lpgnn") else 5.0 * 64  # csbm: d = 64 features
    assert eps == pytest.approx(expected)


def test_multibit_features_stay_factored_and_give_the_dense_logits(ldp_dm, make_trainer):
    """The server's h (KProp of the rectified multi-bit codes, z-scored or not) is kept
    factored and the network gives the logits of the dense h; a continuous mechanism's h is
    dense."""
    from lightning_dpgnn.nn.kprop import PropagatedCodes

    for standardize in (False, True):
        model = LPGNN(x_epsilon=1.0, y_epsilon=1.0, x_steps=2, noise_seed=0,
                      standardize=standardize)
        make_trainer(max_epochs=2).fit(model, ldp_dm)
        view = model.server_view()
        assert isinstance(view["h"], PropagatedCodes)
        dense = model._propagated(model.local.received_features(), view["edge_index"])
        torch.testing.assert_close(view["h"].dense(), dense,
                                   atol=1e-4 * dense.abs().max().item(), rtol=1e-4)
        model.eval()
        got, want = model(view["h"], view["adj"]), model(dense, view["adj"])
        torch.testing.assert_close(got, want, atol=1e-4 * want.abs().max().item(), rtol=1e-4)
    other = LPGNN(x_epsilon=1.0, y_epsilon=1.0, x_steps=2, noise_seed=0, mechanism="duchi")
    make_trainer(max_epochs=1).fit(other, ldp_dm)
    assert isinstance(other.server_view()["h"], torch.Tensor)
