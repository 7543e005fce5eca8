"""Fast paths give the results of the straightforward computation (same inputs, float
tolerance): validation/test on the split's rows only, CSR features through the first layer."""

import pytest
import torch

from lightning_dpgnn import GAP, ProGAP
from lightning_dpgnn.data import NodeDataModule, make_csbm


@pytest.fixture(scope="module")
def one_hot_dm():
    """A small csbm graph whose features are wide one-hot codes (they travel as CSR)."""
    data = make_csbm(num_nodes=300, num_features=8, seed=0)
    g = torch.Generator().manual_seed(0)
    codes = torch.randint(0, 300, (data.num_nodes, 3), generator=g)
    codes[:, 0] = data.y * 60 + torch.randint(0, 60, (data.num_nodes,), generator=g)
    x = torch.zeros(data.num_nodes, 300)
    x.scatter_(1, codes, 1.0)
    data.x = x
    return NodeDataModule.from_data(data, seed=0)


@pytest.mark.parametrize(
    "make",
    [
        lambda: GAP(privacy="edge", epsilon=1.0, hops=2, hidden=8, encoder_epochs=3,
                    classifier_epochs=3, noise_seed=0),
        lambda: ProGAP(privacy="edge", epsilon=1.0, depth=2, hidden=8, epochs_per_stage=3,
                       noise_seed=0),
    ],
    ids=["gap", "progap"],
)
def test_split_rows_give_the_logits_of_the_whole_graph(one_hot_dm, make_trainer, make):
    model = make()
    trainer = make_trainer()
    trainer.fit(model, one_hot_dm)
    data = one_hot_dm.data
    rows = model.row_trainer.node_rows("probe", data, lambda: (data.x,), "val", compact=True)
    assert rows[0].layout == torch.sparse_csr
    model.eval()
    with torch.no_grad():
        full = model._logits(data)  # every node, dense straightforward path
        for split in ("val", "test"):
            logits, y = model._split_logits(data, split)
            mask = getattr(data, f"{split}_mask")
            torch.testing.assert_close(logits, full[mask], atol=1e-5, rtol=1e-5)
            assert torch.equal(y, data.y[mask])
    # the logged test accuracy is the accuracy of those rows
    acc = trainer.test(model, one_hot_dm, verbose=False)[0]["test/acc"]
    mask = data.test_mask
    expected = (full[mask].argmax(-1) == data.y[mask]).float().mean().item()
    assert acc == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_cross_entropy_on_the_node_axis_equals_torch_in_value_and_gradient(reduction):
    from lightning_dpgnn.methods.base import cross_entropy

    g = torch.Generator().manual_seed(0)
    y = torch.randint(0, 5, (40,), generator=g)
    weights = torch.rand(40, generator=g)  # a non-uniform upstream gradient for "none"
    results = []
    for fn in (torch.nn.functional.cross_entropy, cross_entropy):
        logits = torch.randn(40, 5, generator=torch.Generator().manual_seed(1), requires_grad=True)
        loss = fn(logits, y, reduction=reduction)
        (loss * weights).sum().backward() if reduction == "none" else loss.backward()
        results.append((loss.detach(), logits.grad))
    assert results[0][0].shape == results[1][0].shape
    for a, b in zip(*results, strict=True):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-6)


