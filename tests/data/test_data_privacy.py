"""Design invariant 1: preprocessing reads no private data outside a privacy mechanism.

Identity-keyed splits, ``NodeDataModule.private_reads``, public metadata (``classes``,
``feature_bounds``) instead of data-derived values, and the recipes that use them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.io
import torch
import yaml
from torch_geometric.data import Data
from torch_geometric.transforms import Compose

from lightning_dpgnn.data import (
    PRIVACY_LEVELS,
    BoundDegree,
    FilterClassByCount,
    GraphDataModule,
    KeepClasses,
    NodeDataModule,
    NodeSplit,
    ScaleFeatures,
    keyed_uniform,
    load_dataset,
    make_csbm,
)

REPO = Path(__file__).resolve().parents[2]
MASKS = ("train_mask", "val_mask", "test_mask")


def _roles(data: Data) -> torch.Tensor:
    """0/1/2 for train/val/test, -1 for nodes in no mask."""
    role = torch.full((data.num_nodes,), -1)
    for i, key in enumerate(MASKS):
        role[data[key]] = i
    return role


def _without(data: Data, v: int) -> Data:
    keep = torch.ones(data.num_nodes, dtype=torch.bool)
    keep[v] = False
    return data.subgraph(keep)


# ------------------------------------------------------------------ keyed hash
def _splitmix64_reference(seed: int, i: int) -> float:
    mask = (1 << 64) - 1

    def mix(z: int) -> int:
        z = (z + 0x9E3779B97F4A7C15) & mask
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        return z ^ (z >> 31)

    return (mix(i ^ mix(seed & mask)) >> 11) / 2**53


def test_keyed_uniform_is_unsigned_splitmix64() -> None:
    """The int64 torch arithmetic equals the unsigned 64-bit reference (platform independent)."""
    ids = torch.tensor([0, 1, 2, 7, 12345, 2**31 + 3, 2**40, 2**62 + 11])
    for seed in (0, 1, 42, -3, 2**63 + 5):
        u = keyed_uniform(seed, ids)
        assert u.dtype == torch.float64
        assert u.tolist() == [_splitmix64_reference(seed, int(i)) for i in ids]
    u = keyed_uniform(0, torch.arange(100_000))
    assert float(u.min()) >= 0.0 and float(u.max()) < 1.0
    assert abs(float(u.mean()) - 0.5) < 0.01


# ------------------------------------------------------------------ identity-keyed split
def test_identity_split_survives_node_removal_attack() -> None:
    """Removing one node (and its edges) leaves every other node's role unchanged."""
    data = make_csbm(num_nodes=1000, seed=3)
    data.node_id = torch.arange(data.num_nodes)
    split = NodeSplit(0.75, 0.10, 0.15, seed=7)
    before = _roles(split(data.clone()))
    for v in (0, 123, 999):
        smaller = _without(data, v)
        assert smaller.num_nodes == 999 and torch.equal(
            smaller.node_id, torch.cat([torch.arange(v), torch.arange(v + 1, 1000)])
        )
        after = _roles(split(smaller))
        assert torch.equal(after, before[smaller.node_id])
    # the positional split, by contrast, re-assigns many roles
    pos = NodeSplit(0.75, 0.10, 0.15, seed=7, by="position")
    before_pos = _roles(pos(data.clone()))
    smaller = _without(data, 0)
    changed = (_roles(pos(smaller)) != before_pos[smaller.node_id]).float().mean()
    assert float(changed) > 0.1


def test_identity_split_through_the_data_module() -> None:
    """The whole node-level-safe pipeline: other nodes keep role, features and label."""
    data = make_csbm(num_nodes=600, num_classes=4, seed=5)
    data.x = data.x.sigmoid()
    data.node_id = torch.arange(600)  # raw identity, carried through the attacker's subgraph
    opts = dict(split="gap", seed=11, classes=[0, 2, 3], feature_bounds=(0.0, 1.0))
    full = NodeDataModule.from_data(data, **opts)
    assert full.private_reads("node") == []
    v = 42
    part = NodeDataModule.from_data(_without(data, v), **opts)
    a, b = full.data, part.data
    keep = torch.arange(600) != v
    assert torch.equal(b.node_id, a.node_id[keep])
    assert torch.equal(_roles(b), _roles(a)[keep])
    assert torch.equal(b.y, a.y[keep]) and torch.equal(b.x, a.x[keep])


