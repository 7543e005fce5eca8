"""ProGAP (thesis ch. 5): NAP query counts, Theorems 4–5, progressive vs layerwise, stages
inside one fit, resume, inference privacy, accuracy."""

import math

import lightning as L
import pytest
import torch
from lightning.pytorch.callbacks import ModelCheckpoint
from torch_geometric.data import Data
from torch_geometric.utils import coalesce

from lightning_dpgnn.methods import MLP
from lightning_dpgnn.methods.progap import ProGAP
from lightning_dpgnn.privacy import PrivacyAccountant
from lightning_dpgnn.privacy.aggregation import normalize_rows, sum_aggregate
from lightning_dpgnn.privacy.dpsgd import NotDPCompatibleError


def fit(model, dm, make_trainer, **kw):
    trainer = make_trainer(max_epochs=10_000, **kw)  # the model owns its epochs
    trainer.fit(model, dm)
    return trainer


class StageSpy(L.Callback):
    """Per epoch: the stage, the optimizer's parameter ids, the training-row shapes and a
    checksum of every base MLP. Callbacks run before the module's own epoch-start hook, so the
    optimizer seen at a stage's first epoch is still the previous stage's."""

    def __init__(self):
        self.stages, self.optim_params, self.row_shapes, self.base_sums = [], [], [], []

    def on_train_epoch_start(self, trainer, pl_module):
        self.stages.append(pl_module.staged.current_stage)
        groups = trainer.optimizers[0].param_groups
        self.optim_params.append({id(p) for g in groups for p in g["params"]})
        *inputs, _ = next(iter(trainer.train_dataloader))
        self.row_shapes.append(tuple(tuple(x.shape[1:]) for x in inputs))
        self.base_sums.append(checksums(pl_module))


def checksums(model):
    return [
        sum(float(p.detach().double().abs().sum()) for p in b.parameters())
        for b in model._net().base
    ]


def test_stages_switch_inside_one_fit_and_nap_runs_k_times(csbm_dm, make_trainer):
    model = ProGAP(privacy="edge", epsilon=1.0, depth=3, epochs_per_stage=2, hidden=8)
    spy = StageSpy()
    trainer = fit(model, csbm_dm, make_trainer, callbacks=[spy])
    assert trainer.current_epoch == 8  # (K + 1) stages x 2 epochs, one trainer.fit
    assert spy.stages == [0, 0, 1, 1, 2, 2, 3, 3]
    d = csbm_dm.num_features + csbm_dm.num_classes  # features, then the label counts
    assert spy.row_shapes[0] == ((d,),)  # stage 0: no aggregate yet
    assert spy.row_shapes[-1] == ((d,), (8,), (8,), (8,))  # stage 3: features + 3 cached NAPs
    assert model.nap.calls == 3 and model.privacy_spent().count("nap") == 3
    assert all(map(model.releases.drawn, model.hop_names())) and len(model.hop_names()) == 3
    net = model._net()
    # each stage optimizes its own fresh JK/head; earlier heads are left behind
    for s in range(4):
        optimized = spy.optim_params[2 * s + 1]  # second epoch of stage s
        assert {id(p) for p in net.head[s].parameters()} <= optimized
        for other in set(range(4)) - {s}:
            assert not {id(p) for p in net.head[other].parameters()} & optimized


def test_edge_level_epsilon_is_theorem_4(csbm_dm, make_trainer):
    # the thesis' model (no label counts) and directed unit (sensitivity 1; the default
    # undirected one is sqrt(2))
    model = ProGAP(
        privacy="edge", epsilon=2.0, depth=3, epochs_per_stage=1, edge_unit="directed",
        label_counts=False,
    )
    fit(model, csbm_dm, make_trainer)
    report = model.privacy_spent()
    assert report.level == "edge" and report.delta < 1 / csbm_dm.data.num_edges
    assert 2.0 * 0.99 <= report.epsilon <= 2.0
    sigma, delta, k = model.noise_multiplier, report.delta, 3
    theorem_4 = k / (2 * sigma**2) + math.sqrt(2 * k * math.log(1 / delta)) / sigma
    assert model.accountant.epsilon(conversion="basic") == pytest.approx(theorem_4, rel=1e-6)
    assert report.epsilon <= theorem_4  # the default conversion is never looser
    nap = next(e for e in report.ledger if e.name == "nap")
    assert nap.sensitivity == 1.0 and nap.count == 3


