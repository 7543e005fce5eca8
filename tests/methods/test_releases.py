"""The release object on its own: declared releases plan, draw once, checkpoint and restore
without drawing, and a new graph gets its own ledger and cached release."""

from __future__ import annotations

import pytest
import torch
from torch_geometric.data import Data

from lightning_dpgnn.methods.releases import (
    EDGES,
    FEATURES,
    TRAIN_LABELS,
    Draw,
    Release,
    Releases,
    UnaccountedRelease,
    graph_digest,
)
from lightning_dpgnn.privacy import PrivacyAccountant
from lightning_dpgnn.privacy.mechanism import run


class Noisy:
    """A toy mechanism: ``epsilon``-DP (as far as the ledger knows), adds noise to a number."""

    reads = (FEATURES,)

    def __init__(self, name, epsilon=1.0, level="ldp"):
        self.name, self.epsilon, self.level = name, epsilon, level

    def account(self, acc, count=1):
        acc.add_pure(self.name, self.epsilon, count=count)

    def sample(self, value, generator=None):
        return value + torch.randn(())


def counting_release(name="r", stage=0, guarantee=None, calls=None, level="ldp"):
    calls = [] if calls is None else calls

    def draw(d):
        calls.append((name, d.fit))
        return (yield d.mechanisms[0], d.graph.x.sum())

    mechanisms = lambda z: [Noisy(name, level=level)]  # noqa: E731
    return Release(name, mechanisms, draw, stage=stage, guarantee=guarantee), calls


