"""The staged fit loop on public Lightning API. Fails loudly if an upgrade breaks stage
switching, per-epoch dataloader reloading, optimizer swapping or checkpoint resume."""

import logging
import warnings

import lightning as L
import pytest
import torch
from lightning.pytorch.callbacks import ModelCheckpoint, RichProgressBar, TQDMProgressBar

from lightning_dpgnn.methods.gap import GAP


class Spy(L.Callback):
    """Records, per epoch, the stage, the optimizer's parameters and the training rows."""

    def __init__(self):
        self.stages, self.optim_params, self.row_shapes = [], [], []

    def on_train_epoch_start(self, trainer, pl_module):
        self.stages.append(pl_module.staged.current_stage)
        params = {id(p) for g in trainer.optimizers[0].param_groups for p in g["params"]}
        self.optim_params.append(params)
        x, _ = next(iter(trainer.train_dataloader))
        self.row_shapes.append(tuple(x.shape[1:]))


def test_stages_switch_inside_one_fit(csbm_dm, make_trainer):
    model = GAP(privacy="edge", epsilon=1.0, encoder_epochs=3, classifier_epochs=2, hops=2)
    spy = Spy()
    trainer = make_trainer(max_epochs=1000, callbacks=[spy])  # the model owns its epochs
    trainer.fit(model, csbm_dm)
    assert trainer.current_epoch == 5
    assert spy.stages == [0, 0, 0, 1, 1]
    enc = {id(p) for p in model.encoder_model.parameters()}
    cls = {id(p) for p in model.classifier.parameters()}
    assert spy.optim_params[0] == enc and spy.optim_params[-1] == cls
    # the encoder trains on the features and (the default at edge level) the label counts
    assert spy.row_shapes[0] == (csbm_dm.num_features + csbm_dm.num_classes,)
    assert spy.row_shapes[-1] == (3, 16)  # classifier trains on K+1 cached hops
    assert model.pma.calls == 2


def test_per_stage_best_model_is_restored(csbm_dm, make_trainer):
    model = GAP(privacy="none", encoder_epochs=4, classifier_epochs=4)
    make_trainer().fit(model, csbm_dm)
    best = model.staged.best[1]
    current = model.classifier.state_dict()
    assert all(torch.equal(current[k], v) for k, v in best["state"]["classifier"].items())
    assert set(model.staged.best) == {0, 1}


@pytest.mark.parametrize(
    "privacy,kw", [("edge", {}), ("node", {"max_degree": 21, "batch_size": 500})]
)
def test_killed_and_resumed_fit_ends_with_the_same_ledger(
    privacy, kw, csbm_dm, make_trainer, tmp_path
):
    eps = 1.0 if privacy == "edge" else 8.0
    args = dict(privacy=privacy, epsilon=eps, encoder_epochs=3, classifier_epochs=3, seed=7, **kw)
    ckpt = ModelCheckpoint(dirpath=tmp_path, save_top_k=-1, every_n_epochs=1, filename="{epoch}")
    full = GAP(**args)
    make_trainer(enable_checkpointing=True, callbacks=[ckpt]).fit(full, csbm_dm)
    # the staged state (active stage, best snapshots) is checkpointed once, as the state of
    # the staged fit's callback, and under no per-method key
    saved = torch.load(tmp_path / "epoch=2.ckpt", weights_only=False)
    assert saved["callbacks"]["StagedFit"]["active_stage"] == 1
    assert not {"gap", "staged"} & set(saved)

    for epoch in (1, 2, 4):  # mid-encoder, at the encoder/classifier boundary, mid-classifier
        resumed = GAP(**args)
        trainer = make_trainer(enable_checkpointing=False)
        trainer.fit(resumed, csbm_dm, ckpt_path=tmp_path / f"epoch={epoch}.ckpt")
        assert trainer.current_epoch == 6
        assert resumed.accountant.state_dict() == full.accountant.state_dict()
        assert resumed.privacy_spent().epsilon == pytest.approx(full.privacy_spent().epsilon)
        # the aggregation is drawn when the encoder stage ends, before that epoch's checkpoint
        if epoch >= 2:  # the aggregates were in the checkpoint: never recomputed on resume
            assert resumed.pma is None  # the mechanism was never even built
            assert torch.equal(resumed.releases["pma"], full.releases["pma"])
        else:
            assert resumed.pma.calls == 2


def test_loaded_checkpoint_predicts_from_cached_aggregates(csbm_dm, make_trainer, tmp_path):
    model = GAP(privacy="edge", epsilon=1.0, encoder_epochs=2, classifier_epochs=2)
    trainer = make_trainer()
    trainer.fit(model, csbm_dm)
    trainer.save_checkpoint(tmp_path / "gap.ckpt")
    loaded = GAP.load_from_checkpoint(tmp_path / "gap.ckpt")
    assert torch.equal(loaded.releases["pma"], model.releases["pma"])
    assert loaded.privacy_spent() == model.privacy_spent()
    result = make_trainer().test(loaded, csbm_dm, verbose=False)[0]["test/acc"]
    expected = make_trainer().test(model, csbm_dm, verbose=False)[0]["test/acc"]
    assert result == pytest.approx(expected)
    assert loaded.pma is None  # no mechanism was even constructed: nothing could be re-queried