def test_identity_split_fractions_on_10k_nodes() -> None:
    data = Data(num_nodes=10_000, y=torch.zeros(10_000, dtype=torch.long))
    for fractions in ((0.75, 0.10, 0.15), (0.5, 0.25, 0.25)):
        out = NodeSplit(*fractions, seed=0)(data.clone())
        got = [int(out[k].sum()) / 10_000 for k in MASKS]
        assert sum(got) == pytest.approx(1.0)
        for g, f in zip(got, fractions, strict=True):
            assert abs(g - f) < 0.02, (got, fractions)


def test_split_keys_on_node_id_not_position() -> None:
    data = make_csbm(num_nodes=300, seed=1)
    data.node_id = torch.arange(300) + 1000  # e.g. the graph is a slice of a larger raw one
    out = NodeSplit(seed=0)(data.clone())
    u = keyed_uniform(0, data.node_id)
    assert torch.equal(out.train_mask, u < 0.75)
    shuffled = torch.randperm(300, generator=torch.Generator().manual_seed(0))
    perm = data.subgraph(shuffled)  # same nodes, other positions
    assert torch.equal(_roles(NodeSplit(seed=0)(perm)), _roles(out)[shuffled])


# ------------------------------------------------------------------ private_reads
def test_private_reads_per_level() -> None:
    strict = NodeDataModule()  # defaults: no isolated removal, identity split, no filter
    for level in PRIVACY_LEVELS:
        assert strict.private_reads(level) == []
    dm = NodeDataModule(
        remove_isolated=True,
        subsample_in_degree=10,
        min_class_size=5,
        feature_range=(0.0, 1.0),
        split_by="position",
    )
    assert dm.private_reads("none") == []
    edge = " ".join(dm.private_reads("edge"))
    assert len(dm.private_reads("edge")) == 2
    assert "remove_isolated=True" in edge and "subsample_in_degree=10" in edge and "edges" in edge
    node = dm.private_reads("node")
    text = " ".join(node)
    assert len(node) == 5
    for option in ("remove_isolated", "subsample_in_degree", "min_class_size", "feature_range"):
        assert option in text
    assert "split_by='position'" in text and "classes=[...]" in text
    assert "feature_bounds" in text
    ldp = " ".join(dm.private_reads("LDP"))
    assert len(dm.private_reads("ldp")) == 2
    assert "min_class_size" in ldp and "feature_range" in ldp
    assert "remove_isolated" not in ldp and "subsample_in_degree" not in ldp  # structure is public
    with pytest.warns(DeprecationWarning, match="renamed subsample_in_degree"):
        old = NodeDataModule(max_degree=10)
    assert old.subsample_in_degree == 10 and "max_degree" not in old.hparams
    with pytest.raises(ValueError, match="privacy level"):
        dm.private_reads("user")


def test_private_reads_public_metadata_and_defaults() -> None:
    declared = NodeDataModule(classes=[0, 1], feature_range=(0.0, 1.0), feature_bounds=(0, 1))
    assert declared.private_reads("node") == [] and declared.private_reads("ldp") == []
    # a dataset's default class filter counts (Facebook100: 1% of labeled nodes)
    fb = NodeDataModule("facebook100/Caltech36")
    reads = fb.private_reads("node")
    assert len(reads) == 2 and "min_class_size=0.01 (the dataset's default)" in reads[0]
    assert "vocabulary='data'" in reads[1]  # one-hot columns of the values present
    assert fb.private_reads("edge") == []
    public = dict(min_class_size=0, dataset_kwargs={"vocabulary": "public"})
    assert NodeDataModule("facebook100/Caltech36", **public).private_reads("node") == []
    # the merged graph has no public code book: flagged whatever its arguments say
    merged = NodeDataModule("facebook100/all", **public)
    assert [r for r in merged.private_reads("ldp") if "no public code book" in r]
    assert merged.private_reads("edge") == []
    # the public split is not a read; a positional split is one only at node level
    assert NodeDataModule("cora", split="public", split_by="position").private_reads("node") == []
    assert NodeDataModule(split_by="position").private_reads("edge") == []
    # from_data behaves the same
    data = make_csbm(num_nodes=100, seed=0)
    wrapped = NodeDataModule.from_data(data, remove_isolated=True, min_class_size=3)
    assert len(wrapped.private_reads("node")) == 2 and len(wrapped.private_reads("edge")) == 1


