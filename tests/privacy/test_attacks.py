"""Privacy regressions built as attacks: two neighbouring inputs in, released artifacts compared.

One test per fault of the privacy-hardening review (issue 12): node-level degree bounding,
replayable noise, unnoised data in checkpoints, gradient accumulation, the edge unit,
preprocessing that reads private data, and the smaller lifecycle faults.
"""

from __future__ import annotations

import math
import tempfile

import lightning as L
import pytest
import torch
from lightning_dpgnn.callbacks import PrivacyBudget
from torch_geometric.data import Data

from lightning_dpgnn import (
    DPGNN,
    GAP,
    GNN,
    LPGNN,
    PGC,
    SAGE,
    EdgeRand,
    PGCLinkPrediction,
    ProGAP,
)
from lightning_dpgnn.cli import DPGNNCLI
from lightning_dpgnn.data import NodeDataModule
from lightning_dpgnn.methods import DPMLP, MLP
from lightning_dpgnn.methods.base import AccountingError
from lightning_dpgnn.privacy import (
    DegreeBoundError,
    check_degree_promise,
    is_secure_mode,
    secure_mode,
    set_secure_mode,
)
from lightning_dpgnn.privacy.aggregation import (
    edge_sensitivity,
    normalize_rows,
    sum_aggregate,
)

D_CSBM = 21  # largest in- and out-degree of the embedded csbm graph


def _quiet(tmp_path, **kw) -> L.Trainer:
    defaults = dict(
        max_epochs=4, logger=False, enable_checkpointing=False, enable_progress_bar=False,
        enable_model_summary=False, default_root_dir=tmp_path,
    )
    defaults.update(kw)
    return L.Trainer(**defaults)


def _remove_node(data: Data, v: int) -> tuple[Data, torch.Tensor]:
    """The neighbouring graph without node ``v`` (and its edges), relabelled; and the map
    from the new ids to the old ones."""
    keep = torch.ones(data.num_nodes, dtype=torch.bool)
    keep[v] = False
    return data.subgraph(keep), keep.nonzero().view(-1)


# -- 1. node level: the degree bound ----------------------------------------------------------
def _bounded_random_graph(n: int, D: int, seed: int) -> Data:
    """A random directed graph with every in- and out-degree <= D (a union of D random
    permutations, duplicates and self-loops removed)."""
    g = torch.Generator().manual_seed(seed)
    src = torch.arange(n).repeat(D)
    dst = torch.cat([torch.randperm(n, generator=g) for _ in range(D)])
    keep = src != dst
    ei = torch.unique(torch.stack([src[keep], dst[keep]]), dim=1)
    x = torch.randn(n, 8, generator=g)
    return Data(x=x, edge_index=ei, num_nodes=n)


@pytest.mark.parametrize("D", [1, 5, 12])
def test_removing_any_node_moves_the_other_rows_by_at_most_the_accounted_sensitivity(D):
    data = _bounded_random_graph(300, D, seed=D)
    # the class the guarantee is stated for
    check_degree_promise(data.edge_index, data.num_nodes, D)
    accounted = GAP(privacy="node", epsilon=1.0, max_degree=D)._mechanism_for(1.0).sensitivity
    assert accounted == pytest.approx(math.sqrt(D))
    full = sum_aggregate(normalize_rows(data.x), data.edge_index, data.num_nodes)
    worst = 0.0
    for v in range(data.num_nodes):  # every node, removed with all its edges and features
        sub, old = _remove_node(data, v)
        # the class is closed under node removal
        check_degree_promise(sub.edge_index, sub.num_nodes, D)
        agg = sum_aggregate(normalize_rows(sub.x), sub.edge_index, sub.num_nodes)
        worst = max(worst, float(torch.linalg.vector_norm(agg - full[old])))
    assert worst <= accounted + 1e-5
    assert worst > 0.9 * accounted  # the bound is tight on these graphs (not vacuous)


