"""Every public method checks its constructor arguments when it is built, and names a bad one
as the user wrote it (not later, in ``setup``, as an error about some internal layer)."""

import math

import pytest

import lightning_dpgnn as ld
from lightning_dpgnn._init_args import init_arguments

METHODS = ["GAP", "ProGAP", "GNN", "MLP", "DPMLP", "SAGE", "EdgeRand", "DPGNN", "LPGNN", "PGC",
           "PGCLinkPrediction"]


def _user_arguments(cls: type) -> list[str]:
    """The keyword arguments ``cls`` documents to its users."""
    return sorted(init_arguments(cls) - {"levels", *cls.fixed_arguments})


class NotAValue:
    """A value of no kind any argument takes."""

    def __repr__(self) -> str:
        return "<not a value>"


@pytest.mark.parametrize("name", METHODS)
def test_every_argument_of_every_method_is_checked_at_construction(name):
    cls = getattr(ld, name)
    cls()  # the defaults are valid
    for arg in _user_arguments(cls):
        with pytest.raises((ValueError, TypeError)) as error:
            cls(**{arg: NotAValue()})
        assert arg in str(error.value), f"{name}({arg}=...): {error.value}"


@pytest.mark.parametrize(
    "name,kwargs,message",
    [
        # the examples
        ("GAP", {"delta": 1.5}, "delta must be in the open interval (0, 1), got 1.5"),
        ("GAP", {"hops": 2.5}, "hops must be an integer >= 1, got 2.5"),
        ("PGC", {"epsilon": -1}, "PGC got an unexpected keyword argument 'epsilon'; it takes: "),
        ("PGC", {"x_eps": -1}, "x_eps must be > 0"),
        # values of the right type out of range, for every method
        ("GAP", {"hop_budget": 2}, "hop_budget must be a list"),
        ("GAP", {"lr": -0.01}, "lr must be a finite number >= 0, got -0.01"),
        ("GAP", {"lr": math.nan}, "lr must be a finite number >= 0, got nan"),
        ("GAP", {"head_layers": 0}, "head_layers must be an integer >= 1"),
        ("GAP", {"bogus": 1}, "GAP got an unexpected keyword argument 'bogus'"),
        ("ProGAP", {"normalize_jk": "yes"}, "normalize_jk must be True or False"),
        ("ProGAP", {"depth": 0}, "depth must be >= 1"),
        ("ProGAP", {"max_grad_norm": -1.0}, "max_grad_norm must be a finite number > 0"),
        ("GNN", {"dropout": 1.0}, "dropout must be a finite number in [0, 1)"),
        ("GNN", {"privacy": "edge"}, "GNN got an unexpected keyword argument 'privacy'"),
        ("MLP", {"layers": 0}, "layers must be an integer >= 1"),
        ("MLP", {"epsilon": 1.0}, "MLP got an unexpected keyword argument 'epsilon'"),
        ("DPMLP", {"epochs": 0}, "epochs must be an integer >= 1"),
        ("DPMLP", {"noise_multiplier": -1.0}, "noise_multiplier must be a finite number > 0"),
        ("SAGE", {"hidden": 0}, "hidden must be an integer >= 1, got 0"),
        ("SAGE", {"normalization": "batchnorm"}, "normalization must be one of"),
        ("SAGE", {"epsilon": 1.0}, "SAGE got an unexpected keyword argument 'epsilon'"),
        ("EdgeRand", {"epsilon": 0}, "epsilon must be > 0"),
        ("EdgeRand", {"density_share": 1.5}, "density_share must be a finite number in (0, 1)"),
        ("EdgeRand", {"jk": "max"}, "jk must be one of"),
        ("DPGNN", {"max_degree": 0}, "max_degree must be an integer >= 1"),
        ("DPGNN", {"batch_size": 2.5}, "batch_size must be an integer >= 1"),
        ("DPGNN", {"delta": 0}, "delta must be in the open interval (0, 1)"),
        ("LPGNN", {"heads": 0}, "heads must be an integer >= 1"),
        ("LPGNN", {"activation": "swish"}, "activation must be one of"),
        ("LPGNN", {"y_eps": -1}, "y_eps must be > 0"),
        ("PGC", {"weight_decay": -0.1}, "weight_decay must be a finite number >= 0"),
        ("PGCLinkPrediction", {"edge_split": (0.5, 0.5, 0.5)}, "edge_split must be 3 numbers"),
        ("PGCLinkPrediction", {"out_dim": 0}, "out_dim must be an integer >= 1"),
    ],
)
def test_a_bad_argument_is_refused_under_the_name_the_user_wrote(name, kwargs, message):
    with pytest.raises((ValueError, TypeError)) as error:
        getattr(ld, name)(**kwargs)
    assert message in str(error.value)


@pytest.mark.parametrize(
    "name,kwargs",
    [
        ("GAP", {"encoder_layers": 0}),  # the paper's "without encoder" ablation
        ("GAP", {"base_layers": 0, "hop_budget": [1, 3]}),
        ("ProGAP", {"epochs_per_stage": 0, "patience": 0}),
        ("PGC", {"x_eps": math.inf}),  # the RAW baseline
        ("LPGNN", {"x_eps": math.inf, "y_eps": math.inf}),
        ("DPMLP", {"epsilon": None, "noise_multiplier": 1.0}),
    ],
)
def test_edge_values_the_papers_use_are_accepted(name, kwargs):
    model = getattr(ld, name)(**kwargs)
    for key, value in kwargs.items():
        if key in model.hparams:
            assert model.hparams[key] == value