def test_private_reads_of_known_transforms() -> None:
    steps = [BoundDegree(3), FilterClassByCount(2), ScaleFeatures(), KeepClasses([0])]
    dm = NodeDataModule(transform=Compose(steps))
    assert len(dm.private_reads("edge")) == 1 and "BoundDegree" in dm.private_reads("edge")[0]
    assert len(dm.private_reads("node")) == 3
    assert len(dm.private_reads("ldp")) == 2
    safe = NodeDataModule(transform=Compose([ScaleFeatures(bounds=(0, 1)), KeepClasses([0])]))
    assert safe.private_reads("node") == []


# ------------------------------------------------------------------ classes=
def test_declared_classes_make_other_nodes_unlabeled() -> None:
    data = make_csbm(num_nodes=500, num_classes=5, seed=2)
    dm = NodeDataModule.from_data(data, classes=[3, 1])
    out = dm.data
    assert dm.num_classes == 2 and dm.public_num_classes == 2
    assert out.num_nodes == 500 and out.num_edges == data.num_edges  # nobody deleted
    assert torch.equal(out.y[data.y == 3], torch.zeros(100, dtype=torch.long))
    assert torch.equal(out.y[data.y == 1], torch.ones(100, dtype=torch.long))
    other = (data.y != 3) & (data.y != 1)
    assert bool((out.y[other] == -1).all())
    in_mask = out.train_mask | out.val_mask | out.test_mask
    assert torch.equal(in_mask, ~other)  # unlabeled nodes are in no mask
    assert out.label_values.tolist() == [3, 1]
    assert dm.dataset_info()["classes"] == [3, 1]
    assert NodeDataModule("cora").public_num_classes is None  # only the labels could tell
    with pytest.raises(ValueError, match="not both"):
        NodeDataModule(classes=[0, 1], min_class_size=10)
    with pytest.raises(ValueError, match="distinct"):
        NodeDataModule(classes=[0, 0])
    NodeDataModule(classes=[0, 1], min_class_size=0)  # explicit 0 is fine


def test_keep_classes_uses_label_values() -> None:
    y = torch.tensor([0, 1, 2, -1, 2, 1])
    data = Data(
        x=torch.zeros(6, 1),
        edge_index=torch.zeros(2, 0, dtype=torch.long),
        y=y,
        label_values=torch.tensor([1999, 2008, 2009]),
    )
    out = KeepClasses([2009, 2008])(data)
    assert out.y.tolist() == [-1, 1, 0, -1, 0, 1]
    assert out.label_values.tolist() == [2009, 2008]
    # FilterClassByCount keeps label_values in sync with the remapped labels
    filtered = FilterClassByCount(2)(data)
    assert filtered.y.tolist() == [0, 1, 1, 0] and filtered.label_values.tolist() == [2008, 2009]


def test_declared_classes_with_a_public_split(data_root: Path) -> None:
    dm = NodeDataModule("cora", root=str(data_root), split="public", classes=[0, 1, 2])
    data = dm.data
    assert data.num_nodes == 2708 and dm.num_classes == 3
    for key in MASKS:
        assert bool((data.y[data[key]] >= 0).all())  # undeclared classes left the masks
    raw = load_dataset("cora", root=data_root)
    assert torch.equal(data.train_mask, raw.train_mask & (raw.y <= 2))


def test_facebook100_identity_and_declared_years(data_root: Path) -> None:
    mat = scipy.io.loadmat(str(data_root / "facebook100" / "Caltech36.mat"))
    year = mat["local_info"].astype(np.int64)[:, 5]
    keep = year != 0
    raw = load_dataset("facebook100/Caltech36", root=data_root)
    assert np.array_equal(raw.node_id.numpy(), np.flatnonzero(keep))  # raw .mat rows
    assert np.array_equal(raw.label_values[raw.y].numpy(), year[keep])
    years = [2006, 2007, 2008, 2009]
    dm = NodeDataModule(
        "facebook100/Caltech36", root=str(data_root), classes=years,
        dataset_kwargs={"vocabulary": "public"},
    )
    data = dm.data
    assert dm.private_reads("node") == [] and dm.num_classes == 4
    assert data.num_nodes == raw.num_nodes
    labeled = data.y >= 0
    assert np.array_equal(np.asarray(years)[data.y[labeled].numpy()], year[keep][labeled.numpy()])
    assert not bool(np.isin(year[keep][~labeled.numpy()], years).any())


