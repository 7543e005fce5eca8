"""Constructor checks shared by every method, by argument name (the methods share their
vocabulary): an argument is checked when the model is built, under the name the user wrote
(:func:`check_arguments`, run by ``PrivateModule.save_hyperparameters``), and an argument the
class does not take is refused naming the class the user called (:func:`check_argument_names`).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from numbers import Integral, Real
from typing import Any

from ..levels import Level, Unit
from ..nn.backbone import BACKBONES, make_activation
from ..nn.combine import COMBINES
from ..nn.mlp import NORMALIZATIONS
from ..privacy.accountant import check_epsilon

__all__ = ["check_arguments", "check_argument_names", "node_unit", "refused_value_message"]

Rule = Callable[[str, Any], None]


def _integer(least: int, optional: bool = False) -> Rule:
    def rule(name: str, value: Any) -> None:
        if optional and value is None:
            return
        if isinstance(value, bool) or not isinstance(value, Integral) or value < least:
            none = " or None" if optional else ""
            raise ValueError(f"{name} must be an integer >= {least}{none}, got {value!r}")

    return rule


def _real(low: float, high: float = math.inf, *, low_open: bool, high_open: bool = True,
          optional: bool = False) -> Rule:
    lo, hi = "(" if low_open else "[", ")" if high_open else "]"
    interval = f"> {low:g}" if high == math.inf and low_open else (
        f">= {low:g}" if high == math.inf else f"in {lo}{low:g}, {high:g}{hi}"
    )

    def rule(name: str, value: Any) -> None:
        if optional and value is None:
            return
        ok = isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value)
        if ok:
            ok = (value > low if low_open else value >= low) and (
                value < high if high_open else value <= high
            )
        if not ok:
            none = " or None" if optional else ""
            raise ValueError(f"{name} must be a finite number {interval}{none}, got {value!r}")

    return rule


def _boolean(name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {value!r}")


def _optional_boolean(name: str, value: Any) -> None:
    if value is not None and not isinstance(value, bool):
        raise ValueError(f"{name} must be True, False or None, got {value!r}")


def _seed(name: str, value: Any) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, Integral)):
        raise ValueError(f"{name} must be an integer or None, got {value!r}")


def _shares(name: str, value: Any) -> None:
    if value is None:
        return
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise ValueError(f"{name} must be a list of positive shares (one per hop) or None, "
                         f"got {value!r}")


def _fractions(name: str, value: Any) -> None:
    ok = isinstance(value, Sequence) and not isinstance(value, (str, bytes)) and len(value) == 3
    ok = ok and all(isinstance(v, Real) and not isinstance(v, bool) and v >= 0 for v in value)
    if not (ok and abs(sum(value) - 1.0) <= 1e-6):
        raise ValueError(f"{name} must be 3 numbers >= 0 summing to 1, got {value!r}")


def _choice(options: Iterable[str]) -> Rule:
    options = tuple(options)

    def rule(name: str, value: Any) -> None:
        if value not in options:
            raise ValueError(f"{name} must be one of {options}, got {value!r}")

    return rule


def _activation(name: str, value: Any) -> None:
    try:
        make_activation(value)
    except (ValueError, TypeError) as err:
        raise ValueError(str(err).replace("activation", name, 1)) from None


_POSITIVE = _integer(1)
_COUNT = _integer(0)

#: argument name -> its check (methods add their own for what only they take)
RULES: dict[str, Rule] = {
    **dict.fromkeys(
        ("hidden", "layers", "heads", "out_dim", "hops", "ensemble", "batch_size",
         "epochs", "classifier_epochs", "head_layers", "pre_layers", "post_layers",
         "local_epochs", "n_jobs"),
        _POSITIVE,
    ),
    **dict.fromkeys(
        ("encoder_layers", "base_layers", "encoder_epochs", "epochs_per_stage", "x_steps",
         "y_steps"),
        _COUNT,
    ),
    "num_features": _integer(1, optional=True),
    "max_degree": _integer(1, optional=True),  # required at node level: node_unit
    "num_classes": _integer(1, optional=True),
    "patience": _integer(0, optional=True),
    "train_batch_size": _integer(1, optional=True),
    "dropout": _real(0.0, 1.0, low_open=False),
    "gnn_dropout": _real(0.0, 1.0, low_open=False, optional=True),
    "fgw_alpha": _real(0.0, 1.0, low_open=True, high_open=False, optional=True),
    "rho": _real(0.0, 1.0, low_open=True, high_open=False),
    "public_fraction": _real(0.0, 1.0, low_open=True, high_open=False, optional=True),
    "lr": _real(0.0, low_open=False),  # 0 freezes the weights (a test device), not an error
    "weight_decay": _real(0.0, low_open=False),
    "max_grad_norm": _real(0.0, low_open=True),
    "noise_multiplier": _real(0.0, low_open=True, optional=True),
    "density_share": _real(0.0, 1.0, low_open=True),
    "votes_share": _real(0.0, 1.0, low_open=True),
    "gaussian_delta": _real(0.0, 1.0, low_open=True),
    **dict.fromkeys(
        ("normalize_combine", "normalize_jk", "normalize_nap", "warm_start", "shard_rows",
         "log_private_metrics", "per_coordinate", "standardize", "votes"),
        _boolean,
    ),
    **dict.fromkeys(("seed", "noise_seed", "split_seed"), _seed),
    "label_counts": _optional_boolean,
    "activation": _activation,
    "normalization": _choice(("auto", *NORMALIZATIONS)),
    "combine": _choice(COMBINES),
    "jk": _choice(COMBINES),
    "hop_budget": _shares,
    "edge_split": _fractions,  # the shares themselves: hop_noise_scales
    "conv": _choice(BACKBONES),
    "backbone": _choice(BACKBONES),
}


def check_arguments(values: Mapping[str, Any]) -> None:
    """Check every argument in ``values`` that has a rule in :data:`RULES`."""
    for name, value in values.items():
        rule = RULES.get(name)
        if rule is not None:
            rule(name, value)


#: the budgets every method spells alike (checked by the privacy layer's ``check_epsilon``)
BUDGETS = ("epsilon", "x_epsilon", "y_epsilon")


def refused_value_message(name: str, text: str) -> str | None:
    """The constructor's own sentence for ``text`` typed for argument ``name`` where a parser
    refused its type (``None``: no number, or no rule refuses it)."""
    try:
        value = float(text)
    except ValueError:
        return None
    rule = RULES.get(name)
    try:
        if name in BUDGETS:
            check_epsilon(value, name)
        elif rule is not None:
            rule(name, value)
    except ValueError as err:
        return str(err)
    return None


def check_argument_names(cls: type, given: Iterable[str], accepted: Iterable[str]) -> None:
    """Refuse keyword arguments ``cls`` does not take, naming ``cls``, the closest name it
    takes and what it takes."""
    accepted = set(accepted)
    unknown = [name for name in given if name not in accepted]
    if unknown:
        close = difflib.get_close_matches(unknown[0], sorted(accepted), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise TypeError(
            f"{cls.__name__} got an unexpected keyword argument {unknown[0]!r}{hint}; it takes: "
            + ", ".join(sorted(accepted))
        )


def node_unit(max_degree: int | None, owner: str) -> str:
    """The node-level unit of ``owner``, conditioned on its public degree bound (a
    ``ValueError`` without one: the guarantee holds only on graphs the bound covers)."""
    if max_degree is None:
        raise ValueError(
            f"{owner} needs max_degree=D, an upper bound on every in- and "
            "out-degree that is public knowledge (e.g. a platform's friend cap) or released by "
            "lightning_dpgnn.privacy.PrivateDegreeBound, never read off the graph"
        )
    return Unit(Level.NODE, max_degree).describe()