def test_cached_csr_aggregation_equals_the_dense_sum_and_follows_edits():
    from lightning_dpgnn.privacy.aggregation import in_adjacency, sum_aggregate

    g = torch.Generator().manual_seed(0)
    edge_index = torch.randint(0, 30, (2, 200), generator=g)
    edge_index[:, 1] = edge_index[:, 0]  # a repeated edge counts twice
    x = torch.randn(30, 4, generator=g, dtype=torch.float64)
    dense = torch.zeros(30, 30, dtype=torch.float64)
    dense.index_put_((edge_index[1], edge_index[0]), torch.ones(200, dtype=torch.float64),
                     accumulate=True)
    torch.testing.assert_close(sum_aggregate(x, edge_index, 30), dense @ x)
    adj = in_adjacency(edge_index, 30, torch.float64)
    assert adj.col_indices().dtype == torch.int32
    assert in_adjacency(edge_index, 30, torch.float64) is adj  # built once per edge tensor
    edge_index[0, 0] = (edge_index[0, 0] + 1) % 30  # an in-place edit: rebuilt, never stale
    dense[edge_index[1, 0], (edge_index[0, 0] - 1) % 30] -= 1
    dense[edge_index[1, 0], edge_index[0, 0]] += 1
    torch.testing.assert_close(sum_aggregate(x, edge_index, 30), dense @ x)
    torch.testing.assert_close(sum_aggregate(x.float(), edge_index, 30), (dense @ x).float())


def test_the_edge_range_check_is_redone_after_an_in_place_edit():
    from lightning_dpgnn.privacy.aggregation import sum_aggregate

    edge_index = torch.tensor([[0, 1], [1, 2]])
    x = torch.ones(3, 2)
    sum_aggregate(x, edge_index, 3)  # checked once
    edge_index[0, 0] = 7  # out of range: the cached check must not hide it
    with pytest.raises(ValueError, match="outside"):
        sum_aggregate(x, edge_index, 3)
    with pytest.raises(ValueError, match="outside"):
        sum_aggregate(torch.ones(2, 2), torch.tensor([[0], [1]]).clone().fill_(5), 2)


@pytest.mark.parametrize(
    "make",
    [
        lambda: GAP(privacy="edge", epsilon=1.0, hops=2, hidden=8, encoder_epochs=3,
                    classifier_epochs=3, noise_seed=0, seed=0),
        lambda: ProGAP(privacy="edge", epsilon=1.0, depth=2, hidden=8, epochs_per_stage=3,
                       noise_seed=0, seed=0),
        lambda: GAP(privacy="node", epsilon=8.0, hops=1, hidden=8, encoder_epochs=2,
                    classifier_epochs=2, batch_size=64, max_degree=50, noise_seed=0, seed=0),
    ],
    ids=["gap-edp", "progap-edp", "gap-ndp"],
)
def test_sparse_features_give_the_fit_of_the_dense_ones(one_hot_dm, make_trainer, make):
    """The FB-scale readers keep one-hot features as sparse COO: filtered by class, split,
    gathered per split (CSR, or dense Poisson batches under DP-SGD), they give the fit of the
    same features dense."""
    dense = one_hot_dm.data.clone()
    for key in ("train_mask", "val_mask", "test_mask"):
        del dense[key]
    small = (dense.y == 4) & (torch.arange(dense.num_nodes) % 2 == 0)
    dense.y = torch.where(small, 3, dense.y)  # class 4 now the smallest
    counts = torch.bincount(dense.y)
    sparse = dense.clone()
    sparse.x = dense.x.to_sparse()
    runs = []
    # the smallest class is filtered out (node level: declared public classes instead)
    kwargs = {"min_class_size": int(counts.min()) + 1}
    if make().privacy == "node":
        kwargs = {"classes": [0, 1, 2, 3], "min_class_size": 0}
    for data in (dense, sparse):
        dm = NodeDataModule.from_data(data, seed=0, **kwargs)
        model = make()
        trainer = make_trainer()
        trainer.fit(model, dm)
        acc = trainer.test(model, dm, verbose=False)[0]["test/acc"]
        model.eval()
        with torch.no_grad():
            logits = model._logits(dm.data)
        runs.append((dm.data, logits, acc))
    (d0, l0, a0), (d1, l1, a1) = runs
    assert d1.x.layout == torch.sparse_coo and d0.num_nodes == d1.num_nodes
    assert d1.num_nodes < dense.num_nodes or "classes" in kwargs  # sparse rows were filtered
    assert torch.equal(d1.x.to_dense(), d0.x) and torch.equal(d1.train_mask, d0.train_mask)
    torch.testing.assert_close(l1, l0, atol=1e-5, rtol=1e-5)
    assert a1 == pytest.approx(a0, abs=1e-6)


