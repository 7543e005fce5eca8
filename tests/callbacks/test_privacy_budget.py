"""PrivacyBudget: refuses over-budget plans before any step, stops live fits at the budget."""

import math

import pytest
import torch
from lightning_dpgnn.callbacks import BudgetExceededError, PrivacyBudget

from lightning_dpgnn.data import NodeDataModule
from lightning_dpgnn.methods import DPMLP, GNN
from lightning_dpgnn.privacy import random as dprandom


def test_over_budget_plan_is_refused_before_the_first_step(csbm_dm, make_trainer):
    model = DPMLP(epsilon=4.0, epochs=3)
    trainer = make_trainer(max_epochs=3, callbacks=[PrivacyBudget(epsilon=1.0)])
    with pytest.raises(BudgetExceededError, match="refused before its first step"):
        trainer.fit(model, csbm_dm)
    assert trainer.global_step == 0
    assert model.accountant.total_count() == 0  # no DP-SGD step was recorded
    assert model.privacy_spent().epsilon == 0.0


def test_within_budget_fit_runs_and_logs_epsilon(csbm_dm, make_trainer):
    model = DPMLP(epsilon=2.0, epochs=2)
    budget = PrivacyBudget(epsilon=2.0)
    trainer = make_trainer(max_epochs=2, callbacks=[budget])
    trainer.fit(model, csbm_dm)
    spent = model.privacy_spent()
    assert 2.0 * 0.99 <= spent.epsilon <= 2.0
    assert trainer.callback_metrics["privacy/epsilon"] == pytest.approx(spent.epsilon, rel=1e-5)
    assert not budget.stopped_early


def test_open_ended_fit_is_stopped_before_the_step_that_would_exceed(csbm_dm, make_trainer):
    # budget 2 (was 1.5 when delta="auto" was the papers' 1e-4: at today's 1e-6 a budget of
    # 1.5 stops after exactly 5 steps, and the test wants several)
    model = DPMLP(epsilon=None, noise_multiplier=2.0, batch_size=256)
    budget = PrivacyBudget(epsilon=2.0)
    trainer = make_trainer(max_epochs=-1, max_steps=10_000, callbacks=[budget])
    with pytest.warns(UserWarning, match="cannot plan its spend"):
        trainer.fit(model, csbm_dm)
    spent = model.privacy_spent().epsilon
    assert spent <= 2.0
    assert model.privacy_if_next_step().epsilon > 2.0  # one more step would have exceeded
    assert budget.stopped_early
    assert trainer.global_step == model.accountant.total_count("mlp/dpsgd") > 5
    assert model.fit_end_reason.startswith("PrivacyBudget: the next step would spend epsilon")


def test_the_reason_a_fit_ended_is_recorded(csbm_dm, make_trainer):
    model = DPMLP(epsilon=2.0, epochs=2)
    trainer = make_trainer(max_epochs=5)  # the calibrated plan ends the fit first
    trainer.fit(model, csbm_dm)
    assert trainer.current_epoch < 5
    assert model.fit_end_reason.startswith("DP-SGD phase 'mlp/dpsgd' used all")
    gnn = GNN()
    make_trainer(max_epochs=2).fit(gnn, csbm_dm)
    assert gnn.fit_end_reason == "all 2 epochs of the plan ran"


def test_non_private_model_is_refused_and_delta_is_checked(csbm_dm, make_trainer):
    with pytest.raises(BudgetExceededError, match="non-private"):
        make_trainer(callbacks=[PrivacyBudget(epsilon=100.0)]).fit(GNN(), csbm_dm)
    model = DPMLP(epsilon=1.0, epochs=1, delta=1e-3)
    with pytest.raises(BudgetExceededError, match="delta <= 1e-05"):
        make_trainer(max_epochs=1, callbacks=[PrivacyBudget(1.0, delta=1e-5)]).fit(model, csbm_dm)


def test_budget_report_is_written_into_checkpoints(csbm_dm, make_trainer, tmp_path):
    model = DPMLP(epsilon=1.0, epochs=1)
    trainer = make_trainer(max_epochs=1, callbacks=[PrivacyBudget(1.0)])
    trainer.fit(model, csbm_dm)
    path = tmp_path / "m.ckpt"
    trainer.save_checkpoint(path)
    ckpt = torch.load(path, weights_only=False)
    assert ckpt["privacy_budget"]["report"]["epsilon"] == pytest.approx(
        model.privacy_spent().epsilon
    )
    assert (
        ckpt["dpgnn_privacy"]["accountant"]["ledger"][0]["count"] == model.accountant.total_count()
    )


def test_secure_mode_covers_dpsgd_noise_and_batches(csbm_dm, make_trainer):
    before = dprandom.secure_draw_count()
    model = DPMLP(epsilon=1.0, epochs=1)
    make_trainer(max_epochs=1, callbacks=[PrivacyBudget(1.0, secure_mode=True)]).fit(model, csbm_dm)
    steps = model.accountant.total_count()
    # every step draws its Poisson batch and its gradient noise from the OS CSPRNG
    assert dprandom.secure_draw_count() - before >= 2 * steps > 0
    assert not dprandom.is_secure_mode()  # switched back off after the fit


def test_budget_validates_its_arguments():
    with pytest.raises(ValueError, match="epsilon must be > 0"):
        PrivacyBudget(0.0)
    with pytest.raises(ValueError, match="delta"):
        PrivacyBudget(1.0, delta=1.5)
    assert math.isfinite(PrivacyBudget(2.0).epsilon)


def test_a_model_outside_the_private_model_contract_is_refused_by_name(make_trainer):
    import lightning as L

    from lightning_dpgnn.methods import PrivateModel

    class Plain(L.LightningModule):
        def privacy_spent(self):  # one member of the contract is not enough
            return None

    assert isinstance(GNN(), PrivateModel) and not isinstance(Plain(), PrivateModel)
    budget = PrivacyBudget(epsilon=1.0)
    with pytest.raises(TypeError, match=r"PrivacyBudget needs .* has no privacy_planned\(\)"):
        budget.on_fit_start(make_trainer(), Plain())


def test_a_data_module_outside_the_node_data_contract_is_refused_by_name(make_trainer):
    import lightning as L

    class GraphOnly(L.LightningDataModule):  # no private_reads: its reads would go unchecked
        data = NodeDataModule("csbm").data
        public_num_classes = None

    with pytest.raises(TypeError, match="NodeDataSource.*GraphOnly has no private_reads"):
        make_trainer(max_epochs=1).fit(DPMLP(epsilon=1.0, epochs=1), GraphOnly())
