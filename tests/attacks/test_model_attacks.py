"""Membership inference and link stealing against fitted models: the attacks find what a
model leaks (an overfit MLP's members; a GNN's edges) and find nothing where nothing is there
(nodes the model never saw; edges an MLP never read)."""

import warnings

import pytest
import torch

from lightning_dpgnn.attacks import (
    influence_attack,
    link_stealing,
    node_membership_inference,
    posterior_similarity_attack,
)
from lightning_dpgnn.attacks.link_stealing import sample_pairs
from lightning_dpgnn.attacks.membership import balanced_membership, sorted_posteriors
from lightning_dpgnn.attacks.shadow import _trainer
from lightning_dpgnn.data import NodeDataModule
from lightning_dpgnn.methods import GNN, MLP

warnings.filterwarnings("ignore", ".*does not have many workers.*")


def small_graph(homophily: float = 0.8) -> NodeDataModule:
    """A small csbm graph whose noisy, wide features an MLP can memorise."""
    return NodeDataModule(
        "csbm", split=(0.4, 0.2, 0.4), seed=0,
        dataset_kwargs=dict(num_nodes=400, feature_signal=0.3, num_features=256,
                            homophily=homophily),
    )  # fmt: skip


@pytest.fixture(scope="module")
def overfit_mlp():
    """A deliberately overfit non-private MLP (wide, no regularisation) and its graph."""
    dm = small_graph()
    model = MLP(privacy="none", hidden=128, epochs=30, lr=0.05, seed=0)
    _trainer().fit(model, dm)
    return model, dm.data


def test_membership_inference_finds_the_members_of_an_overfit_model(overfit_mlp):
    model, data = overfit_mlp
    result = node_membership_inference(model, data, repeats=2)
    assert len(result.aucs) == 2
    assert result.mean > 0.65, str(result)
    assert "AUC" in str(result)


def test_membership_inference_is_chance_on_nodes_the_model_never_saw(overfit_mlp):
    model, data = overfit_mlp
    test = data.test_mask.nonzero().view(-1)
    unseen_members = torch.zeros_like(data.test_mask)
    unseen_members[test[::2]] = True  # "members" the model never trained on
    result = node_membership_inference(
        model, data, repeats=1, members=unseen_members, nonmembers=data.test_mask & ~unseen_members
    )
    assert abs(result.mean - 0.5) < 0.08, str(result)


def test_link_stealing_finds_a_gnns_edges_but_not_an_mlps():
    """With weakly informative features and moderate homophily, an MLP's posteriors carry
    nothing about edges; a GNN's aggregation makes neighbours' posteriors alike."""
    dm = small_graph(homophily=0.5)
    torch.manual_seed(0)
    gnn, mlp = GNN(hidden=32, dropout=0.0, weight_decay=0.0), MLP(privacy="none", epochs=10)
    _trainer(max_epochs=30).fit(gnn, dm)
    _trainer().fit(mlp, dm)
    on_gnn = link_stealing(gnn, dm.data, repeats=3, pairs=500)
    on_mlp = link_stealing(mlp, dm.data, repeats=3, pairs=500)
    assert on_gnn.mean > 0.58, str(on_gnn)
    assert abs(on_mlp.mean - 0.5) < 0.04, str(on_mlp)
    # the influence attack on the same models, querying with chosen features
    data = dm.data
    gen = torch.Generator().manual_seed(0)

    def query_gnn(x):
        return gnn(x, data.edge_index)

    def query_mlp(x):
        return mlp(x)

    assert influence_attack(query_gnn, data.x, data.edge_index, pairs=50, generator=gen) > 0.9
    assert influence_attack(query_mlp, data.x, data.edge_index, pairs=50, generator=gen) == 0.5


def test_pairs_are_edges_and_non_edges_and_inputs_are_checked():
    g = torch.Generator().manual_seed(0)
    ei = torch.tensor([[0, 1, 1, 2, 3], [1, 0, 2, 1, 4]])
    pairs, labels = sample_pairs(ei, 6, 10, g)
    edges = {(0, 1), (1, 2), (3, 4)}
    for (u, v), y in zip(pairs.t().tolist(), labels.tolist(), strict=True):
        assert u < v and ((u, v) in edges) == bool(y)
    assert int(labels.sum()) == 3 and len(labels) == 6
    with pytest.raises(ValueError, match="metric"):
        posterior_similarity_attack(torch.rand(6, 2), ei, metric="nope")
    with pytest.raises(ValueError, match="member and a non-member"):
        balanced_membership(torch.ones(4, dtype=torch.bool), torch.ones(4, dtype=torch.bool))
    with pytest.raises(ValueError, match="classes"):
        sorted_posteriors(torch.rand(3))
    probs = torch.tensor([[0.1, 0.7, 0.2]])
    assert sorted_posteriors(probs)[0].tolist() == pytest.approx([0.7, 0.2, 0.1])
