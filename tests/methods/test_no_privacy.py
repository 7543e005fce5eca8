"""``math.inf`` is the one spelling of "no privacy for that input", for every budget of every
method; HeteroRR's former ``None`` is a deprecated alias of it."""

from __future__ import annotations

import math
import warnings

import pytest
import torch

from lightning_dpgnn import DPGNN, DPMLP, GAP, GWLDP, LPGNN, EdgeRand, HeteroRR, ProGAP
from lightning_dpgnn._cli_args import spell_infinity
from lightning_dpgnn.data import NodeDataModule
from lightning_dpgnn.levels import Level

TINY = {"num_nodes": 80, "avg_degree": 5.0, "num_features": 8, "num_classes": 3}


def _not_private(model, named) -> None:
    """``model`` is non-private, and reported as the level's name ``privacy="none"`` is."""
    report = model.privacy_spent()
    assert model.privacy == "none" and model.level is Level.NONE
    assert report.level == "none" and math.isinf(report.epsilon)
    assert str(report) == str(named.privacy_spent())


@pytest.mark.parametrize("privacy", ["edge", "node"])
def test_central_epsilon_inf_is_a_non_private_fit(privacy, csbm_dm, make_trainer):
    model = GAP(privacy=privacy, epsilon=math.inf, encoder_epochs=1, classifier_epochs=1)
    # the same model as the level's name gives (node level needs no degree bound without privacy)
    named = GAP(privacy="none", encoder_epochs=1, classifier_epochs=1)
    assert (model.target_epsilon, model.label_counts) == (named.target_epsilon,
                                                          named.label_counts)
    for m in (model, named):
        make_trainer(max_epochs=2).fit(m, csbm_dm)
    _not_private(model, named)


def test_progap_epsilon_inf_is_level_none():
    model = ProGAP(privacy="edge", epsilon=math.inf)
    assert model.privacy == "none" and math.isinf(model.target_epsilon)


@pytest.mark.parametrize("make", [lambda: DPGNN(epsilon=math.inf, max_degree=5),
                                  lambda: DPMLP(epsilon=math.inf),
                                  lambda: EdgeRand(epsilon=math.inf)])
def test_private_only_methods_refuse_epsilon_inf_in_one_sentence(make):
    with pytest.raises(ValueError, match=r"epsilon=math.inf means no privacy, and \w+ is private"):
        make()


def test_ldp_budgets_inf_read_the_data_in_the_clear(ldp_dm, make_trainer):
    model = LPGNN(x_epsilon=math.inf, y_epsilon=math.inf, x_steps=0, y_steps=0)
    make_trainer(max_epochs=1).fit(model, ldp_dm)
    assert math.isinf(model.privacy_spent().epsilon)


def _release(**kwargs):
    model = HeteroRR(feature_mechanism="multibit", hidden=16, noise_seed=3, **kwargs)
    dm = NodeDataModule("csbm", seed=0, dataset_kwargs=TINY, feature_range=(0.0, 1.0),
                        feature_bounds=(-4.0, 4.0))
    dm.setup("fit")
    out = model.release(dm.data)
    return model, out


@pytest.mark.parametrize("name,other", [("epsilon", {"x_epsilon": 2.0}),
                                        ("x_epsilon", {"epsilon": 1.0})])
def test_heterorr_none_warns_and_equals_inf(name, other):
    with pytest.warns(DeprecationWarning, match=rf"HeteroRR\({name}=None\).*{name}=math.inf"):
        old, old_out = _release(**{name: None}, **other)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        new, new_out = _release(**{name: math.inf}, **other)
    assert old.hparams[name] == math.inf
    assert (old.privacy, old.protects_edges, old.protects_features) == (
        new.privacy, new.protects_edges, new.protects_features)
    assert torch.equal(old_out.x, new_out.x) and torch.equal(old_out.edge_index,
                                                             new_out.edge_index)
    assert str(old.privacy_spent()) == str(new.privacy_spent())


def test_heterorr_both_inf_protects_nothing():
    with pytest.raises(ValueError, match="protects nothing"):
        HeteroRR(epsilon=math.inf, x_epsilon=math.inf)


def test_gwldp_inf_budgets_are_its_no_privacy_modes():
    release = GWLDP(epsilon=math.inf)
    assert release.mode == "none" and release.privacy == "none"
    rounds = GWLDP(epsilon=2.0, dp_fedavg=True, fedavg_epsilon=math.inf)
    assert rounds.privacy == "ldp" and rounds.guarantee_name is None
    assert not rounds.hparams.dp_fedavg
    with pytest.raises(ValueError, match="in the clear"):
        GWLDP(epsilon=math.inf, dp_fedavg=True, fedavg_epsilon=2.0)
    with pytest.raises(ValueError, match="contradicts fedavg_noise_multiplier"):
        GWLDP(dp_fedavg=True, fedavg_epsilon=math.inf, fedavg_noise_multiplier=1.0)


def test_command_line_spells_no_privacy_inf():
    # the fit itself: tests/test_cli.py (GAP with --model.epsilon inf reports level none)
    argv = ["fit", "--model.epsilon", "inf", "--model.x_epsilon=Infinity", "--trainer.x", "inf",
            "--model.init_args.fedavg_epsilon", "inf", "--model.epsilon=4"]
    assert spell_infinity(argv) == ["fit", "--model.epsilon", ".inf", "--model.x_epsilon=.inf",
                                    "--trainer.x", "inf", "--model.init_args.fedavg_epsilon",
                                    ".inf", "--model.epsilon=4"]