def test_node_level_composes_k_naps_and_k_plus_1_dpsgd_runs(csbm_dm, make_trainer):
    """Theorem 5: K NAPs of sensitivity sqrt(D) and K + 1 DP-SGD runs, one ledger."""
    model = ProGAP(
        privacy="node", epsilon=8.0, depth=2, max_degree=21, batch_size=500, epochs_per_stage=2
    )
    fit(model, csbm_dm, make_trainer)
    report = model.privacy_spent()
    n_train = int(csbm_dm.data.train_mask.sum())  # ~1500 (identity-keyed split)
    steps = 2 * round(n_train / 500)  # batch 500 -> 3 Poisson batches/epoch
    for s in range(3):
        assert report.count(f"stage{s}/dpsgd") == steps
    assert report.count("nap") == 2
    nap = next(e for e in report.ledger if e.name == "nap")
    assert nap.sensitivity == pytest.approx(math.sqrt(21))  # D = the csbm graph's max degree
    z, q = model.noise_multiplier, 500 / n_train
    by_hand = PrivacyAccountant("node", report.delta)
    by_hand.add_gaussian("nap", z, count=2, sensitivity=math.sqrt(21))
    for s in range(3):
        by_hand.add_subsampled_gaussian(f"s{s}", z, q, steps=steps)
    assert report.epsilon == pytest.approx(by_hand.epsilon(), rel=1e-9)
    assert 8.0 * 0.99 <= report.epsilon <= 8.0
    assert report.delta < 1 / csbm_dm.data.num_nodes
    # group normalization with one group replaces batch norm (thesis §5.5.3)
    norms = [m for m in model._net().modules() if isinstance(m, torch.nn.GroupNorm)]
    assert norms and all(m.num_groups == 1 for m in norms)
    assert model.staged.best == {}  # no model selection on private validation labels


def test_node_level_refuses_batchnorm_and_bad_arguments():
    with pytest.raises(ValueError, match="BatchNorm mixes"):
        ProGAP(privacy="node", epsilon=8.0, normalization="batch")
    bad_args = (dict(depth=0), dict(base_layers=0), dict(training="greedy"), dict(patience=-1))
    for bad in (*bad_args, dict(ensemble=0), dict(ensemble=1.5)):
        with pytest.raises(ValueError):
            ProGAP(privacy="edge", epsilon=1.0, **bad)
    assert ProGAP(privacy="edge", epsilon=math.inf).privacy == "none"  # math.inf: no privacy
    net = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4))
    with pytest.raises(NotDPCompatibleError):  # the wrapper checks whatever it is given
        ProGAP(privacy="node", epsilon=8.0, max_degree=10)._dp_wrap(net, "net")


@pytest.mark.parametrize("training", ["progressive", "layerwise"])
def test_progressive_trains_earlier_bases_and_layerwise_freezes_them(
    training, csbm_dm, make_trainer
):
    model = ProGAP(privacy="edge", epsilon=4.0, depth=2, epochs_per_stage=3, training=training)
    spy = StageSpy()
    fit(model, csbm_dm, make_trainer, callbacks=[spy])
    start_of = {s: spy.stages.index(s) for s in range(3)}
    final = checksums(model)
    net = model._net()
    base0 = {id(p) for p in net.base[0].parameters()}
    if training == "progressive":
        # base 0 keeps training through stages 1 and 2 (in the optimizer, and it moves)
        assert base0 <= spy.optim_params[start_of[2] + 1]
        assert spy.base_sums[start_of[2]][0] != spy.base_sums[start_of[1]][0]
        assert final[0] != spy.base_sums[start_of[2]][0]
    else:
        # frozen from stage 1 on: out of the optimizer and bit-identical
        assert not base0 & spy.optim_params[start_of[1] + 1]
        assert spy.base_sums[start_of[1]][0] == spy.base_sums[start_of[2]][0] == final[0]
        assert spy.base_sums[start_of[2]][1] == final[1]  # base 1 frozen in stage 2
        assert all(not p.requires_grad for p in net.base[0].parameters())
    assert final[2] != spy.base_sums[start_of[2]][2]  # the newest base trains either way


def test_nap_output_is_the_aggregate_of_the_previous_stage_embeddings(csbm_dm, make_trainer):
    """Non-private layerwise: base 0 is frozen after stage 0, so X~^(1) must equal
    A^T normalize(MLP_base^(0)(X)) computed from the final weights (Eq. 5.8–5.9); X holds the
    features and (the default without privacy) the exact label counts."""
    model = ProGAP(privacy="none", depth=1, epochs_per_stage=3, training="layerwise")
    fit(model, csbm_dm, make_trainer)
    data = csbm_dm.data
    net = model._net().eval()
    with torch.no_grad():
        expected = sum_aggregate(
            normalize_rows(net.base[0](model._features(data))), data.edge_index, data.num_nodes
        )
    torch.testing.assert_close(model.releases["nap/1"], expected)


