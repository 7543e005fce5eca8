"""MLP baseline: the papers' protocol (fixed epochs, best validation epoch kept)."""

import pytest

from lightning_dpgnn.methods import MLP


def test_mlp_trains_its_own_epochs_and_keeps_the_best_validation_epoch(csbm_dm, make_trainer):
    model = MLP(epochs=6, seed=0)
    trainer = make_trainer(max_epochs=1000)  # the model, not the trainer, sets the length
    trainer.fit(model, csbm_dm)
    assert trainer.current_epoch == 6
    best = model.staged.best[0]
    assert 0 <= best["epoch"] < 6
    val = trainer.validate(model, csbm_dm, verbose=False)[0]["val/acc"]
    assert val == pytest.approx(best["acc"], abs=1e-6)  # the restored weights are the best ones
    assert model.privacy_spent().epsilon == 0.0  # edge level: reads no edges


def test_mlp_seed_makes_weights_reproducible(csbm_dm, make_trainer):
    a, b = MLP(epochs=2, seed=3), MLP(epochs=2, seed=3)
    for m in (a, b):
        make_trainer().fit(m, csbm_dm)
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        assert pa.equal(pb)
    with pytest.raises(ValueError, match="epochs"):
        MLP(epochs=0)
