"""GW-LDP: federated GNN, locally private node-embedding matrices, GW on the server.

Jin & Chen, IJCAI 2022 (``../shared/papers/gw-discrepancy-ldp-federated-graphs.md``): FedAvg
over a ``GraphDataModule(..., num_clients=K)``, one round per epoch (Alg. 2, 3; **not
private** in the paper, the unit says so; ``dp_fedavg=True``: client-level DP); then, once,
every client releases its graphs' embeddings in ``[0, 1]`` through the matrix multi-bit encoder
(Alg. 1; graphs cut from one source graph compose by the most released graphs holding one
node); the server (post-processing, :mod:`lightning_dpgnn.gw`) computes GW discrepancies of all
pairs and an SVM. ``mode="paper-code"`` is **not differentially private** (the budget and the
zoo refuse it).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import torch
import torch.nn.functional as F
from lightning.fabric import Fabric
from lightning.fabric.strategies import SingleDeviceStrategy
from torch.utils.data import DataLoader
from torch_geometric.data import Batch, Data

from .. import gw
from ..levels import Level
from ..nn.graph_gnn import BACKBONES as GNNS
from ..nn.graph_gnn import graph_backbone
from ..privacy import PrivacyAccountant
from ..privacy import random as R
from ..privacy.graph_ldp import (
    PAPER_CODE_UNIT,
    SIZE_MODES,
    GraphRelease,
    MatrixMultiBit,
    PaperCodeGaussian,
    fedavg_unit,
    graph_unit,
    multiplicity,
)
from ..privacy.mechanism import Steps
from .base import PrivateModule, accuracy
from .ledgers import calibrated, no_privacy
from .paper_code import PaperCode
from .releases import Draw, Release
from .runtime import evaluating

__all__ = ["GWLDP", "MODES", "EMBEDDINGS", "RELEASE_KEY"]

MODES = ("ldp", "none", "paper-code")
EMBEDDINGS = ("sigmoid", "softmax", "clip")
RELEASE_KEY = "gwldp_release"
FEDAVG_NAME = "gwldp/dp-fedavg"
PAPER_CODE_FLAW = ("Gaussian noise whose std the authors' code calls epsilon, on unbounded "
                   "embeddings")
#: the guarantees of a DP-FedAvg fit: the rounds' (the model's own) and the release's
FEDAVG, RELEASE = "dp-fedavg", "release"


def _first(batch: list[Any]) -> Any:
    return batch[0]


def _no_privacy_modes(mode: str, epsilon: float, dp_fedavg: bool, fedavg_epsilon: float | None,
                      fedavg_noise_multiplier: float | None) -> tuple[str, bool]:
    """``mode`` and ``dp_fedavg`` once ``math.inf`` budgets read as "no privacy"."""
    if dp_fedavg and no_privacy(fedavg_epsilon):
        if fedavg_noise_multiplier is not None:
            raise ValueError("fedavg_epsilon=math.inf (no privacy for the rounds) contradicts "
                             f"fedavg_noise_multiplier={fedavg_noise_multiplier!r}: give one")
        dp_fedavg = False
    if mode == Level.LDP and no_privacy(epsilon):
        if dp_fedavg:
            raise ValueError("epsilon=math.inf releases every graph's embeddings in the clear, "
                             "whatever DP-FedAvg spends on the rounds: give a finite epsilon, or "
                             "dp_fedavg=False")
        mode = Level.NONE.value
    return mode, bool(dp_fedavg)


class GWLDP(PrivateModule):
    """GW-LDP: FedAvg-trained GNN, a one-time LDP release of every graph's node embeddings, GW
    discrepancies and an SVM on the server (module docstring).

    Args:
        mode, epsilon: ``"ldp"`` (``epsilon``-LDP per graph), ``"none"`` (the same as
            ``epsilon=math.inf``) or ``"paper-code"`` (noise of std ``paper_std``, default
            ``1/n`` of the first graph: not differentially private).
        gnn: ``"gcn"`` (2 layers of 16, mean pool) or ``"gin"`` (5 layers of 64, add pool);
            ``gnn_hidden``, ``gnn_layers``, ``gnn_dropout`` override them.
        embedding: the last convolution's outputs into ``[0, 1]``: ``"sigmoid"``, ``"softmax"``
            (over the features) or ``"clip"``.
        m: entries sampled per row by the encoder (``None``: ``m*``).
        size, n_max: ``"public"`` (one row per node; n is released) or ``"padded"`` (to the
            public ``n_max`` rows).
        dp_fedavg, fedavg_clip: client-level DP-FedAvg, the L2 bound of one client's update.
        fedavg_noise_multiplier, fedavg_epsilon: noise std / ``fedavg_clip``, or ``None`` and
            the rounds' own target epsilon it is calibrated to (``math.inf``: no DP-FedAvg).
        delta: delta of the DP-FedAvg part (``"auto"``: below 1 / number of graphs).
        normalize: scale of each graph's cost matrix (``"max"``, ``"mean"``, ``None``).
        fgw_alpha: ``None``: GW (the paper's GW_H*); in ``(0, 1]``: FGW with that structure
            weight, the feature cost between the *released* rows.
        svm_c_grid, svm_gamma_grid, n_jobs, gw_cache_dir: SVM grids (default: the FGW
            repository's), parallel workers and on-disk cache of the all-pairs GW matrix.
        num_features, num_classes: public sizes (default: the data module's).
        seed, noise_seed: of the weights; of the noise (research only).
        log_private_metrics: log ``train/loss`` and ``val/*`` during a private fit (computed in
            the clear: not covered by epsilon).
        local_epochs, lr, weight_decay: the clients' local full-batch Adam epochs per round.
    """

    #: the clients' network and Fabric, their training batches (PrivateModule.reset_caches)
    caches = ("_local", "_client_batches")
    #: the unit (one client's whole graph) says what is protected, and what is not (the card)
    guarantee_words = {"ldp": ("", "see the unit: what the release does not cover is listed there")}

    def __init__(
        self, mode: Literal["ldp", "none", "paper-code"] = "ldp", epsilon: float = 1.0,
        gnn: Literal["gcn", "gin"] = "gcn", gnn_hidden: int | None = None,
        gnn_layers: int | None = None, gnn_dropout: float | None = None,
        embedding: Literal["sigmoid", "softmax", "clip"] = "sigmoid", m: int | None = None,
        size: Literal["public", "padded"] = "public", n_max: int | None = None,
        paper_std: float | None = None, local_epochs: int = 1, dp_fedavg: bool = False,
        fedavg_clip: float = 1.0, fedavg_noise_multiplier: float | None = None,
        fedavg_epsilon: float | None = None, delta: float | str = "auto",
        normalize: str | None = "max", fgw_alpha: float | None = None,
        svm_c_grid: Sequence[float] | None = None, svm_gamma_grid: Sequence[float] | None = None,
        n_jobs: int = 1, gw_cache_dir: str | None = None, num_features: int | None = None,
        num_classes: int | None = None, seed: int | None = None, noise_seed: int | None = None,
        log_private_metrics: bool = False, lr: float = 0.01, weight_decay: float = 0.0,
    ) -> None:
        for name, value, options in (("mode", mode, MODES), ("gnn", gnn, GNNS),
                                     ("embedding", embedding, EMBEDDINGS),
                                     ("size", size, SIZE_MODES)):
            if value not in options:
                raise ValueError(f"{name} must be one of {options}, got {value!r}")
        if size == "padded" and n_max is not None and int(n_max) < 2:
            raise ValueError(f"n_max must be >= 2 (with one row per graph every GW discrepancy "
                             f"is 0), got {n_max!r}")
        mode, dp_fedavg = _no_privacy_modes(mode, epsilon, dp_fedavg, fedavg_epsilon,
                                            fedavg_noise_multiplier)
        if dp_fedavg:
            if fedavg_noise_multiplier is None and fedavg_epsilon is None:
                raise ValueError("dp_fedavg=True needs fedavg_noise_multiplier or fedavg_epsilon")
            if not float(fedavg_clip) > 0:
                raise ValueError(f"fedavg_clip must be > 0, got {fedavg_clip!r}")
        private = mode != Level.NONE
        fedavg = bool(dp_fedavg) and private
        super().__init__(
            Level.LDP if private else Level.NONE, fedavg_epsilon if fedavg else None, delta,
            levels=("none", "ldp"), noise_seed=noise_seed,
            log_private_metrics=log_private_metrics, lr=lr, weight_decay=weight_decay)
        self.save_hyperparameters()
        self.mode = mode
        self.paper_code = PaperCode.of(mode, "embedding release", PAPER_CODE_FLAW)
        self._mechanism: MatrixMultiBit | PaperCodeGaussian | None = None
        if mode == Level.LDP:
            self._mechanism = MatrixMultiBit(epsilon, 0.0, 1.0, m, size=size, n_max=n_max)
        elif self.paper_code:
            self._mechanism = PaperCodeGaussian(paper_std)
        release_unit = (PAPER_CODE_UNIT if self.paper_code
                        else graph_unit(size, n_max, "dp" if fedavg else "clear"))
        #: the guarantee the release spends under (``None``: the model's own). With DP-FedAvg
        #: the rounds and the release are two guarantees, reported side by side, never added
        self.release_guarantee: str | None = None
        if fedavg:
            self.guarantee_name, self.release_guarantee = FEDAVG, RELEASE
            self.accountant.unit = fedavg_unit()
            self.declare_guarantee(RELEASE, Level.LDP, release_unit,
                                   epsilon=epsilon if mode == Level.LDP else None)
        else:
            self.accountant.unit = release_unit
        self.automatic_optimization = False
        self.net: torch.nn.Module | None = None
        # the one release: drawn when training ends (stage 1: after the federated rounds)
        self.declare_releases(Release(
            RELEASE_KEY, self._release_mechanisms, self._draw_release, stage=1, stream=1,
            inductive=False, guarantee=self.release_guarantee,
            save=GraphRelease.state_dict, load=GraphRelease.from_state_dict,
        ))  # fmt: skip
        self._rounds_done = 0
        #: how many clients' DP-FedAvg updates one protected unit can change (graphs cut from
        #: one source graph: a node in the training graphs of several clients; set in setup)
        self._clients_per_unit = 1
        self._fedavg_z = fedavg_noise_multiplier
        self._global: dict[str, torch.Tensor] | None = None
        self._sum: dict[str, torch.Tensor] | None = None
        self._weight = 0.0
        self._discrepancy: np.ndarray | None = None
        if num_features and num_classes:  # public sizes known: build now (checkpoints, hub)
            with self.seeded(seed):
                self.build(num_features, num_classes)

    def _build(self, num_features: int, num_classes: int) -> None:
        hp = self.hparams
        self.net = graph_backbone(hp.gnn, num_features, num_classes, hp.gnn_hidden,
                                  hp.gnn_layers, hp.gnn_dropout)

    @property
    def _fedavg(self) -> bool:  # the rounds are DP-FedAvg (their own guarantee, the model's)
        return self.guarantee_name == FEDAVG

    # -- the release ---------------------------------------------------------------------------
    def release_mechanism(self) -> MatrixMultiBit | PaperCodeGaussian | None:
        """The mechanism of the one-time embedding release (``None``: clear embeddings)."""
        return self._mechanism

    def representation(self, h: torch.Tensor) -> torch.Tensor:
        """``h`` mapped into the encoder's ``[0, 1]`` (the paper-code mode releases raw ``h``)."""
        if self.paper_code:
            return h
        emb = self.hparams.embedding
        if emb == "sigmoid":
            return torch.sigmoid(h)
        if emb == "softmax":
            return torch.softmax(h, dim=-1)
        return h.clamp(0.0, 1.0)

    def node_embeddings(self, graphs: Sequence[Data]) -> list[torch.Tensor]:
        """Each graph's released representation before the mechanism (client side: private)."""
        assert self.net is not None, "build the model (fit) first"
        with evaluating(self.net):
            return [self.representation(self.net.embed(g.x.float().to(self.device),
                                                       g.edge_index.to(self.device))).cpu()
                    for g in graphs]

    def _release_mechanisms(self, z: float | None) -> list[MatrixMultiBit | PaperCodeGaussian]:
        """The local encoder, over graphs sharing up to ``multiplicity`` source nodes."""
        if self._mechanism is None:
            return []
        dm = self._trainer.datamodule if self._trainer is not None else None
        sources = None if dm is None else self._sources(dm)
        return [self._mechanism.at_overlap(multiplicity(sources))]

    @staticmethod
    def _released_ids(dm: Any) -> torch.Tensor:
        """Every client's graphs (the server's SVM trains on some, predicts the others)."""
        return torch.cat([c.all for c in dm.clients]).sort().values

    def _sources(self, dm: Any) -> list[torch.Tensor] | None:
        """Each released graph's nodes in its source graph (``None``: independent graphs)."""
        sources = dm.source_nodes
        return None if sources is None else [sources[int(i)] for i in self._released_ids(dm)]

    def release_graph(self) -> None:  # no single graph: the release reads every client's
        return None

    def _draw_release(self, d: Draw) -> Steps:
        """Every client encodes every one of its graphs once: one release round."""
        dm = self.trainer.datamodule
        ids = self._released_ids(dm)
        embeddings = self.node_embeddings([dm.dataset[int(i)] for i in ids])
        if not d.mechanisms:
            return GraphRelease("values", [h.float() for h in embeddings], ids,
                                {"mechanism": "clear"})
        mechanism = d.mechanisms[0]
        return mechanism.graph_release((yield mechanism, embeddings), ids)

    # -- setup (PrivateModule's template) ---------------------------------------------------------
    def setup_data(self, stage: str) -> Any:
        """The data module of the clients' graphs (not one graph)."""
        dm = self.trainer.datamodule
        if dm is None or not hasattr(dm, "clients"):
            raise TypeError("GWLDP needs a GraphDataModule (trainer.fit(model, datamodule=dm))")
        if not any(int(g.num_nodes) > 1 for g in dm.dataset):
            raise ValueError("GWLDP: every graph has a single node, so every GW discrepancy is "
                             "0 and the server has nothing to compare: give graphs of at least "
                             "2 nodes")
        return dm

    def build_for(self, dm: Any, seed: int | None = None) -> None:
        hp = self.hparams
        with self.seeded(seed):
            self.build(hp.num_features or dm.num_features, hp.num_classes or dm.num_classes)

    def prepare(self, dm: Any, stage: str) -> None:
        if stage == "fit" and self.level.private and self.releases.get(RELEASE_KEY) is None:
            self._declare_unit(dm)

    def private_units(self, dm: Any) -> int:
        """The units DP-FedAvg's delta is set from: source nodes, or graphs."""
        sources = dm.source_nodes
        return len(dm.dataset) if sources is None else int(torch.cat(sources).unique().numel())

    def resolve_delta(self, dm: Any) -> float | None:
        """DP-FedAvg's delta (the release is pure: it has none)."""
        return super().resolve_delta(dm) if self._fedavg else None

    def calibrate(self) -> None:
        """DP-FedAvg's noise multiplier for ``fedavg_epsilon`` over the fit's rounds."""
        if self._fedavg and self._fedavg_z is None and self.trainer.state.fn == "fit":
            if self._fedavg_rounds() < 1:
                raise ValueError("DP-FedAvg calibration needs Trainer(max_epochs=rounds)")
            self._fedavg_z = calibrated(self.ledgers.closed_plan, None, self.target_epsilon,
                                        self.accountant.delta, "fedavg_noise_multiplier")
            self.hparams.fedavg_noise_multiplier = self._fedavg_z

    def _declare_unit(self, dm: Any) -> None:
        """The units of the fit's guarantees: independent graphs or graphs cut from one source
        graph (how many graphs, and clients, hold one of its nodes), and what is public."""
        nodes = dm.source_nodes  # the most clients whose training graphs hold one node (or 1)
        held = [] if nodes is None else [(nodes[int(i)], c.client) for c in dm.clients
                                         for i in c.train]
        self._clients_per_unit = multiplicity([h for h, _ in held], [c for _, c in held])
        if self._fedavg:
            self.accountant.unit = fedavg_unit(self._clients_per_unit, dm.declared_public())
        if self.paper_code:
            return
        sources = self._sources(dm)
        self.accountant_of(self.release_guarantee).unit = graph_unit(
            self.hparams.size, self.hparams.n_max, "dp" if self._fedavg else "clear",
            overlap=None if sources is None else multiplicity(sources), public=dm.declared_public())

    def _fedavg_rounds(self) -> int:
        trainer = self._trainer
        return int(trainer.max_epochs) if trainer is not None and trainer.max_epochs else 0

    def _record_fedavg(self, acc: PrivacyAccountant, z: float, rounds: int) -> None:
        """DP-FedAvg rounds: the sum of clipped updates (norm <= S) plus N(0, (z S)^2). One unit
        (a graph, or a source node in the graphs of up to ``c`` clients) changes ``c`` updates
        by 2 S each (replacement): sensitivity ``2 c S``, noise multiplier ``z / (2 c)``."""
        if rounds > 0:
            s, c = float(self.hparams.fedavg_clip), int(self._clients_per_unit)
            unit = ("replacement of one graph" if c == 1 else
                    f"one node of the source graph in the training graphs of up to {c} clients")
            acc.add_gaussian(
                FEDAVG_NAME, z / (2.0 * c), count=rounds, sensitivity=2.0 * c * s,
                note=f"client-level DP-FedAvg: clip {s:g}, noise std {z * s:g} on the sum of "
                f"client updates, full participation; {unit}")

    # -- plan ------------------------------------------------------------------------------------
    def plan_steps(self, accountant: PrivacyAccountant, noise_multiplier: float | None) -> bool:
        """The DP-FedAvg rounds left at ``noise_multiplier`` (the release plans itself)."""
        if self._fedavg:
            z = self._fedavg_z if noise_multiplier is None else noise_multiplier
            left = max(self._fedavg_rounds() - self._rounds_done, 0)
            if left and z is None:
                return False
            self._record_fedavg(accountant, float(z or 0.0), left)
        return True

    # -- federated training --------------------------------------------------------------------
    def train_dataloader_from_clients(self, dm: Any) -> DataLoader:
        """One batch per client. Under DDP the loader is padded with empty steps (``-1``) to a
        multiple of the world size: the distributed sampler would pad it with repeated clients
        (a client counted twice: under DP-FedAvg, twice its sensitivity)."""
        world = self.trainer.world_size if self._trainer is not None else 1
        k = len(dm.clients)
        steps = list(range(k)) + [-1] * (-k % world)
        return DataLoader(steps, batch_size=1, collate_fn=_first)

    def configure_optimizers(self) -> None:  # the clients' optimizers are local
        return None

    def on_train_epoch_start(self) -> None:
        self._global = {k: v.detach().clone() for k, v in self.net.state_dict().items()}
        self._sum = {k: torch.zeros_like(v) for k, v in self._global.items()
                     if v.is_floating_point()}
        self._weight = 0.0

    def _client(self) -> tuple[torch.nn.Module, Fabric]:
        """The clients' network (a copy of the server's, outside its DDP wrapper) and Fabric."""
        local = self.__dict__.get("_local")
        if local is None or local[1].device != self.device:
            fabric = Fabric(accelerator="cuda" if self.device.type == "cuda" else "cpu",
                            devices=1, strategy=SingleDeviceStrategy(self.device))
            local = (copy.deepcopy(self.net), fabric)
            self.__dict__["_local"] = local  # not a submodule: no state_dict entry, no DDP
        return local

    def _client_batch(self, client: int) -> Batch | None:
        """Client ``client``'s training graphs as one batch on this device (cached per fit)."""
        batches = self.__dict__.setdefault("_client_batches", {})
        if client not in batches:
            dm = self.trainer.datamodule
            idx = dm.clients[client].train
            batches[client] = None if idx.numel() == 0 else Batch.from_data_list(
                [dm.dataset[int(i)] for i in idx]).to(self.device)
        return batches[client]

    def local_update(self, batch: Batch, start: dict[str, torch.Tensor]) -> tuple[
            dict[str, torch.Tensor], torch.Tensor]:
        """One client's local update (``local_epochs`` full-batch Adam epochs from the global
        weights ``start``, a Fabric loop): the change of the float state and the last loss."""
        net, fabric = self._client()
        net.load_state_dict(start)
        net.train()
        model, opt = fabric.setup(net, self.adam(net.parameters()), move_to_device=False)
        y = batch.y.view(-1)
        for _ in range(int(self.hparams.local_epochs)):
            opt.zero_grad()
            loss = F.cross_entropy(model(batch.x.float(), batch.edge_index, batch.batch), y)
            fabric.backward(loss)
            opt.step()
        state = net.state_dict()
        return {k: state[k].detach() - start[k] for k in start if start[k].is_floating_point()}, \
            loss.detach()

    def training_step(self, client: int, batch_idx: int) -> None:
        batch = None if int(client) < 0 else self._client_batch(int(client))
        if batch is None:  # a padding step (DDP) or a client without training graphs
            return None
        delta, loss = self.local_update(batch, self._global)
        if self.hparams.dp_fedavg:
            norm = torch.sqrt(sum((d.double() ** 2).sum() for d in delta.values()))
            factor = min(1.0, float(self.hparams.fedavg_clip) / max(float(norm), 1e-12))
            weight, delta = 1.0, {k: d * factor for k, d in delta.items()}
        else:
            weight = float(batch.num_graphs)
        for k, d in delta.items():
            self._sum[k] += weight * d
        self._weight += weight
        if self._logs_private_metrics():
            self.log("train/loss", loss, batch_size=1, on_epoch=True, on_step=False)
        return None

    def _logs_private_metrics(self) -> bool:
        """Not during a private fit, unless ``log_private_metrics`` (invariant 16)."""
        in_fit = self._trainer is not None and self.trainer.state.fn == "fit"
        return not (in_fit and self.level.private and not self.log_private_metrics)

    def on_train_epoch_end(self) -> None:
        sums, weight = self._sum, self._weight
        if self.trainer.world_size > 1:  # clients as ranks: sum over every rank's clients
            strategy = self.trainer.strategy
            sums = {k: strategy.reduce(v, reduce_op="sum") for k, v in sums.items()}
            weight = float(strategy.reduce(torch.tensor(weight, device=self.device),
                                           reduce_op="sum"))
        if self._fedavg:
            noise = self.run_once(self._fedavg_noise)
            k = len(self.trainer.datamodule.clients)  # public: every client takes part
            new = {n: self._global[n] + (sums[n] + noise[n].to(sums[n])) / k for n in sums}
        else:
            new = {n: self._global[n] + sums[n] / max(weight, 1e-12) for n in sums}
        self.net.load_state_dict({**self._global, **new})
        self._rounds_done += 1
        self._show_planned_spend()

    def _show_planned_spend(self) -> None:
        """The whole fit's planned epsilon on the progress bar (the release comes last)."""
        planned = self.privacy_planned() if self.level.private else None
        parts = {} if planned is None else planned.guarantees
        for name, report in parts.items():
            if math.isfinite(report.epsilon):  # one key per guarantee when there are several
                key = "privacy/epsilon_planned" + (f"/{name}" if len(parts) > 1 else "")
                # equal on every rank; sync_dist keeps Lightning's epoch-level check quiet
                self.log(key, report.epsilon, prog_bar=True, sync_dist=True)

    def _fedavg_noise(self) -> dict[str, torch.Tensor]:
        std = float(self._fedavg_z) * float(self.hparams.fedavg_clip)
        gen = self.noise_generator(2)
        self.accountant.mark_reproducible(gen)
        noise = {k: R.normal(tuple(v.shape), std, generator=gen, dtype=v.dtype)
                 for k, v in self._sum.items()}
        self._record_fedavg(self.accountant, float(self._fedavg_z), 1)
        return noise

    def on_train_end(self) -> None:
        super().on_train_end()
        self.draw_releases(1)  # once; a restored release is kept

    # -- evaluation of the federated GNN --------------------------------------------------------
    def _eval_step(self, batch: Batch, stage: str) -> None:
        if stage == "val" and not self._logs_private_metrics():
            return
        logits = self.net(batch.x.float(), batch.edge_index, batch.batch)
        y = batch.y.view(-1)
        self.log(f"{stage}/acc", accuracy(logits, y), batch_size=y.numel(), prog_bar=True)
        self.log(f"{stage}/loss", F.cross_entropy(logits, y), batch_size=y.numel())

    def validation_step(self, batch: Batch, batch_idx: int) -> None:
        self._eval_step(batch, "val")

    def test_step(self, batch: Batch, batch_idx: int) -> None:
        self._eval_step(batch, "test")

    def on_test_epoch_end(self) -> None:
        if self.releases.get(RELEASE_KEY) is not None:
            acc, params = self.svm_accuracy()
            self.log("test/svm_acc", acc)
            self.last_svm_params = params

    # -- the server: post-processing of the release -------------------------------------------
    def server_matrices(self) -> list[torch.Tensor]:
        """The server's view of every graph: rectified codes, or the received values."""
        rel = self.releases[RELEASE_KEY]
        if rel.kind == "values":
            return [m.double() for m in rel.matrices]
        mech = self._mechanism
        assert isinstance(mech, MatrixMultiBit)
        return [mech.rectify(c) for c in rel.matrices]

    def discrepancy(self) -> np.ndarray:
        """The GW discrepancy of every pair of released graphs (cached), in ``graph_ids`` order."""
        if self._discrepancy is None:
            mats = self.server_matrices()
            costs = [gw.embedding_cost(h, self.hparams.normalize) for h in mats]
            alpha = self.hparams.fgw_alpha
            self._discrepancy = gw.pairwise_discrepancy(
                costs, None if alpha is None else mats, alpha=alpha or 0.5,
                n_jobs=self.hparams.n_jobs, cache_dir=self.hparams.gw_cache_dir)
        return self._discrepancy

    def svm_accuracy(self, protocol: Literal["split", "nested"] = "split", **kwargs: Any):
        """SVM on the GW kernel of the release: ``"split"``, the clients' 7:2:1 graphs, or
        ``"nested"``, the FGW nested CV (a :class:`~lightning_dpgnn.gw.SVMResult`). The server
        is given the training graphs' labels (not covered by epsilon); test labels only score."""
        dm = self.trainer.datamodule
        ids = self.releases[RELEASE_KEY].graph_ids
        pos = {int(g): i for i, g in enumerate(ids.tolist())}
        y = dm.graph_labels[ids].numpy()
        d = self.discrepancy()
        hp = self.hparams
        grids = {"c_grid": gw.C_GRID if hp.svm_c_grid is None else hp.svm_c_grid,
                 "gamma_grid": gw.GAMMA_GRID if hp.svm_gamma_grid is None else hp.svm_gamma_grid}
        if protocol == "nested":
            return gw.svm_nested_cv(d, y, **grids, **kwargs)
        parts = [np.array([pos[int(i)] for c in dm.clients for i in getattr(c, k)], dtype=int)
                 for k in ("train", "val", "test")]
        return gw.svm_split(d, y, *parts, **grids)

    def cluster_release(
        self, k: int | None = None, method: Literal["spectral", "kmedoids"] = "spectral",
        gamma: float = 1.0, seed: int = 0,
    ) -> dict[str, Any]:
        """Cluster the released graphs in GW space (``k``: the classes'), scored on labels."""
        dm = self.trainer.datamodule
        ids = self.releases[RELEASE_KEY].graph_ids
        y = dm.graph_labels[ids].numpy()
        k = int(k) if k is not None else int(self.hparams.num_classes or y.max() + 1)
        labels = gw.cluster(self.discrepancy(), k, method, gamma=gamma, seed=seed)
        return {"labels": labels, **gw.cluster_scores(labels, y)}

    def publication_blockers(self) -> list[str]:
        """Beyond the common refusals: private weights trained by FedAvg in the clear would carry
        no guarantee while the card states an epsilon (``dp_fedavg=True`` covers them)."""
        if self.level.private and not self.paper_code and not self._fedavg:
            return ["its weights were trained by FedAvg in the clear on the clients' graphs (the "
                    "paper's protocol): they are NOT covered by the release's epsilon; train "
                    "with dp_fedavg=True to publish"]
        return super().publication_blockers()

    # -- checkpoints ---------------------------------------------------------------------------
    def on_releases_changed(self, names: list[str], restored: bool = False) -> None:
        self._discrepancy = None  # computed from the previous release

    def public_state(self) -> dict[str, Any]:
        return {"rounds_done": self._rounds_done}

    def load_public_state(self, state: dict[str, Any]) -> None:
        self._rounds_done = int(state.get("rounds_done", 0))