@pytest.mark.parametrize("bounds", [(0.0, 1.0), (0.1, 0.9)])
def test_ldp_input_check_counts_what_float64_counts(bounds):
    """The input check compares in x's dtype when the bounds are exact in it (no float64
    copy): the clipped-value count of the warning is the float64 count, NaN still refused."""
    import warnings

    from lightning_dpgnn.privacy.ldp import MultiBit

    g = torch.Generator().manual_seed(0)
    x = torch.rand(300, 40, generator=g) * 1.2 - 0.1
    lo, hi = bounds
    expected = int(((x.double() < lo) | (x.double() > hi)).sum())
    mech = MultiBit(1.0, alpha=lo, beta=hi)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mech.sample(x, torch.Generator().manual_seed(1))
    assert any(f"{expected} of {x.numel()} input values" in str(w.message) for w in caught)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mech.sample(x.clamp(lo, hi), torch.Generator().manual_seed(1))
    assert not any("outside the feature range" in str(w.message) for w in caught)
    x[3, 5] = float("nan")
    with pytest.raises(ValueError, match="1 NaN"):
        mech.sample(x)


class _BatchSizes(__import__("lightning").Callback):
    """The number of rows of every training batch, per stage."""

    def __init__(self) -> None:
        self.sizes: dict[int, list[int]] = {}

    def on_train_batch_start(self, trainer, module, batch, batch_idx):
        self.sizes.setdefault(module.staged.current_stage, []).append(len(batch[-1]))


@pytest.mark.parametrize(
    "make",
    [
        lambda **k: GAP(privacy="edge", epsilon=1.0, hops=2, hidden=8, encoder_epochs=2,
                        classifier_epochs=2, noise_seed=0, **k),
        lambda **k: ProGAP(privacy="edge", epsilon=1.0, depth=2, hidden=8, epochs_per_stage=2,
                           noise_seed=0, **k),
    ],
    ids=["gap", "progap"],
)
def test_train_batch_size_trains_every_stage_on_shuffled_batches_of_that_size(
        one_hot_dm, make_trainer, make):
    """Every stage's epoch is ceil(n / B) batches of at most B rows covering the n training
    rows (the encoder's one-hot rows travel as CSR); the default stays one full batch; the
    privacy spent does not change with the batch size."""
    n = int(one_hot_dm.data.train_mask.sum())
    spent = {}
    for batch in (None, 64):
        sizes = _BatchSizes()
        model = make(train_batch_size=batch)
        make_trainer(callbacks=[sizes]).fit(model, one_hot_dm)
        spent[batch] = model.privacy_spent().epsilon
        assert len(sizes.sizes) == len(model.staged.stages)
        for per_stage in sizes.sizes.values():
            if batch is None:
                assert per_stage == [n] * 2  # 2 epochs of one full batch
            else:
                per_epoch = -(-n // batch)
                assert len(per_stage) == 2 * per_epoch
                assert max(per_stage) == batch and sum(per_stage) == 2 * n
    assert spent[None] == spent[64]


def test_row_loader_batches_are_a_shuffled_partition_and_node_level_refuses_them():
    from lightning_dpgnn.privacy.dpsgd import row_loader

    x, y = torch.arange(10.0).unsqueeze(1), torch.arange(10)
    torch.manual_seed(0)
    epochs = [[b[1].tolist() for b in row_loader(x, y, batch_size=4)] for _ in range(2)]
    for batches in epochs:
        assert [len(b) for b in batches] == [4, 4, 2]
        assert sorted(i for b in batches for i in b) == list(range(10))
    assert epochs[0] != epochs[1] and epochs[0] != [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    with pytest.raises(ValueError, match="Poisson batches"):
        GAP(privacy="node", epsilon=8.0, train_batch_size=64)
    with pytest.raises(ValueError, match="train_batch_size"):
        GAP(privacy="edge", epsilon=1.0, train_batch_size=0)
