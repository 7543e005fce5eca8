"""The GAP paper's baselines: SAGE (SAGE-inf), EdgeRand (SAGE-EDP) and DPGNN (SAGE-NDP)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from opacus.accountants import RDPAccountant
from opacus.accountants.analysis.rdp import compute_rdp
from torch_geometric.data import Data
from torch_geometric.nn import SAGEConv

from lightning_dpgnn import DPGNN, SAGE, EdgeRand
from lightning_dpgnn.data import NodeDataModule
from lightning_dpgnn.nn.backbone import _conv
from lightning_dpgnn.privacy import DegreeBoundError, PrivacyAccountant
from lightning_dpgnn.privacy.accountant import graph_sgm_rdp
from lightning_dpgnn.privacy.aggregation import normalize_rows, sum_aggregate

D_CSBM = 21  # largest in- and out-degree of the embedded csbm graph


def fit(model, dm, make_trainer, **kw):
    trainer = make_trainer(**kw)
    trainer.fit(model, dm)
    return trainer


# -- SAGE ---------------------------------------------------------------------------------------
def test_sum_aggregation_fast_path_equals_pygs_sage_layer():
    torch.manual_seed(0)
    conv = SAGEConv(32, 8, aggr="sum")
    x = torch.randn(50, 32)
    edge_index = torch.randint(0, 50, (2, 300))
    edge_index = edge_index[:, edge_index[0] != edge_index[1]].unique(dim=1)
    from torch_geometric.utils import to_torch_csr_tensor

    adj = to_torch_csr_tensor(edge_index.flip(0), size=(50, 50))
    assert torch.allclose(_conv(conv, x, adj), conv(x, edge_index), atol=1e-5)
    # the sum is not the mean: a node with several neighbours gets their total
    mean = SAGEConv(32, 8, aggr="mean")
    mean.load_state_dict(conv.state_dict())
    assert not torch.allclose(mean(x, edge_index), conv(x, edge_index), atol=1e-3)


def test_sage_learns_the_graph_and_is_reported_non_private(csbm_dm, make_trainer):
    model = SAGE(epochs=15, seed=0)
    trainer = fit(model, csbm_dm, make_trainer)
    acc = trainer.test(model, csbm_dm, verbose=False)[0]["test/acc"]
    assert acc > 0.85
    assert math.isinf(model.privacy_spent().epsilon) and model.privacy_spent().ledger == ()
    assert model.net.body.convs[0].aggr == "sum" and model.net.jk.kind == "cat"


# -- EdgeRand -------------------------------------------------------------------------------------
def test_edgerand_randomizes_once_and_reads_only_the_randomized_graph(csbm_dm, make_trainer):
    model = EdgeRand(epsilon=2.0, epochs=5)
    trainer = fit(model, csbm_dm, make_trainer)
    report = model.privacy_spent()
    assert report.epsilon == pytest.approx(2.0) and report.count("arr/link") == 1
    assert report.count("arr/density") == 1
    noisy = model.releases["edges"]
    assert not torch.equal(noisy, csbm_dm.data.edge_index)
    before = trainer.predict(model, csbm_dm)[0]
    # test/predict never re-run the mechanism and never read the true edges again
    csbm_dm.data.edge_index = csbm_dm.data.edge_index[:, :10]
    after = trainer.predict(model, csbm_dm)[0]
    assert torch.equal(before, after)
    trainer.test(model, csbm_dm, verbose=False)
    assert model.privacy_spent().count("arr/link") == 1 and model.releases["edges"] is noisy


def test_edgerand_at_a_large_epsilon_keeps_most_of_the_graph_signal(csbm_dm, make_trainer):
    model = EdgeRand(epsilon=16.0, epochs=15, seed=0)
    trainer = fit(model, csbm_dm, make_trainer)
    assert trainer.test(model, csbm_dm, verbose=False)[0]["test/acc"] > 0.8


def test_edgerand_predicts_inductively_with_fresh_noise(csbm_dm, make_trainer):
    model = EdgeRand(epsilon=2.0, epochs=2)
    fit(model, csbm_dm, make_trainer)
    graph = NodeDataModule("csbm", dataset_kwargs={"seed": 1}).data  # another graph
    graph.inductive = True
    probs = model.predict_step(graph, 0)
    assert probs.shape == (graph.num_nodes, model.hparams.num_classes)
    assert model.last_inference_report.epsilon == pytest.approx(2.0)
    assert model.privacy_spent().count("arr/link") == 1  # the training ledger is untouched


# -- DPGNN ----------------------------------------------------------------------------------------
def test_graph_dpsgd_accounting_is_opacus_at_full_batch_and_never_below_it():
    """Full batch (q = 1): one node moves at most D + 1 clipped terms by 2C each, a Gaussian
    mechanism of sensitivity 2(D+1)C: exactly opacus' accountant at noise z / (2(D+1)).
    Poisson batches: never cheaper than opacus' DP-SGD for a single changed term (2C)."""
    z, D, steps, delta = 40.0, 5, 30, 1e-5
    g = D + 1
    acc = PrivacyAccountant("node", delta)
    acc.add_subsampled_gaussian("sage/dpsgd", z, 1.0, steps=steps, group_size=g)
    theirs = RDPAccountant()
    theirs.history = [(z / (2 * g), 1.0, steps)]
    ref = theirs.get_epsilon(delta)
    assert acc.epsilon() <= ref + 1e-9
    assert acc.epsilon() == pytest.approx(ref, rel=1e-3)
    orders = [1.5, 2.0, 4.0, 16.0, 64.0]
    for q in (0.01, 0.1, 0.5):
        ours = np.array([graph_sgm_rdp(z / 10, q, g, a) for a in orders])
        single = compute_rdp(q=q, noise_multiplier=z / 20, steps=1, orders=orders)
        assert (ours >= single - 1e-12).all()
        # and a bigger group costs more
        assert (np.array([graph_sgm_rdp(z / 10, q, g + 5, a) for a in orders]) > ours).all()