def test_a_graph_above_the_degree_promise_is_refused_before_any_mechanism(tmp_path):
    model = GAP(privacy="node", epsilon=4.0, max_degree=D_CSBM - 1, encoder_epochs=1,
                classifier_epochs=1)
    with pytest.raises(DegreeBoundError, match="public upper bound"):
        _quiet(tmp_path).fit(model, NodeDataModule("csbm"))
    assert model.accountant.total_count() == 0
    # inductive inference at node level holds the new graph to the same promise
    ok = GAP(privacy="node", epsilon=None, noise_multiplier=1.0, max_degree=D_CSBM,
             num_features=64, num_classes=5)  # as if loaded from a fitted checkpoint
    dense = NodeDataModule("csbm", dataset_kwargs={"avg_degree": 40.0}).data
    new = Data(x=dense.x, edge_index=dense.edge_index, num_nodes=dense.num_nodes)
    new.inductive = True
    with pytest.raises(DegreeBoundError):
        ok.predict_inductive(new)


# -- 2. noise nobody can replay ---------------------------------------------------------------
def _cli_fit(args: list[str], model_args: tuple[str, ...] = (
    "--model.encoder_epochs=2", "--model.classifier_epochs=1",
)) -> GAP:
    """A CLI fit as a user runs it (checkpoint and run file go to a temporary folder)."""
    root = tempfile.mkdtemp(prefix="dpgnn-cli-")
    cli = DPGNNCLI(
        L.LightningModule, L.LightningDataModule, subclass_mode_model=True,
        subclass_mode_data=True, seed_everything_default=0, save_config_callback=None,
        auto_configure_optimizers=False,
        args=["fit", "--trainer.enable_progress_bar=false", f"--trainer.default_root_dir={root}",
              *model_args, *args],
    )
    return cli.model


def test_a_recipes_public_global_seed_does_not_replay_dpsgd_noise(capsys):
    """The DP-MLP recipes fix ``seed_everything: 0``: it fixes the initial weights, but two
    fits still end with different weights (gradient noise and Poisson batches come from OS
    entropy), so replaying the recipe reproduces neither release."""
    dpmlp = ("--model=lightning_dpgnn.DPMLP", "--model.epsilon=4", "--model.epochs=1",
             "--model.batch_size=500")
    a, b = _cli_fit([], dpmlp), _cli_fit([], dpmlp)
    pa, pb = list(a.mlp.parameters()), list(b.mlp.parameters())
    assert len(pa) == len(pb) and all(x.shape == y.shape for x, y in zip(pa, pb, strict=True))
    assert all(not torch.equal(x, y) for x, y in zip(pa, pb, strict=True))
    for m in (a, b):
        assert not m.privacy_spent().reproducible_noise


def test_two_fits_with_the_cli_defaults_never_release_equal_aggregates(capsys):
    a, b = _cli_fit([]), _cli_fit([])  # same public seed_everything(0), same recipe
    assert a.releases["pma"].shape == b.releases["pma"].shape
    # the label counts (on by default at edge level), drawn before the encoder trains on
    # them, differ on every row...
    counts_a, counts_b = a.releases["label_counts"], b.releases["label_counts"]
    assert counts_a.shape == counts_b.shape
    assert not bool((counts_a == counts_b).all(dim=-1).any())
    # ...and so do the released noisy aggregates: neither noise is replayable
    rows_equal = (a.releases["pma"] == b.releases["pma"]).all(dim=-1).all(dim=-1)
    assert not bool(rows_equal.any())
    for m in (a, b):
        report = m.privacy_spent()
        assert not report.reproducible_noise and report.secure_randomness is False


def test_an_attacker_replaying_the_public_seed_on_each_hypothesis_matches_neither(tmp_path):
    """Edge level: graphs differing in one friendship. With the old behaviour (noise from the
    seeded global RNG) the attacker re-ran the public recipe on both hypotheses and found the
    release bit-identical to one of them."""
    base = NodeDataModule("csbm").data
    u, w = (int(t) for t in base.edge_index[:, 0])
    drop = ~(((base.edge_index[0] == u) & (base.edge_index[1] == w))
             | ((base.edge_index[0] == w) & (base.edge_index[1] == u)))
    without = base.clone()
    without.edge_index = base.edge_index[:, drop]

    def release(data: Data) -> torch.Tensor:
        L.seed_everything(0, verbose=False)
        model = GAP(privacy="edge", epsilon=1.0, encoder_epochs=1, classifier_epochs=1, seed=0)
        _quiet(tmp_path, max_epochs=2).fit(model, NodeDataModule.from_data(data))
        return model.releases["pma"]

    released = release(base)
    for hypothesis in (base, without):
        replay = release(hypothesis)
        untouched = torch.ones(base.num_nodes, dtype=torch.bool)
        untouched[[u, w]] = False
        assert not torch.equal(replay[untouched], released[untouched])