def graph(n=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    return Data(x=torch.randn(n, 2, generator=g), edge_index=torch.tensor([[0, 1], [1, 0]]),
                num_nodes=n)


def draw_all(rel, g, accountants, stage=None):
    """What ``PrivateModule.draw_releases`` does with the release object (one process)."""
    drawn = []
    for r in rel.pending(stage):
        acc = accountants[r.guarantee]
        d = Releases.draw_of(r, g, acc, None, rel.outputs(), True, None)
        rel.store(r.name, run(r.draw(d), acc))
        drawn.append(r.name)
    return drawn


def test_a_release_is_planned_until_drawn_and_drawn_once():
    calls = []
    rel = Releases()
    rel.declare(counting_release("a", 0, calls=calls)[0], counting_release("b", 1, calls=calls)[0])
    plan = PrivacyAccountant("ldp")
    rel.plan(plan, None)
    assert plan.epsilon() == pytest.approx(2.0)
    acc = {None: PrivacyAccountant("ldp")}
    assert draw_all(rel, graph(), acc, stage=0) == ["a"]  # stage 1 waits for its stage
    assert draw_all(rel, graph(), acc) == ["b"]
    assert draw_all(rel, graph(), acc) == []  # never twice
    assert calls == [("a", True), ("b", True)] and acc[None].epsilon() == pytest.approx(2.0)
    empty = PrivacyAccountant("ldp")
    rel.plan(empty, None)
    assert empty.epsilon() == 0.0  # nothing left to plan


def test_restored_releases_are_never_drawn_and_foreign_ones_are_refused():
    rel = Releases()
    rel.declare(counting_release("a")[0])
    draw_all(rel, graph(), {None: PrivacyAccountant("ldp")})
    state = rel.state_dict()
    calls = []
    again = Releases()
    again.declare(counting_release("a", calls=calls)[0])
    again.load_state_dict(state)
    assert torch.equal(again.get("a"), rel.get("a"))
    assert draw_all(again, graph(), {None: PrivacyAccountant("ldp")}) == [] and calls == []
    with pytest.raises(KeyError, match="does not declare"):
        again.load_state_dict({"a": None, "other": torch.zeros(1)})


def test_each_release_records_on_its_own_guarantee():
    rel = Releases()
    rel.declare(counting_release("x", guarantee="features")[0],
                counting_release("e", level="edge")[0])
    acc = {None: PrivacyAccountant("edge"), "features": PrivacyAccountant("ldp")}
    draw_all(rel, graph(), acc)
    assert [e.name for e in acc[None].ledger] == ["e"]
    assert [e.name for e in acc["features"].ledger] == ["x"]
    planned = PrivacyAccountant("ldp")
    Releases.plan(rel, planned, None, guarantee="features")  # drawn: nothing pending
    assert planned.epsilon() == 0.0


def test_a_new_graph_is_released_once_and_composes_after_it_leaves_the_cache():
    calls = []
    rel = Releases(graphs_cached=1)
    rel.declare(counting_release("a", calls=calls)[0])
    new = lambda name: PrivacyAccountant("ldp")  # noqa: E731
    g = graph(seed=1)
    out1, ledgers = rel.on_graph(g, new)
    out2, _ = rel.on_graph(graph(seed=1), new)  # an equal graph: the same digest
    assert torch.equal(out1["a"], out2["a"]) and calls == [("a", False)]
    assert ledgers[None].epsilon() == pytest.approx(1.0)
    rel.on_graph(graph(seed=2), new)  # pushes the first graph out of the cache
    out3, ledgers = rel.on_graph(g, new)
    assert len(calls) == 3 and not torch.equal(out3["a"], out1["a"])
    assert ledgers[None].epsilon() == pytest.approx(2.0)  # composed, and said so
    given, _ = rel.on_graph(graph(seed=3), new, given={"a": torch.zeros(())})
    assert given["a"] == 0 and len(calls) == 3  # made elsewhere: not drawn here


def test_the_digest_sees_every_input_a_release_reads():
    g = graph()
    base = graph_digest(g)
    for change in (
        lambda h: setattr(h, "x", h.x + 1),
        lambda h: setattr(h, "edge_index", h.edge_index.flip(0)[:, :1]),
        lambda h: setattr(h, "y", torch.zeros(4, dtype=torch.long)),
        lambda h: setattr(h, "train_mask", torch.ones(4, dtype=torch.bool)),
    ):
        h = graph()
        change(h)
        assert graph_digest(h) != base


def test_the_digest_cannot_be_dodged_by_rewriting_the_same_graph():
    """Shuffled edges, sparse or dense features, another dtype: the same graph, so the same
    cached release (a fresh one for each rewrite would let repeated calls average the noise)."""
    g = graph(6, seed=4)
    g.edge_index = torch.tensor([[0, 1, 2, 3], [1, 2, 3, 4]])
    g.y = torch.arange(6) % 2
    base = graph_digest(g)
    for rewrite in (
        lambda h: setattr(h, "edge_index", h.edge_index[:, [3, 1, 0, 2]]),
        lambda h: setattr(h, "x", h.x.to_sparse_coo()),
        lambda h: setattr(h, "x", h.x.to_sparse_csr()),
        lambda h: setattr(h, "x", h.x.double()),
        lambda h: setattr(h, "y", h.y.int()),
    ):
        h = g.clone()
        rewrite(h)
        assert graph_digest(h) == base


@pytest.mark.parametrize("recorded", [0.0, 0.5, 2.0])
def test_a_draw_that_records_other_than_its_plan_fails_loudly(recorded):
    """A release whose draw forgets its spend (or records less or more than planned) is
    refused before its output is used: its epsilon would be wrong (issue 37)."""

    def draw(d):  # yields another mechanism than planned, or none: reads x in the clear
        if recorded:
            return (yield Noisy("r", recorded), d.graph.x.sum())
        return d.graph.x.sum()
        yield

    rel = Releases()
    rel.declare(Release("r", lambda z: [Noisy("r")], draw))
    acc = PrivacyAccountant("ldp")
    before = acc.copy()
    run(draw(Draw(graph(), acc, None, {}, True)), acc)
    with pytest.raises(UnaccountedRelease, match="recorded (nothing|less|more)"):
        Releases.check_spend(rel.declared["r"], before, acc, None)
    with pytest.raises(UnaccountedRelease):  # the same check guards every new graph's draw
        rel.on_graph(graph(seed=7), lambda g: PrivacyAccountant("ldp"))


def test_a_draw_that_records_its_plan_passes_the_check():
    rel = Releases()
    rel.declare(counting_release("a")[0])
    out, ledgers = rel.on_graph(graph(seed=8), lambda g: PrivacyAccountant("ldp"))
    assert ledgers[None].epsilon() == pytest.approx(1.0) and "a" in out


def test_the_new_graph_key_covers_exactly_what_the_releases_read():
    g = graph()
    g.y, g.train_mask = torch.tensor([0, 1, 0, 1]), torch.tensor([True, True, False, False])
    base = graph_digest(g, (EDGES, FEATURES, TRAIN_LABELS))
    h = g.clone()
    h.y = torch.tensor([0, 1, 1, 0])  # labels outside the training mask: never read
    assert graph_digest(h, (EDGES, FEATURES, TRAIN_LABELS)) == base
    assert graph_digest(h) != graph_digest(g)  # every label: read
    h.y = torch.tensor([1, 1, 0, 1])  # a training label
    assert graph_digest(h, (EDGES, FEATURES, TRAIN_LABELS)) != base
    h = g.clone()
    h.x = h.x + 1  # features are not read by an edge-only release
    assert graph_digest(h, (EDGES,)) == graph_digest(g, (EDGES,))
    with pytest.raises(ValueError, match="reads must name"):
        Release("bad", lambda a, z: None, lambda d: 0, reads=("degrees",))


def test_which_edges_are_private_is_part_of_what_an_edge_release_reads():
    """HeteroRR's edge release reads which edges are private: another partition is another
    release, while the same partition written in another edge order is the same graph."""
    g = graph(6)
    g.edge_index = torch.tensor([[0, 1, 2, 3], [1, 2, 3, 4]])
    g.private_edge_mask = torch.tensor([True, False, True, False])
    base = graph_digest(g, (EDGES,))
    h = g.clone()
    h.private_edge_mask = torch.tensor([False, True, True, False])
    assert graph_digest(h, (EDGES,)) != base
    h = g.clone()
    order = torch.tensor([2, 0, 3, 1])
    h.edge_index, h.private_edge_mask = g.edge_index[:, order], g.private_edge_mask[order]
    assert graph_digest(h, (EDGES,)) == base