@pytest.mark.parametrize(
    "privacy,kw", [("edge", {}), ("node", {"max_degree": 21, "batch_size": 500})]
)
def test_killed_and_resumed_fit_ends_with_the_same_ledger(
    privacy, kw, csbm_dm, make_trainer, tmp_path
):
    eps = 1.0 if privacy == "edge" else 8.0
    args = dict(privacy=privacy, epsilon=eps, depth=2, epochs_per_stage=2, seed=3, **kw)
    ckpt = ModelCheckpoint(dirpath=tmp_path, save_top_k=-1, every_n_epochs=1, filename="{epoch}")
    full = ProGAP(**args)
    fit(full, csbm_dm, make_trainer, enable_checkpointing=True, callbacks=[ckpt])
    for epoch in (0, 2, 4):  # mid-stage 0, first epoch of stage 1 done, first of stage 2 done
        resumed = ProGAP(**args)
        trainer = make_trainer(max_epochs=10_000, enable_checkpointing=False)
        trainer.fit(resumed, csbm_dm, ckpt_path=tmp_path / f"epoch={epoch}.ckpt")
        assert trainer.current_epoch == 6
        assert resumed.accountant.state_dict() == full.accountant.state_dict()
        assert resumed.privacy_spent().epsilon == pytest.approx(full.privacy_spent().epsilon)
        cached = epoch // 2  # NAP outputs already in the checkpoint
        for k in range(cached):
            assert torch.equal(resumed.releases[f"nap/{k + 1}"], full.releases[f"nap/{k + 1}"])
        queried = resumed.nap.calls if resumed.nap is not None else 0
        assert queried == 2 - cached  # never re-queried for what the checkpoint holds


def test_loaded_checkpoint_predicts_from_the_cache_without_querying(
    csbm_dm, make_trainer, tmp_path
):
    model = ProGAP(privacy="edge", epsilon=1.0, depth=2, epochs_per_stage=2)
    trainer = fit(model, csbm_dm, make_trainer)
    trainer.save_checkpoint(tmp_path / "progap.ckpt")
    loaded = ProGAP.load_from_checkpoint(tmp_path / "progap.ckpt")
    naps = [(loaded.releases[n], model.releases[n]) for n in model.hop_names()]
    assert len(naps) == 2 and all(torch.equal(a, b) for a, b in naps)
    assert loaded.privacy_spent() == model.privacy_spent()
    got = make_trainer().test(loaded, csbm_dm, verbose=False)[0]["test/acc"]
    want = make_trainer().test(model, csbm_dm, verbose=False)[0]["test/acc"]
    assert got == pytest.approx(want)
    probs = make_trainer().predict(loaded, csbm_dm)[0]
    assert probs.shape == (csbm_dm.data.num_nodes, csbm_dm.num_classes)
    assert loaded.nap is None and model.nap.calls == 2  # transductive: cache only


def test_unfitted_model_refuses_transductive_test(csbm_dm, make_trainer):
    model = ProGAP(privacy="edge", epsilon=1.0, num_features=csbm_dm.num_features, num_classes=3)
    with pytest.raises(RuntimeError, match="has not collected or released"):
        make_trainer().test(model, csbm_dm, verbose=False)


def test_inductive_inference_runs_nap_on_the_new_graph_only(csbm_dm, make_trainer):
    model = ProGAP(privacy="edge", epsilon=2.0, depth=2, epochs_per_stage=2)
    fit(model, csbm_dm, make_trainer)
    ledger = model.accountant.state_dict()
    g = torch.Generator().manual_seed(1)
    new = Data(
        x=torch.randn(50, csbm_dm.num_features, generator=g),
        edge_index=coalesce(torch.randint(0, 50, (2, 200), generator=g)),  # a simple graph
        inductive=True,
    )
    p1 = model.predict_inductive(new)
    p2 = model.predict_inductive(new)
    assert p1.shape == (50, csbm_dm.num_classes)
    assert torch.equal(p1, p2)  # the same graph: its cached release, nothing more spent
    assert model.nap.calls == 2 + 2  # K NAPs on the new graph
    other = Data(x=new.x, edge_index=new.edge_index.flip(0), inductive=True)
    assert not torch.allclose(model.predict_inductive(other), p1)  # another graph: fresh noise
    assert model.nap.calls == 2 + 2 + 2
    assert model.accountant.state_dict() == ledger  # the training ledger is untouched
    assert model.last_inference_report.count("nap") == 2


def test_patience_stops_a_stage_early_without_steps(csbm_dm, make_trainer):
    model = ProGAP(privacy="none", depth=1, epochs_per_stage=30, patience=0, lr=0.0)
    trainer = fit(model, csbm_dm, make_trainer)
    # lr 0: val/acc never improves after the first epoch of a stage, so each stage trains one
    # epoch (one full-batch step) and skips the rest; the fit still walks through all epochs
    assert trainer.current_epoch == 60
    assert trainer.global_step == 2