def test_explicit_noise_seed_is_reproducible_and_says_so(tmp_path):
    def fit() -> GAP:
        model = GAP(privacy="edge", epsilon=1.0, encoder_epochs=1, classifier_epochs=1,
                    seed=0, noise_seed=7)
        _quiet(tmp_path, max_epochs=2).fit(model, NodeDataModule("csbm"))
        return model

    a, b = fit(), fit()
    assert torch.equal(a.releases["pma"], b.releases["pma"])
    report = a.privacy_spent()
    assert report.reproducible_noise and "not private against anyone who knows" in str(report)
    with secure_mode(), pytest.raises(Exception, match="secure mode"):
        fit()


def test_secure_mode_is_recorded_and_privacy_budget_restores_it(tmp_path):
    assert not is_secure_mode()
    set_secure_mode(True)
    try:
        model = GAP(privacy="edge", epsilon=1.0, encoder_epochs=1, classifier_epochs=1)
        trainer = _quiet(tmp_path, max_epochs=2, callbacks=[PrivacyBudget(1.0, secure_mode=True)])
        trainer.fit(model, NodeDataModule("csbm"))
        assert is_secure_mode()  # restored to what was set, not forced off
        report = model.privacy_spent()
        assert report.secure_randomness is True and "OS CSPRNG" in str(report)
    finally:
        set_secure_mode(False)
    trainer = _quiet(tmp_path, max_epochs=2, callbacks=[PrivacyBudget(1.0, secure_mode=True)])
    model = GAP(privacy="edge", epsilon=1.0, encoder_epochs=1, classifier_epochs=1)
    trainer.fit(model, NodeDataModule("csbm"))
    assert not is_secure_mode()  # restored to off
    assert model.privacy_spent().secure_randomness is True


# -- 3. checkpoints hold parameters, mechanism outputs, the report and hyper-parameters ------
def _tensors(obj, path=()):
    if isinstance(obj, torch.Tensor):
        yield path, obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _tensors(v, (*path, k))
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from _tensors(v, (*path, i))
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):
        yield from _tensors(vars(obj), (*path, type(obj).__name__))


def _allowed(path: tuple) -> bool:
    if path[0] in ("state_dict", "optimizer_states"):
        return True  # parameters/buffers, and optimizer moments of (noised) gradients
    if path[:2] == ("dpgnn_privacy", "outputs"):
        return True  # recorded mechanism outputs
    if path[:2] == ("dpgnn_privacy", "public") and path[2:3] == ("edge_split",):
        return True  # LDP: the graph is public, so is a split of its edges
    # per-stage best-epoch snapshots (the staged fit's callback state) are parameter state dicts
    return len(path) > 3 and path[:3] == ("callbacks", "StagedFit", "best") and "state" in path