# ------------------------------------------------------------------ feature_bounds
def test_feature_bounds_read_no_statistic() -> None:
    g = torch.Generator().manual_seed(0)
    x = torch.rand(50, 4, generator=g) * 0.5 + 0.25
    x[7] = torch.tensor([-3.0, 2.0, 0.0, 1.0])  # node 7 holds every column's extreme
    data = Data(x=x, edge_index=torch.zeros(2, 0, dtype=torch.long))
    keep = torch.arange(50) != 7
    smaller = data.subgraph(keep)
    bounded = ScaleFeatures(-1.0, 1.0, bounds=(0.0, 1.0))
    a, b = bounded(data.clone()), bounded(smaller.clone())
    assert torch.equal(a.x[keep], b.x)  # identical rows for every other node
    assert torch.allclose(a.x[keep], x[keep] * 2 - 1)  # linear from [0, 1] to [-1, 1]
    assert a.x[7].tolist() == [-1.0, 1.0, -1.0, 1.0]  # clamped to the bounds
    # data-derived min-max, by contrast, changes the other rows
    minmax = ScaleFeatures(-1.0, 1.0)
    assert not torch.allclose(minmax(data.clone()).x[keep], minmax(smaller.clone()).x)
    with pytest.raises(ValueError, match="bounds"):
        ScaleFeatures(bounds=(1.0, 1.0))


def test_feature_bounds_in_the_data_module() -> None:
    data = make_csbm(num_nodes=200, seed=0)
    clamp = NodeDataModule.from_data(data, feature_bounds=(-1.0, 1.0)).data.x
    assert torch.equal(clamp, data.x.clamp(-1.0, 1.0))  # no feature_range: clamp only
    scaled = NodeDataModule.from_data(data, feature_bounds=(-1, 1), feature_range=(0, 1)).data.x
    assert torch.allclose(scaled, (data.x.clamp(-1.0, 1.0) + 1) / 2)
    with pytest.raises(ValueError, match="bounds"):
        NodeDataModule(feature_bounds=(2.0, 1.0))


# ------------------------------------------------------------------ recipes
def _recipe_level(model: dict) -> str:
    cls = model["class_path"].rsplit(".", 1)[-1]
    if cls in ("LPGNN", "PGC", "PGCLinkPrediction"):
        return "ldp"
    if cls in ("DPMLP", "DPGNN"):
        return "node"
    if cls in ("MLP", "SAGE"):
        return "none"
    if cls == "GWLDP":  # its mode: "ldp" (the default), "none" or the paper-code reference
        return "none" if model["init_args"].get("mode") == "none" else "ldp"
    return model["init_args"].get("privacy", "edge")


@pytest.mark.parametrize("path", sorted((REPO / "zoo" / "recipes").glob("*.yaml")), ids=str)
def test_recipes_read_nothing_private(path: Path) -> None:
    cfg = yaml.safe_load(path.read_text())
    assert "noise_seed" not in str(cfg)
    level = _recipe_level(cfg["model"])
    args = dict(cfg["data"]["init_args"])
    module = {"lightning_dpgnn.data.NodeDataModule": NodeDataModule,
              "lightning_dpgnn.data.GraphDataModule": GraphDataModule}[cfg["data"]["class_path"]]
    dm = module(**args)  # nothing is loaded: private_reads needs no data
    assert dm.private_reads(level) == [], (path.name, level)
    if level in ("edge", "node"):
        assert args.get("remove_isolated") is False
    if level in ("node", "ldp") and args["name"].startswith("facebook100/"):
        assert args["classes"] == [2005, 2006, 2007, 2008, 2009]
    if level == "ldp" and module is NodeDataModule:
        assert args["feature_bounds"] == [0.0, 1.0]


def test_facebook100_public_vocabulary_fixes_the_feature_layout(data_root: Path) -> None:
    """Removing a node must not change anyone else's feature row: with the data vocabulary a
    node holding the only occurrence of a major removes a column; the public code book never
    does. Also, the papers' five columns are the default (no high school)."""
    from lightning_dpgnn.data.readers import FACEBOOK100_CODEBOOK, read_facebook100

    path = data_root / "facebook100" / "Caltech36.mat"
    public = read_facebook100(path, "year", vocabulary="public")
    assert public.num_features == sum(FACEBOOK100_CODEBOOK.values()) - len(FACEBOOK100_CODEBOOK)
    data = read_facebook100(path, "year")
    assert data.num_features < public.num_features  # values present only
    assert torch.equal(public.x.sum(1), data.x.sum(1))  # the same codes, one-hot
    with_hs = read_facebook100(path, "year", features=(*FACEBOOK100_CODEBOOK, "high_school"))
    assert with_hs.num_features > data.num_features
    with pytest.raises(ValueError, match="public code book"):
        read_facebook100(path, "year", features=("high_school",), vocabulary="public")