def test_node_level_never_selects_weights_on_private_validation_labels(csbm_dm, make_trainer):
    model = GAP(
        privacy="node",
        epsilon=8.0,
        max_degree=21,
        batch_size=500,
        encoder_epochs=2,
        classifier_epochs=2,
    )
    make_trainer().fit(model, csbm_dm)
    assert model.staged.best == {}  # no snapshot chosen by val/acc: the last epoch is kept


class BarSpy(L.Callback):
    """Reads the training bar's description at the end of every epoch."""

    def __init__(self):
        self.descriptions = []

    def on_train_epoch_end(self, trainer, pl_module):
        bar = trainer.progress_bar_callback
        if isinstance(bar, RichProgressBar):
            self.descriptions.append(bar.progress.tasks[bar.train_progress_bar_id].description)
        else:
            self.descriptions.append(bar.train_progress_bar.desc)


@pytest.mark.parametrize("bar", [RichProgressBar, TQDMProgressBar])
def test_progress_bar_shows_the_stage_and_no_contradictory_epoch_lines(
    bar, csbm_dm, make_trainer, caplog
):
    model = GAP(privacy="edge", epsilon=1.0, encoder_epochs=2, classifier_epochs=1, hops=1)
    spy = BarSpy()
    trainer = make_trainer(
        max_epochs=None, enable_progress_bar=True, callbacks=[bar(), spy]
    )
    loggers = [logging.getLogger(n) for n in ("lightning.fabric", "lightning.pytorch")]
    for log in loggers:  # Lightning's loggers do not propagate to the root logger
        log.addHandler(caplog.handler)
    try:
        with caplog.at_level(logging.INFO), warnings.catch_warnings(record=True) as warned:
            trainer.fit(model, csbm_dm)
    finally:
        for log in loggers:
            log.removeHandler(caplog.handler)
    assert isinstance(trainer.progress_bar_callback, bar)
    assert spy.descriptions[0].startswith("Stage 1/2 (encoder) epoch 0")
    assert spy.descriptions[-1].startswith("Stage 2/2 (classifier) epoch 2")
    assert "trains in stages: encoder (2 epochs) -> classifier (1 epochs)" in caplog.text
    assert "reached" not in caplog.text
    # nor Lightning's "`max_epochs` was not set. Setting it to 1000 epochs" (Trainer default)
    assert not [w for w in warned if "max_epochs" in str(w.message)]
    # the filter only applies during a staged fit
    assert not logging.getLogger("lightning.pytorch.utilities.rank_zero").filters


def test_trainer_max_epochs_sets_the_length_of_a_staged_fit(csbm_dm, make_trainer):
    from lightning_dpgnn import ProGAP

    # stages at their defaults (100 + 100): scaled to add up to max_epochs, planned as such
    model = GAP(privacy="node", epsilon=8.0, max_degree=21, hops=1, batch_size=500)
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        trainer = make_trainer(max_epochs=5)
        trainer.fit(model, csbm_dm)
    assert (model.hparams.encoder_epochs, model.hparams.classifier_epochs) == (3, 2)
    assert trainer.current_epoch == 5
    assert model.accountant.total_count("encoder/dpsgd") == 3 * model._phases[0].steps_per_epoch
    assert not [w for w in warned if "max_epochs" in str(w.message)]
    assert model.privacy_spent().epsilon == pytest.approx(8.0, rel=1e-3)  # planned for 5 epochs
    # epochs the model was given: a longer maximum is not reached, a shorter one is refused
    longer = make_trainer(max_epochs=50)
    longer.fit(GAP(privacy="none", encoder_epochs=1, classifier_epochs=1), csbm_dm)
    assert longer.current_epoch == 2
    given = GAP(privacy="edge", epsilon=1.0, encoder_epochs=3, classifier_epochs=3)
    with pytest.raises(ValueError, match=r"max_epochs=4\) is shorter than the stages' epochs"):
        make_trainer(max_epochs=4).fit(given, csbm_dm)
    assert given.accountant.total_count() == 0
    # three equal stages cannot add up to 4
    with pytest.raises(ValueError, match="cannot be split into whole epochs"):
        make_trainer(max_epochs=4).fit(ProGAP(privacy="none", depth=2), csbm_dm)


def test_a_failed_fit_leaves_no_filter_on_lightnings_logger(make_trainer):
    """A fit quiets Lightning's log lines until its ``teardown``; a fit that raises skips
    ``teardown``, and the library's filters must still go."""
    import logging

    from lightning_dpgnn import GAP
    from lightning_dpgnn.data import NodeDataModule

    class Boom(GAP):
        def on_train_epoch_start(self) -> None:
            raise RuntimeError("boom")

    log = logging.getLogger("lightning.pytorch.utilities.rank_zero")
    before = list(log.filters)
    with pytest.raises(RuntimeError, match="boom"):
        make_trainer(max_epochs=10_000).fit(
            Boom(privacy="edge", epsilon=1.0, encoder_epochs=1, classifier_epochs=1),
            NodeDataModule("csbm", seed=0),
        )
    assert log.filters == before