LDP_DM = dict(split="lpgnn", feature_range=(0.0, 1.0), feature_bounds=(-4.0, 4.0))
CASES = {
    "gap-edge": (lambda: GAP(privacy="edge", epsilon=1.0, encoder_epochs=2,
                             classifier_epochs=2), {}),
    "gap-edge-no-encoder": (lambda: GAP(privacy="edge", epsilon=1.0, encoder_layers=0,
                                        classifier_epochs=2), {}),
    "gap-node": (lambda: GAP(privacy="node", epsilon=8.0, max_degree=D_CSBM, batch_size=500,
                             encoder_epochs=1, classifier_epochs=1), {}),
    "gap-node-no-encoder": (lambda: GAP(privacy="node", epsilon=8.0, max_degree=D_CSBM,
                                        batch_size=500, encoder_layers=0,
                                        classifier_epochs=1), {}),
    "gap-edge-label-counts": (lambda: GAP(privacy="edge", epsilon=1.0, label_counts=True,
                                          encoder_epochs=1, classifier_epochs=1), {}),
    "progap-edge": (lambda: ProGAP(privacy="edge", epsilon=1.0, epochs_per_stage=1), {}),
    "progap-edge-label-counts": (lambda: ProGAP(privacy="edge", epsilon=1.0, label_counts=True,
                                                epochs_per_stage=1), {}),
    "progap-node": (lambda: ProGAP(privacy="node", epsilon=8.0, max_degree=D_CSBM,
                                   batch_size=500, epochs_per_stage=1), {}),
    "mlp": (lambda: MLP(epochs=2), {}),
    "dpmlp": (lambda: DPMLP(epsilon=4.0, epochs=1, batch_size=500), {}),
    "lpgnn": (lambda: LPGNN(x_epsilon=1.0, y_epsilon=1.0, x_steps=1, y_steps=1), LDP_DM),
    "pgc": (lambda: PGC(x_epsilon=2.0), LDP_DM),
    "pgc-link": (lambda: PGCLinkPrediction(x_epsilon=8.0), LDP_DM),
    "gnn": (lambda: GNN(), {}),
    "sage": (lambda: SAGE(epochs=2), {}),
    "edgerand": (lambda: EdgeRand(epsilon=1.0, epochs=2), {}),
    "dpgnn": (lambda: DPGNN(epsilon=8.0, max_degree=D_CSBM, epochs=1, batch_size=500), {}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_tensor_in_a_checkpoint_is_a_parameter_or_a_recorded_output(case, tmp_path):
    make, dm_kw = CASES[case]
    model, dm = make(), NodeDataModule("csbm", **dm_kw)
    trainer = _quiet(tmp_path, max_epochs=4)  # the longest plan: GAP edge, 2 + 2 epochs
    trainer.fit(model, dm)
    path = tmp_path / "model.ckpt"
    trainer.save_checkpoint(path)
    ckpt = torch.load(path, weights_only=False)
    stray = [p for p, _ in _tensors(ckpt) if not _allowed(p)]
    assert stray == []
    # no per-node row of the checkpoint is a function of a node's own data without noise:
    # in particular hop 0 (normalized features or encoder output) is never stored
    data = dm.data
    clear = normalize_rows(data.x.float())
    for p, t in _tensors(ckpt):
        if t.dim() >= 2 and t.shape[0] == data.num_nodes and t.is_floating_point():
            rows = t.reshape(t.shape[0], -1, t.shape[-1])
            for k in range(rows.shape[1]):
                if rows.shape[-1] == clear.shape[-1]:
                    assert not torch.allclose(rows[:, k], clear, atol=1e-4), p
    # the checkpoint restores what a user needs: the report and the outputs
    assert ckpt["dpgnn_privacy"]["report"]["level"] == model.privacy_spent().level
    _audit_published(model, dm, tmp_path)


def _audit_published(model, dm, tmp_path) -> None:
    """A published model (save_pretrained) holds the parameters and the recorded outputs, and
    the class it loads as predicts the same with the same report (zoo, invariant 9)."""
    from safetensors.torch import load_file

    from lightning_dpgnn import PrivateModule

    before = _quiet(tmp_path).predict(model, dm)[0]
    model.save_pretrained(tmp_path / "published")
    params = set(model.state_dict())
    assert set(load_file(tmp_path / "published" / "model.safetensors")) == params
    outputs = load_file(tmp_path / "published" / "mechanism_outputs.safetensors")
    assert all(k.startswith(("s.outputs.", "s.public.edge_split.")) for k in outputs)
    loaded = PrivateModule.from_pretrained(tmp_path / "published")  # the folder names the class
    assert type(loaded) is type(model)
    assert torch.allclose(_quiet(tmp_path).predict(loaded, dm)[0], before, atol=1e-6)
    assert loaded.privacy_spent() == model.privacy_spent()


def test_a_restored_gap_predicts_from_the_callers_features_and_the_cached_hops(tmp_path):
    dm = NodeDataModule("csbm")
    model = GAP(privacy="node", epsilon=8.0, max_degree=D_CSBM, batch_size=500,
                encoder_epochs=1, classifier_epochs=1)
    trainer = _quiet(tmp_path, max_epochs=2)
    trainer.fit(model, dm)
    before = trainer.predict(model, dm)[0]
    path = tmp_path / "gap.ckpt"
    trainer.save_checkpoint(path)
    restored = GAP.load_from_checkpoint(path)
    assert restored.releases["pma"].shape[1] == restored.hparams.hops  # K noisy hops, no hop 0
    after = _quiet(tmp_path).predict(restored, dm)[0]
    assert torch.allclose(before, after, atol=1e-5)
    assert restored.accountant.total_count("pma") == 2  # nothing re-queried


# -- 4. trainer settings that break DP-SGD accounting -----------------------------------------
@pytest.mark.parametrize(
    "setting", [{"accumulate_grad_batches": 4}, {"overfit_batches": 2},
                {"limit_train_batches": 0.5}, {"limit_train_batches": 3}]
)
@pytest.mark.parametrize("make", [
    lambda: DPMLP(epsilon=2.0, epochs=2, batch_size=200),
    lambda: GAP(privacy="node", epsilon=8.0, max_degree=D_CSBM, batch_size=500,
                encoder_epochs=1, classifier_epochs=1),
])
def test_settings_that_break_dpsgd_accounting_are_refused_before_any_step(make, setting, tmp_path):
    model = make()
    with pytest.raises(AccountingError, match=next(iter(setting))):
        _quiet(tmp_path, **setting).fit(model, NodeDataModule("csbm"))
    assert model.accountant.total_count() == 0


def test_accumulation_is_fine_where_no_step_is_a_dpsgd_step(tmp_path):
    model = GAP(privacy="edge", epsilon=1.0, encoder_epochs=1, classifier_epochs=1)
    _quiet(tmp_path, accumulate_grad_batches=2).fit(model, NodeDataModule("csbm"))
    assert model.privacy_spent().count("pma") == 2


# -- 5. the edge unit --------------------------------------------------------------------------
def test_removing_one_friendship_moves_two_rows_and_the_undirected_unit_accounts_for_it():
    data = NodeDataModule("csbm").data
    x = normalize_rows(data.x)
    full = sum_aggregate(x, data.edge_index, data.num_nodes)
    worst = 0.0
    for e in range(0, data.num_edges, 397):
        u, w = (int(t) for t in data.edge_index[:, e])
        ei = data.edge_index
        keep = ~(((ei[0] == u) & (ei[1] == w)) | ((ei[0] == w) & (ei[1] == u)))
        agg = sum_aggregate(x, ei[:, keep], data.num_nodes)
        worst = max(worst, float(torch.linalg.vector_norm(agg - full)))
    assert worst > 1.0 + 1e-3  # the directed unit's sensitivity 1 would not cover it
    assert worst <= edge_sensitivity("undirected") + 1e-5
    model = GAP(privacy="edge", epsilon=1.0)
    assert model._mechanism_for(1.0).sensitivity == pytest.approx(math.sqrt(2))


# -- 6. preprocessing reads private data ------------------------------------------------------
@pytest.mark.parametrize("make,dm_kw,option", [
    (lambda: GAP(privacy="edge", epsilon=1.0), {"remove_isolated": True}, "remove_isolated"),
    (lambda: GAP(privacy="node", epsilon=8.0, max_degree=D_CSBM), {"min_class_size": 10},
     "min_class_size"),
    (lambda: DPMLP(epsilon=2.0), {"feature_range": (0.0, 1.0)}, "feature_range"),
    (lambda: LPGNN(), {"feature_range": (0.0, 1.0), "split": "lpgnn"}, "feature_range"),
])
def test_preprocessing_that_reads_protected_data_is_refused(make, dm_kw, option, tmp_path):
    model = make()
    with pytest.raises(AccountingError, match=option):
        _quiet(tmp_path).fit(model, NodeDataModule("csbm", **dm_kw))
    assert model.accountant.total_count() == 0


def test_node_level_needs_public_classes_instead_of_reading_labels(tmp_path):
    data = NodeDataModule("csbm").data
    given = NodeDataModule.from_data(Data(x=data.x, edge_index=data.edge_index, y=data.y))
    model = DPMLP(epsilon=2.0, epochs=1)
    with pytest.raises(AccountingError, match="number of classes"):
        _quiet(tmp_path).fit(model, given)
    # declaring them (public metadata) is enough
    declared = NodeDataModule.from_data(
        Data(x=data.x, edge_index=data.edge_index, y=data.y), classes=[0, 1, 2, 3, 4]
    )
    _quiet(tmp_path, max_epochs=1).fit(DPMLP(epsilon=2.0, epochs=1), declared)


# -- 7. smaller lifecycle faults ---------------------------------------------------------------
NODE_LEVEL_FITS = {
    "DPMLP": lambda **kw: DPMLP(epsilon=2.0, epochs=2, batch_size=500, **kw),
    "GAP": lambda **kw: GAP(
        privacy="node", epsilon=8.0, max_degree=21, encoder_epochs=1, classifier_epochs=1,
        batch_size=500, **kw,
    ),
    "ProGAP": lambda **kw: ProGAP(
        privacy="node", epsilon=8.0, max_degree=21, depth=1, epochs_per_stage=1,
        batch_size=500, **kw,
    ),
    "DPGNN": lambda **kw: DPGNN(epsilon=8.0, max_degree=21, epochs=1, batch_size=500, **kw),
}


@pytest.mark.parametrize("method", sorted(NODE_LEVEL_FITS))
def test_node_level_fits_log_no_metric_on_private_labels_unless_asked(tmp_path, method):
    """Neither the DP-SGD batches' loss and accuracy nor validation metrics (all computed on
    private labels without noise) reach the logs of a node-level fit, unless asked for."""
    trainer = _quiet(tmp_path, max_epochs=2)
    trainer.fit(NODE_LEVEL_FITS[method](), NodeDataModule("csbm"))
    assert not any(k.startswith(("val/", "train/")) for k in trainer.callback_metrics)
    trainer = _quiet(tmp_path, max_epochs=2)
    trainer.fit(NODE_LEVEL_FITS[method](log_private_metrics=True), NodeDataModule("csbm"))
    assert "val/acc" in trainer.callback_metrics and "train/loss" in trainer.callback_metrics


def test_predict_is_transductive_unless_the_graph_is_marked_inductive(tmp_path):
    dm = NodeDataModule("csbm")
    model = GAP(privacy="edge", epsilon=1.0, encoder_epochs=1, classifier_epochs=1)
    trainer = _quiet(tmp_path, max_epochs=2)
    trainer.fit(model, dm)
    # a graph of the same size is still never guessed to be "new": no mechanism runs
    same_size = NodeDataModule("csbm", dataset_kwargs={"seed": 3}).data
    model.predict_step(same_size, 0)
    assert model.accountant.total_count("pma") == 2 and model.pma.calls == 2
    same_size.inductive = True
    model.predict_step(same_size, 0)
    assert model.pma.calls == 4 and model.accountant.total_count("pma") == 2


@pytest.mark.parametrize(
    "model_args, output",
    [
        (("--model=lightning_dpgnn.DPGNN", "--model.epsilon=4", "--model.epochs=1",
          "--model.max_degree=21", "--model.batch_size=500"), "aggregation"),
        (("--model=lightning_dpgnn.EdgeRand", "--model.epsilon=2", "--model.epochs=1"),
         "edges"),
    ],
)
def test_the_baselines_releases_are_not_replayed_by_the_public_seed(capsys, model_args, output):
    """The DPGNN and EdgeRand recipes fix ``seed_everything: 0`` too: two CLI fits under the
    same public seed release different cached outputs (DPGNN's noisy inference aggregate,
    EdgeRand's randomized graph), so replaying the recipe reproduces neither."""
    a, b = _cli_fit([], model_args), _cli_fit([], model_args)
    out_a, out_b = a.releases[output], b.releases[output]
    assert out_a is not None and out_b is not None
    assert out_a.shape != out_b.shape or not torch.equal(out_a, out_b)
    for m in (a, b):
        assert not m.privacy_spent().reproducible_noise
