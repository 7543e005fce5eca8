"""Attacks on a fitted model run the way a user runs it, through Lightning:
:func:`node_membership_inference` (the thesis' TSTF protocol, §4.8.2: shadow models fitted on
random shadow splits of the target's graph) and :func:`link_stealing`."""

from __future__ import annotations

import copy
import tempfile
from collections.abc import Callable
from typing import Any

import lightning as L
import torch
from torch_geometric.data import Data

from .._init_args import init_arguments
from .._quiet import quiet_lightning
from ..data import NodeDataModule
from .link_stealing import posterior_similarity_attack
from .membership import AttackAUC, membership_attack

__all__ = ["fresh_copy", "link_stealing", "node_membership_inference", "predict_posteriors"]


def _trainer(**kwargs: Any) -> L.Trainer:
    defaults: dict[str, Any] = dict(
        logger=False, enable_checkpointing=False, enable_progress_bar=False,
        enable_model_summary=False, default_root_dir=tempfile.mkdtemp(prefix="dpgnn-attack-"),
    )  # fmt: skip
    defaults.update(kwargs)
    with quiet_lightning():  # the library builds this Trainer: no accelerator lines, no advert
        return L.Trainer(**defaults)


def predict_posteriors(model: L.LightningModule, data: Data) -> torch.Tensor:
    """The model's class probabilities for every node of ``data`` (``Trainer.predict``)."""
    dm = NodeDataModule.from_data(data, name="attack", split="public")
    out = _trainer().predict(model, datamodule=dm)
    probs = torch.cat([torch.as_tensor(o) for o in out]).float()
    if probs.dim() != 2 or len(probs) != data.num_nodes:
        raise ValueError(f"{type(model).__name__}.predict_step must return [nodes, classes]")
    if not torch.allclose(probs.sum(-1), torch.ones(len(probs)), atol=1e-3):
        probs = probs.softmax(-1)  # logits
    return probs


def fresh_copy(model: L.LightningModule) -> L.LightningModule:
    """An untrained model of ``model``'s class with its hyper-parameters (the shadow)."""
    params = init_arguments(type(model))  # forwarded **kwargs included
    kwargs = {k: copy.deepcopy(v) for k, v in model.hparams.items() if k in params}
    return type(model)(**kwargs)


def shadow_split(data: Data, generator: torch.Generator) -> Data:
    """``data`` with fresh random train/val/test masks of the sizes of its own."""
    sizes = [int(data[k].sum()) for k in ("train_mask", "val_mask", "test_mask")]
    labeled = (
        (data.y >= 0).nonzero().view(-1) if data.y.dim() == 1 else torch.arange(data.num_nodes)
    )
    if sum(sizes) > len(labeled):
        raise ValueError("the split masks overlap or cover unlabeled nodes")
    perm = labeled[torch.randperm(len(labeled), generator=generator)]
    shadow = copy.copy(data)
    start = 0
    for key, size in zip(("train_mask", "val_mask", "test_mask"), sizes, strict=True):
        mask = torch.zeros(data.num_nodes, dtype=torch.bool)
        mask[perm[start : start + size]] = True
        shadow[key] = mask
        start += size
    return shadow


def node_membership_inference(
    model: L.LightningModule,
    data: Data,
    *,
    repeats: int = 10,
    members: torch.Tensor | None = None,
    nonmembers: torch.Tensor | None = None,
    trainer_kwargs: dict[str, Any] | None = None,
    shadow: Callable[[], L.LightningModule] | None = None,
    seed: int = 0,
    **attack_options: Any,
) -> AttackAUC:
    """TSTF membership inference against ``model`` trained on ``data``: ``repeats`` shadow fits on
    random shadow splits; ``seed`` seeds the splits and attack models, never privacy noise."""
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    members = data.train_mask if members is None else members
    nonmembers = data.test_mask if nonmembers is None else nonmembers
    target_post = predict_posteriors(model, data)
    gen = torch.Generator().manual_seed(seed)
    aucs = []
    for r in range(repeats):
        split = shadow_split(data, gen)
        net = (shadow or (lambda: fresh_copy(model)))()
        dm = NodeDataModule.from_data(split, name="shadow", split="public")
        _trainer(**(trainer_kwargs or {})).fit(net, datamodule=dm)
        shadow_post = predict_posteriors(net, split)
        auc = membership_attack(
            shadow_post, split.train_mask, split.test_mask, target_post, members, nonmembers,
            seed=seed + r, **attack_options,
        )  # fmt: skip
        aucs.append(auc)
    return AttackAUC("membership inference (TSTF)", tuple(aucs))


def link_stealing(
    model: L.LightningModule,
    data: Data,
    *,
    repeats: int = 10,
    pairs: int = 2000,
    metric: str = "correlation",
    seed: int = 0,
) -> AttackAUC:
    """Posterior-similarity link stealing against a fitted ``model`` on ``data``."""
    post = predict_posteriors(model, data)
    gen = torch.Generator().manual_seed(seed)
    aucs = [
        posterior_similarity_attack(
            post, data.edge_index, pairs=pairs, metric=metric, generator=gen
        )
        for _ in range(repeats)
    ]
    return AttackAUC(f"link stealing ({metric})", tuple(aucs))
