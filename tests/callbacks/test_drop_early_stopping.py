"""DropEarlyStopping: Alg. 4 line 29 on scripted epoch metrics, early stop, restore, resume."""

from types import SimpleNamespace

import pytest
import torch
from lightning.pytorch.strategies import SingleDeviceStrategy
from lightning_dpgnn.callbacks import DropEarlyStopping
from lightning_dpgnn.callbacks.drop_early_stopping import select_epoch

ACC_STAR = 0.5
# (loss, train acc, val acc) per epoch; epochs 3 and 5 have lower loss but exceed Acc*
SCRIPT = [
    (1.50, 0.30, 0.30),
    (1.20, 0.40, 0.35),
    (1.10, 0.45, 0.48),  # the lowest admissible loss
    (1.00, 0.55, 0.45),  # train acc above Acc*: over-fits the noisy labels
    (1.15, 0.50, 0.50),  # exactly at the bound: admissible, but not lower
    (0.90, 0.48, 0.60),  # val acc above Acc*
    (1.30, 0.49, 0.49),
]


class TinyModule(torch.nn.Module):
    """Stands in for a LightningModule: weights we can recognise per epoch."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(1))


def run_script(cb, script, module=None, trainer=None):
    for epoch, (loss, tr, va) in enumerate(script):
        if module is not None:
            module.w.data.fill_(epoch)
        if trainer is None:
            cb.observe(epoch, loss, tr, va, module)
            continue
        trainer.current_epoch = epoch
        trainer.callback_metrics = {
            "val/loss": torch.tensor(loss),
            "train/noisy_acc": torch.tensor(tr),
            "val/noisy_acc": torch.tensor(va),
        }
        cb.on_validation_end(trainer, module)
        if trainer.should_stop:
            break


def fake_trainer():
    return SimpleNamespace(
        sanity_checking=False,
        state=SimpleNamespace(fn="fit"),
        current_epoch=0,
        callback_metrics={},
        should_stop=False,
        strategy=SingleDeviceStrategy(torch.device("cpu")),
    )


def test_selects_the_lowest_admissible_loss_and_ignores_epochs_above_acc_star():
    cb = DropEarlyStopping(acc_star=ACC_STAR)
    cb.acc_star = ACC_STAR
    run_script(cb, SCRIPT)
    assert cb.best.epoch == 2 and cb.best.loss == pytest.approx(1.10)
    assert [r.admissible for r in cb.records] == [True, True, True, False, True, False, True]
    # without the bound, plain best-loss selection would pick the over-fitted epoch 5
    plain = DropEarlyStopping(acc_star=None)
    run_script(plain, SCRIPT)
    assert plain.best.epoch == 5
    assert select_epoch(cb.records).epoch == 2


def test_restores_the_selected_weights_and_explains_why(caplog):
    module = TinyModule()
    cb = DropEarlyStopping(acc_star=ACC_STAR)
    cb.on_fit_start(None, module)
    trainer = fake_trainer()
    run_script(cb, SCRIPT, module, trainer)
    assert module.w.item() == 6.0
    cb.on_train_end(trainer, module)
    assert module.w.item() == 2.0  # epoch 2's weights are back
    assert "selected epoch 2" in cb.reason and "Acc*=0.5000" in cb.reason
    assert "2 epoch(s) above the bound were ignored" in cb.reason
    assert "epoch 5" in cb.reason  # names the lower, rejected loss


def test_stops_early_when_no_admissible_epoch_improves():
    cb = DropEarlyStopping(acc_star=ACC_STAR, patience=3)
    cb.on_fit_start(None, TinyModule())
    trainer = fake_trainer()
    run_script(cb, SCRIPT + [(0.5, 0.9, 0.9)] * 5, TinyModule(), trainer)
    # best at epoch 2; epochs 3, 4, 5 do not improve it -> stop after epoch 5
    assert trainer.should_stop and cb.stopped_epoch == 5 and len(cb.records) == 6
    assert "stopped after epoch 5" in cb.explain()


def test_min_epochs_delays_the_stop():
    cb = DropEarlyStopping(acc_star=ACC_STAR, patience=1, min_epochs=5)
    cb.on_fit_start(None, TinyModule())
    trainer = fake_trainer()
    run_script(cb, SCRIPT, TinyModule(), trainer)
    assert cb.stopped_epoch == 4


def test_no_admissible_epoch_keeps_the_last_weights_with_a_warning():
    module = TinyModule()
    cb = DropEarlyStopping(acc_star=0.1)
    cb.on_fit_start(None, module)
    trainer = fake_trainer()
    run_script(cb, SCRIPT, module, trainer)
    with pytest.warns(UserWarning, match="none of the 7 epochs was admissible"):
        cb.on_train_end(trainer, module)
    assert module.w.item() == 6.0


def test_auto_reads_the_modules_acc_star_and_defaults_to_one():
    cb = DropEarlyStopping()
    assert cb.resolve_acc_star(SimpleNamespace(acc_star=0.25)) == 0.25
    assert cb.resolve_acc_star(SimpleNamespace()) == 1.0


def test_state_survives_a_checkpoint_round_trip():
    module = TinyModule()
    cb = DropEarlyStopping(acc_star=ACC_STAR, patience=10)
    cb.on_fit_start(None, module)
    run_script(cb, SCRIPT[:4], module, fake_trainer())
    state = cb.state_dict()
    again = DropEarlyStopping(acc_star=ACC_STAR, patience=10)
    again.load_state_dict(state)
    run_script(again, [(1.05, 0.4, 0.4)], module, None)  # epoch index restarts in the script
    assert again.best.loss == pytest.approx(1.05) and again.wait == 0
    assert [r.epoch for r in again.records][:4] == [0, 1, 2, 3]


def test_snapshot_is_a_copy_of_the_state_dict_and_state_keys_tell_instances_apart():
    module = TinyModule()
    cb = DropEarlyStopping(acc_star=ACC_STAR)
    cb.on_fit_start(None, module)
    run_script(cb, SCRIPT[:3], module, None)
    assert set(cb.best_state) == set(module.state_dict())  # parameters only, no module
    module.w.data.fill_(99.0)  # later training never changes the snapshot
    assert cb.best_state["w"].item() == 2.0
    other = DropEarlyStopping(monitor="val/ce", acc_star=None)
    assert cb.state_key != other.state_key
    assert cb.state_key == DropEarlyStopping(acc_star=ACC_STAR).state_key


def test_missing_metric_and_bad_settings_are_clear_errors():
    cb = DropEarlyStopping(acc_star=ACC_STAR)
    cb.acc_star = ACC_STAR
    trainer = fake_trainer()
    trainer.callback_metrics = {"val/loss": torch.tensor(1.0)}
    with pytest.raises(KeyError, match="train/noisy_acc"):
        cb.on_validation_end(trainer, TinyModule())
    with pytest.raises(ValueError, match="patience"):
        DropEarlyStopping(patience=0)
    with pytest.raises(ValueError, match="acc_star"):
        DropEarlyStopping(acc_star=1.5)
    with pytest.raises(ValueError, match="acc_star"):
        DropEarlyStopping(acc_star="max")