def test_removing_one_node_changes_at_most_d_plus_one_training_rows():
    """The group size the ledger assumes: on a graph within the degree promise, removing node v
    changes v's own row and the aggregates of the nodes v points to, nothing else."""
    gen = torch.Generator().manual_seed(0)
    n, D = 60, 4
    perms = [torch.randperm(n, generator=gen) for _ in range(D)]
    src = torch.cat([torch.arange(n)] * D)
    dst = torch.cat(perms)
    keep = src != dst
    edge_index = torch.stack([src[keep], dst[keep]]).unique(dim=1)
    x = torch.randn(n, 8, generator=gen)

    def rows(x, e, num):
        return DPGNN._rows(x, sum_aggregate(normalize_rows(x), e, num))

    full = rows(x, edge_index, n)
    for v in range(0, n, 7):
        mask = torch.ones(n, dtype=torch.bool)
        mask[v] = False
        sub = Data(x=x, edge_index=edge_index, num_nodes=n).subgraph(mask)
        other = rows(sub.x, sub.edge_index, n - 1)
        changed = (full[mask] - other).abs().amax(dim=1) > 1e-6
        assert int(changed.sum()) + 1 <= D + 1


def test_dpgnn_ledger_is_its_steps_plus_one_inference_aggregation(csbm_dm, make_trainer):
    model = DPGNN(epsilon=16.0, max_degree=D_CSBM, epochs=2, batch_size=400)
    trainer = fit(model, csbm_dm, make_trainer)
    report = model.privacy_spent()
    assert 16.0 * 0.99 <= report.epsilon <= 16.0
    entry = next(e for e in report.ledger if e.name == "sage/dpsgd")
    assert entry.kind == "graph_subsampled_gaussian" and entry.group_size == D_CSBM + 1
    assert entry.count == model.phase.total_steps
    assert report.count("aggregation") == 1
    # the same ledger rebuilt from the steps (the plan the calibration solved)
    acc = PrivacyAccountant("node", report.delta)
    z = model.noise_multiplier
    acc.add_subsampled_gaussian("s", z, model.phase.sample_rate, steps=model.phase.total_steps,
                                group_size=D_CSBM + 1)
    acc.add_gaussian("a", z, sensitivity=math.sqrt(D_CSBM))
    assert acc.epsilon() == pytest.approx(report.epsilon, rel=1e-9)
    # test and predict read the cached aggregate: no further spend
    trainer.test(model, csbm_dm, verbose=False)
    trainer.predict(model, csbm_dm)
    assert model.privacy_spent().count("aggregation") == 1


def test_dpgnn_learns_with_little_noise_and_refuses_graphs_above_the_promise(make_trainer):
    dm = NodeDataModule("csbm", seed=0)
    model = DPGNN(epsilon=None, noise_multiplier=0.01, max_degree=D_CSBM, epochs=2,
                  batch_size=128, seed=0)
    trainer = fit(model, dm, make_trainer, max_epochs=2)
    assert trainer.test(model, dm, verbose=False)[0]["test/acc"] > 0.7
    with pytest.raises(DegreeBoundError):
        fit(DPGNN(epsilon=8.0, max_degree=5), NodeDataModule("csbm", seed=0), make_trainer)
    with pytest.raises(ValueError, match="BatchNorm"):
        DPGNN(normalization="batch")