def test_nonprivate_progap_is_accurate_and_edge_progap_beats_mlp(csbm_dm, make_trainer):
    model = ProGAP(privacy="none", depth=2, epochs_per_stage=30, seed=0)
    trainer = fit(model, csbm_dm, make_trainer)
    acc_inf = trainer.test(model, csbm_dm, verbose=False)[0]["test/acc"]
    assert acc_inf > 0.85
    private = ProGAP(privacy="edge", epsilon=8.0, depth=2, epochs_per_stage=30, seed=0)
    trainer = fit(private, csbm_dm, make_trainer)
    acc_edge = trainer.test(private, csbm_dm, verbose=False)[0]["test/acc"]
    mlp = MLP(hidden=16, layers=3)
    t = make_trainer(max_epochs=90)
    t.fit(mlp, csbm_dm)
    acc_mlp = t.test(mlp, csbm_dm, verbose=False)[0]["test/acc"]
    assert acc_edge > acc_mlp + 0.05


def test_fits_with_a_logger_next_to_the_datamodule(csbm_dm, make_trainer, tmp_path):
    """Model and datamodule both have ``seed``/``max_degree`` hparams: logging must not fail."""
    from lightning.pytorch.loggers import CSVLogger

    model = ProGAP(privacy="edge", epsilon=1.0, depth=1, epochs_per_stage=1, seed=5)
    fit(model, csbm_dm, make_trainer, logger=CSVLogger(tmp_path))
    logged = (tmp_path / "lightning_logs" / "version_0" / "hparams.yaml").read_text()
    assert "epochs_per_stage: 1" in logged and "seed: 5" in logged
    assert (tmp_path / "lightning_logs" / "version_0" / "metrics.csv").read_text().count("stage")


def test_warm_start_copies_the_previous_base_into_a_new_stage(csbm_dm, make_trainer):
    model = ProGAP(
        privacy="edge", epsilon=4.0, depth=2, epochs_per_stage=2, warm_start=True,
        training="layerwise",
    )  # fmt: skip
    spy = StageSpy()
    fit(model, csbm_dm, make_trainer, callbacks=[spy])
    start_of2 = spy.stages.index(2)
    # layerwise: base 1 is frozen in stage 2, and base 2 started from base 1's final weights
    assert spy.base_sums[start_of2 + 1][1] == checksums(model)[1]
    net = model._net()
    before = [p.detach().clone() for p in net.base[2].parameters()]
    net.enter_stage(2, warm_start=True)
    after = list(net.base[2].parameters())
    assert all(torch.equal(a, b) for a, b in zip(after, net.base[1].parameters(), strict=True))
    assert any(not torch.equal(a, b) for a, b in zip(after, before, strict=True))


@pytest.mark.parametrize("privacy", ["edge", "node"])
def test_last_stage_ensemble_costs_nothing_extra_and_shares_the_naps(
    privacy, csbm_dm, make_trainer
):
    """M networks in the last stage: the ledger equals the single network's; the NAPs read
    member 0's bases; every member starts the last stage from member 0's earlier bases."""
    kw = dict(privacy=privacy, epsilon=4.0 if privacy == "edge" else 8.0, depth=2)
    if privacy == "node":
        kw.update(max_degree=21, batch_size=500, epochs_per_stage=2)
    else:
        kw.update(epochs_per_stage=5)
    spy = StageSpy()
    model = ProGAP(ensemble=3, **kw)
    fit(model, csbm_dm, make_trainer, callbacks=[spy])
    single = ProGAP(**kw)
    fit(single, csbm_dm, make_trainer)
    a, b = model.privacy_spent(), single.privacy_spent()
    assert a.epsilon == pytest.approx(b.epsilon, rel=1e-9)
    assert [(e.name, e.count) for e in a.ledger] == [(e.name, e.count) for e in b.ledger]
    net = model._net()
    assert len(net.members) == 3 and net.base is net.members[0].base
    # stage 0-1 optimizers hold member 0 only; the last stage holds every member
    start_of = {s: spy.stages.index(s) for s in range(3)}
    member = [{id(p) for p in m.parameters()} for m in net.members]
    assert not member[1] & spy.optim_params[start_of[1] + 1]
    last = spy.optim_params[start_of[2] + 1] if start_of[2] + 1 < len(spy.stages) else None
    if last is not None:
        assert member[1] & last and member[2] & last
    # prediction = mean of the members' log-probabilities on the cached aggregates
    model.eval()
    inputs = (model._features(csbm_dm.data), *[model.releases[n] for n in model.hop_names()])
    with torch.no_grad():
        want = torch.stack([m(*inputs).log_softmax(-1) for m in net.members]).mean(0)
        assert torch.allclose(net(*inputs), want)
        assert not torch.allclose(net.members[1](*inputs), net.members[2](*inputs))
