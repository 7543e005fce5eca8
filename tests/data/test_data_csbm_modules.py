"""The embedded csbm dataset and the data modules (loaders, Lightning and CLI integration)."""

from __future__ import annotations

import time
from pathlib import Path

import lightning as L
import pytest
import torch
import torch.nn.functional as F
from torch_geometric.data import Data

from lightning_dpgnn.data import (
    CSBM_DEFAULTS,
    BoundDegree,
    GraphDataModule,
    NodeDataModule,
    available_datasets,
    get_spec,
    load_dataset,
    make_csbm,
    node_stats,
)


# ------------------------------------------------------------------ csbm
def test_csbm_deterministic_and_seed_dependent() -> None:
    a, b, c = make_csbm(seed=7), make_csbm(seed=7), make_csbm(seed=8)
    for key in ("x", "edge_index", "y"):
        assert torch.equal(a[key], b[key])
    assert not torch.equal(a.edge_index, c.edge_index) and not torch.equal(a.x, c.x)


def test_csbm_stats_and_speed() -> None:
    start = time.perf_counter()
    data = make_csbm()
    elapsed = time.perf_counter() - start
    assert elapsed < 1.0
    n, k = CSBM_DEFAULTS["num_nodes"], CSBM_DEFAULTS["num_classes"]
    assert data.num_nodes == n and data.x.shape == (n, CSBM_DEFAULTS["num_features"])
    assert torch.equal(torch.bincount(data.y), torch.full((k,), n // k))
    stats = node_stats(data)
    assert stats["num_self_loops"] == 0 and stats["num_isolated_nodes"] == 0
    assert 0.9 * 10 <= stats["mean_in_degree"] <= 10
    assert abs(stats["edge_homophily"] - 0.8) < 0.03
    ei = data.edge_index  # symmetric, no duplicates
    assert torch.equal(torch.sort(ei[0] * n + ei[1]).values, torch.sort(ei[1] * n + ei[0]).values)
    assert torch.unique(ei[0] * n + ei[1]).numel() == ei.size(1)
    other = make_csbm(num_nodes=500, num_classes=3, avg_degree=4, homophily=0.2, num_features=8)
    s2 = node_stats(other)
    assert other.x.shape == (500, 8) and s2["num_classes"] == 3
    assert abs(s2["edge_homophily"] - 0.2) < 0.06
    with pytest.raises(ValueError, match="homophily"):
        make_csbm(homophily=1.5)


def _logreg_accuracy(x: torch.Tensor, y: torch.Tensor, train: torch.Tensor, test: torch.Tensor):
    torch.manual_seed(0)
    lin = torch.nn.Linear(x.size(1), int(y.max()) + 1)
    opt = torch.optim.Adam(lin.parameters(), lr=0.05, weight_decay=1e-4)
    for _ in range(150):
        opt.zero_grad()
        F.cross_entropy(lin(x[train]), y[train]).backward()
        opt.step()
    return float((lin(x[test]).argmax(1) == y[test]).float().mean())


def test_csbm_default_graph_helps_clearly() -> None:
    """Two rounds of neighbour averaging (an SGC, i.e. a linear GNN) beat an MLP by far."""
    dm = NodeDataModule()
    data = dm.data
    x, ei, n = data.x, data.edge_index, data.num_nodes
    deg = torch.bincount(ei[1], minlength=n).float().unsqueeze(1)
    h = x
    for _ in range(2):
        h = (torch.zeros_like(h).index_add_(0, ei[1], h[ei[0]]) + h) / (deg + 1)
    mlp = _logreg_accuracy(x, data.y, data.train_mask, data.test_mask)
    gnn = _logreg_accuracy(h, data.y, data.train_mask, data.test_mask)
    assert mlp < 0.65
    assert gnn > mlp + 0.25, (mlp, gnn)


# ------------------------------------------------------------------ NodeDataModule
def test_default_module_needs_no_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DPGNN_DATA")
    dm = NodeDataModule()
    assert dm.name == "csbm"
    dm.prepare_data()
    dm.setup("fit")
    assert (dm.num_nodes, dm.num_classes, dm.num_features) == (2000, 5, 64)
    loaders = [
        dm.train_dataloader(),
        dm.val_dataloader(),
        dm.test_dataloader(),
        dm.predict_dataloader(),
    ]
    for loader in loaders:
        batches = list(loader)
        assert len(batches) == 1
        batch = batches[0]
        assert isinstance(batch, Data) and batch.num_nodes == 2000
        assert batch.train_mask.dtype == torch.bool
    info = dm.dataset_info()
    # the default split is keyed on node identity: binomial sizes around 1500/200/300
    sizes = (info["num_train"], info["num_val"], info["num_test"])
    assert sum(sizes) == 2000
    assert all(abs(k - e) <= 60 for k, e in zip(sizes, (1500, 200, 300), strict=True)), sizes
    assert info["name"] == "csbm" and info["split"] == [0.75, 0.1, 0.15]
    assert info["split_by"] == "identity"
    assert torch.equal(dm.data.node_id, torch.arange(2000))
    exact = NodeDataModule(split_by="position").dataset_info()
    assert (exact["num_train"], exact["num_val"], exact["num_test"]) == (1500, 200, 300)


def test_module_options_and_determinism() -> None:
    kw = {"num_nodes": 600, "num_classes": 3}
    opts = {
        "split": "lpgnn", "dataset_kwargs": kw, "subsample_in_degree": 4,
        "feature_range": (0.0, 1.0),
    }
    a = NodeDataModule(seed=3, **opts)
    b = NodeDataModule(seed=3, **opts)
    c = NodeDataModule(split="lpgnn", seed=4, dataset_kwargs=kw)
    assert torch.equal(a.data.train_mask, b.data.train_mask)
    assert torch.equal(a.data.edge_index, b.data.edge_index)
    assert not torch.equal(a.data.train_mask, c.data.train_mask)
    assert abs(int(a.data.train_mask.sum()) - 300) <= 40  # binomial(600, 0.5): sd 12
    assert int(torch.bincount(a.data.edge_index[1]).max()) <= 4
    assert float(a.data.x.min()) == 0.0 and float(a.data.x.max()) == 1.0
    assert a.num_classes == 3
    d = NodeDataModule(split=(0.6, 0.2, 0.2), dataset_kwargs=kw, transform=BoundDegree(2))
    assert int(torch.bincount(d.data.edge_index[1]).max()) <= 2
    assert abs(int(d.data.val_mask.sum()) - 120) <= 30  # binomial(600, 0.2): sd 10
    e = NodeDataModule(split=(0.6, 0.2, 0.2), dataset_kwargs=kw, split_by="position")
    assert int(e.data.val_mask.sum()) == 120


def test_from_data_and_min_class_size() -> None:
    base = make_csbm(num_nodes=300, num_classes=3, seed=1)
    y = base.y.clone()
    y[y == 2] = torch.where(torch.arange(int((y == 2).sum())) < 5, 2, 0)  # class 2 keeps 5
    data = Data(x=base.x, edge_index=base.edge_index, y=y)
    dm = NodeDataModule.from_data(data, name="mine", min_class_size=10)
    assert dm.name == "mine" and dm.hparams["name"] == "mine" and dm.num_classes == 2
    assert dm.num_nodes == 295
    # node identity is the raw position, kept through the class filter's subgraph
    assert torch.equal(dm.data.node_id, (y != 2).nonzero().view(-1))
    dm2 = NodeDataModule.from_data(data, split="lpgnn")
    assert dm2.num_classes == 3 and dm2.num_nodes == 300


def _full_batch_model(num_features: int, num_classes: int) -> L.LightningModule:
    class Tiny(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.lin = torch.nn.Linear(num_features, num_classes)
            self.seen: dict[str, int] = {}

        def _step(self, batch: Data, mask_key: str) -> torch.Tensor:
            mask = batch[mask_key]
            self.seen[mask_key] = int(mask.sum())
            return F.cross_entropy(self.lin(batch.x)[mask], batch.y[mask])

        def training_step(self, batch: Data, _: int) -> torch.Tensor:
            return self._step(batch, "train_mask")

        def validation_step(self, batch: Data, _: int) -> None:
            self.log("val_loss", self._step(batch, "val_mask"), batch_size=1)

        def test_step(self, batch: Data, _: int) -> None:
            self.log("test_loss", self._step(batch, "test_mask"), batch_size=1)

        def configure_optimizers(self) -> torch.optim.Optimizer:
            return torch.optim.SGD(self.parameters(), lr=0.1)

    return Tiny()


def test_trainer_fit_and_test_with_node_module() -> None:
    dm = NodeDataModule(dataset_kwargs={"num_nodes": 200})
    model = _full_batch_model(dm.num_features, dm.num_classes)
    trainer = L.Trainer(
        max_epochs=2,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        accelerator="cpu",
    )
    trainer.fit(model, dm)
    assert trainer.global_step == 2  # one full-batch step per epoch
    trainer.test(model, dm, verbose=False)
    assert model.seen == {k: int(dm.data[k].sum()) for k in ("train_mask", "val_mask", "test_mask")}
    assert sum(model.seen.values()) == 200


def test_cli_parsing_of_module_arguments() -> None:
    from jsonargparse import ArgumentParser

    parser = ArgumentParser(exit_on_error=False)
    parser.add_class_arguments(NodeDataModule, "data")
    parser.add_class_arguments(GraphDataModule, "graph")
    cfg = parser.parse_args(
        [
            "--data.name=csbm",
            "--data.split=[0.5,0.25,0.25]",
            "--data.split_by=position",
            "--data.min_class_size=0.01",
            "--data.dataset_kwargs={num_nodes: 300}",
            "--data.transform=lightning_dpgnn.data.BoundDegree",
            "--data.transform.max_degree=3",
        ]
    )
    init = parser.instantiate(cfg)
    dm = init.data
    assert isinstance(dm, NodeDataModule) and isinstance(dm.transform, BoundDegree)
    assert dm.num_nodes == 300
    assert int(dm.data.train_mask.sum()) == 150
    assert int(torch.bincount(dm.data.edge_index[1]).max()) <= 3
    assert cfg.data.min_class_size == 0.01
    assert isinstance(init.graph, GraphDataModule) and init.graph.name == "mutag"


def test_hyperparameters_saved() -> None:
    dm = NodeDataModule("cora", split="lpgnn", seed=5)
    assert dm.hparams["name"] == "cora" and dm.hparams["seed"] == 5
    assert dm.hparams["split"] == "lpgnn"


# ------------------------------------------------------------------ registry
def test_available_datasets_and_aliases() -> None:
    names = available_datasets()
    expected = ["csbm", "cora", "citeseer", "pubmed", "musae-facebook", "musae-twitch-en"]
    expected += ["reddit", "amazon", "lastfm", "mutag", "proteins", "facebook100/Caltech36"]
    assert set(expected) <= set(names)
    assert available_datasets("graph") == ["mutag", "proteins", "proteins-full", "imdb-binary"]
    assert get_spec("PROTEINS_full").name == "proteins-full"
    assert get_spec("IMDB-BINARY").name == get_spec("imdb-b").name == "imdb-binary"
    assert "mutag" not in available_datasets("node")
    assert get_spec("musae/twitch_en").name == "musae-twitch-en"
    assert get_spec("Twitch").name == "musae-twitch-en"
    assert get_spec("FB100/caltech36").name == "facebook100/Caltech36"
    assert get_spec("facebook100/Caltech36").default_target == "year"
    assert get_spec("ogbn-products").name == "amazon"
    assert get_spec("reddit").default_min_class_size == 10_000


def test_processed_cache_keyed_by_target(data_root: Path, tmp_path: Path) -> None:
    cache = tmp_path / "c"
    mature = load_dataset("musae-twitch-en", root=data_root, cache_dir=cache)
    partner = load_dataset("musae-twitch-en", root=data_root, cache_dir=cache, target="partner")
    files = sorted(p.name for p in (cache / "processed").rglob("*.pt"))
    assert files == ["musae-mature.pt", "musae-partner.pt"]
    assert not torch.equal(mature.y, partner.y)
    again = load_dataset("musae-twitch-en", root=data_root, cache_dir=cache)
    assert torch.equal(again.y, mature.y) and torch.equal(again.x, mature.x)


def test_processed_cache_keyed_by_dataset_options(data_root: Path, tmp_path: Path, caplog,
                                                  recwarn) -> None:
    """Alternating the loader's options (the README's default vocabulary, a recipe's public
    one) keeps one cache each: no "damaged ... rebuilding" and no re-parse on a switch."""
    cache = tmp_path / "c"
    name = "facebook100/Caltech36"
    runs = [{}, {"vocabulary": "public"}, {}, {"vocabulary": "public"}]
    loaded = [load_dataset(name, root=data_root, cache_dir=cache, **kw) for kw in runs]
    assert len(list((cache / "processed").iterdir())) == 2
    assert torch.equal(loaded[0].x, loaded[2].x) and torch.equal(loaded[1].x, loaded[3].x)
    assert loaded[0].x.shape != loaded[1].x.shape or not torch.equal(loaded[0].x, loaded[1].x)
    said = caplog.text + " ".join(str(w.message) for w in recwarn)
    assert "damaged" not in said and "rebuilding" not in said
