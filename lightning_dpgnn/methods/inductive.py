"""Inference on a new graph, one path for every method (invariants inference-privacy and
new-graph-reports): its releases are drawn on it with fresh noise, on its own ledgers
(``Releases.on_graph``), and reported in ``model.last_inference_report``; a method's hooks are
``inductive_graph``, ``inductive_accountant``, ``inductive_release`` and ``inductive_logits``.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
from torch_geometric.data import Data

from ..data.simple import require_simple
from ..privacy import PrivacyReport, SeveralGuarantees
from .runtime import evaluating

__all__ = ["checked_graph", "predict_inductive", "inductive_outputs", "inference_report"]


def checked_graph(module: Any, data: Data) -> Data:
    """``data`` on ``module``'s device once it is fit for inference: the training graph's
    feature width (``module.check_feature_width``) and a simple graph."""
    module.check_feature_width(data, "same columns, same public code book")
    require_simple(data, "the graph given to inductive inference")  # invariant simple-graphs
    return module.on_device(data)


@torch.no_grad()
def predict_inductive(
    module: Any, data: Data, given: dict[str, Any] | None = None
) -> torch.Tensor:
    """Class probabilities of ``module`` on the new graph ``data`` from its releases."""
    graph, outputs = inductive_outputs(module, data, given)
    with evaluating(module):
        return module.inductive_logits(graph, outputs).softmax(-1)


@torch.no_grad()
def inductive_outputs(
    module: Any, data: Data, given: dict[str, Any] | None = None
) -> tuple[Data, dict[str, Any]]:
    """The new graph ``data`` (checked, on ``module``'s device) and its releases: drawn with
    fresh noise on its own ledgers, or ``given`` (made elsewhere, e.g. on the nodes' devices).
    A graph that shares private data with the training graph composes into the training
    ledger, with a warning."""
    name = type(module).__name__
    if module.level.private and module.calibrates_noise() and module.noise_multiplier is None:
        raise RuntimeError(f"{name} must be fitted (or loaded) before inductive inference")
    graph = module.inductive_graph(data)
    ledgers = module.ledgers
    spent = ledgers.state_dict()
    outputs, graph_ledgers = module.releases.on_graph(
        graph, lambda g: module.inductive_accountant(graph, g), given, module.inductive_release,
        fit_accountant=ledgers.of, noise_multiplier=module.noise_multiplier,
        check=module.level.private,
    )
    if not given:
        module.last_inference_report = ledgers.graph_report(graph_ledgers)
    if ledgers.state_dict() != spent:  # a graph sharing private data with the training graph
        warnings.warn(
            f"{name}: this graph shares private data with the training graph "
            f"({module.releases.last_overlap}): its releases were drawn again and composed into "
            f"the training ledger: epsilon {module.accountant.epsilon():.4g} now "
            f"(target {module.target_epsilon}). "
            "Predict on the training graph without data.inductive (its cached releases, "
            "no spend)", UserWarning, stacklevel=6,
        )
    return graph, outputs


def inference_report(module: Any, data: Data) -> PrivacyReport | SeveralGuarantees | None:
    """What the releases on the new graph ``data`` have spent so far (``None``: none)."""
    ledgers = module.releases.ledgers_of(data)
    return None if ledgers is None else module.ledgers.graph_report(ledgers)
