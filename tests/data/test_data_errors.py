"""Bad inputs give dedicated, explicit errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch_geometric.data import Data

from lightning_dpgnn.data import (
    DatasetKindError,
    GraphDataModule,
    InvalidFeaturesError,
    InvalidSplitError,
    NodeDataModule,
    RawFilesNotFoundError,
    ScaleFeatures,
    UnknownDatasetError,
    UnknownTargetError,
    load_dataset,
    load_graph_dataset,
    parse_split,
    register_dataset,
)


def test_unknown_dataset_lists_known_names() -> None:
    with pytest.raises(UnknownDatasetError) as err:
        NodeDataModule("coraa")
    msg = str(err.value)
    assert "unknown dataset 'coraa'" in msg
    for name in ("csbm", "cora", "citeseer", "pubmed", "musae-facebook", "musae-twitch-en"):
        assert name in msg
    for name in ("reddit", "amazon", "lastfm", "mutag", "proteins", "facebook100/<School>"):
        assert name in msg
    assert isinstance(err.value, ValueError)


@pytest.mark.parametrize("typed,meant", [
    ("Rutgers89", "facebook100/Rutgers89"), ("rutgers89", "facebook100/Rutgers89"),
    ("coraa", "cora"), ("musae-facebok", "musae-facebook"),
])
def test_a_misspelt_dataset_says_what_it_probably_meant(typed: str, meant: str) -> None:
    with pytest.raises(UnknownDatasetError, match=f"Did you mean '{meant}'\\?"):
        NodeDataModule(typed)


def test_ambiguous_facebook_name_gets_a_hint() -> None:
    with pytest.raises(UnknownDatasetError, match="ambiguous") as err:
        load_dataset("facebook")
    assert "musae-facebook" in str(err.value) and "facebook100/<School>" in str(err.value)


def test_wrong_kind() -> None:
    with pytest.raises(DatasetKindError, match="GraphDataModule"):
        NodeDataModule("mutag")
    with pytest.raises(DatasetKindError, match="NodeDataModule"):
        GraphDataModule("cora")
    with pytest.raises(DatasetKindError, match="load_graph_dataset"):
        load_dataset("proteins")
    with pytest.raises(DatasetKindError, match="load_dataset"):
        load_graph_dataset("cora")


def test_missing_raw_files_names_paths_and_source(tmp_path: Path) -> None:
    root = tmp_path / "empty-root"
    root.mkdir()
    with pytest.raises(RawFilesNotFoundError) as err:
        load_dataset("cora", root=root, cache_dir=tmp_path / "cache")
    msg = str(err.value)
    assert isinstance(err.value, FileNotFoundError)
    assert str(root / "planetoid" / "Cora" / "raw" / "ind.cora.x") in msg
    assert str(tmp_path / "cache" / "datasets" / "planetoid" / "Cora" / "raw") in msg
    assert "https://github.com/kimiyoung/planetoid" in msg
    assert "DPGNN_DATA" in msg and "root=" in msg
    assert "download=True" in msg


def test_missing_raw_without_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DPGNN_DATA")
    with pytest.raises(RawFilesNotFoundError) as err:
        NodeDataModule("musae-facebook", cache_dir=str(tmp_path)).setup()
    msg = str(err.value)
    assert "No data root given" in msg and "DPGNN_DATA" in msg
    assert "musae/facebook" in msg and "snap.stanford.edu" in msg
    assert "download=True" not in msg  # no download path for MUSAE


def test_missing_online_dataset_without_download(tmp_path: Path) -> None:
    with pytest.raises(RawFilesNotFoundError) as err:
        load_dataset("reddit", root=tmp_path, cache_dir=tmp_path / "c", download=False)
    msg = str(err.value)
    assert str(tmp_path / "reddit" / "raw" / "reddit_data.npz") in msg
    assert "https://data.dgl.ai/dataset/reddit.zip" in msg
    with pytest.raises(RawFilesNotFoundError, match="snap.stanford.edu/ogb"):
        load_dataset("amazon", root=tmp_path, cache_dir=tmp_path / "c", download=False)
    with pytest.raises(RawFilesNotFoundError, match="lastfm_asia.npz"):
        load_dataset("lastfm", root=tmp_path, cache_dir=tmp_path / "c", download=False)
    with pytest.raises(RawFilesNotFoundError, match="ind.pubmed.x"):
        load_dataset("pubmed", root=tmp_path, cache_dir=tmp_path / "c", download=False)


def test_missing_facebook100_school_lists_schools(data_root: Path) -> None:
    with pytest.raises(RawFilesNotFoundError) as err:
        load_dataset("facebook100/UIllinois20", root=data_root)
    msg = str(err.value)
    assert str(data_root / "facebook100" / "UIllinois20.mat") in msg
    assert "American75" in msg  # lists schools that are present


def test_missing_tudataset(tmp_path: Path) -> None:
    with pytest.raises(RawFilesNotFoundError, match="MUTAG_A.txt"):
        GraphDataModule("mutag", root=str(tmp_path), cache_dir=str(tmp_path / "c")).setup()


def test_unknown_target_lists_valid_ones(data_root: Path) -> None:
    with pytest.raises(UnknownTargetError) as err:
        NodeDataModule("facebook100/Caltech36", target="dorm", root=str(data_root))
    msg = str(err.value)
    assert "'dorm'" in msg
    for t in ("status", "gender", "major", "minor", "housing", "year"):
        assert f"'{t}'" in msg
    with pytest.raises(UnknownTargetError, match=r"\['mature', 'partner'\]"):
        load_dataset("musae-twitch-en", target="views")
    with pytest.raises(UnknownTargetError, match=r"\['label'\]"):
        NodeDataModule("cora", target="year")
    assert isinstance(err.value, ValueError)


@pytest.mark.parametrize(
    ("split", "needle"),
    [
        ((0.5, 0.5, 0.5), "sum to 1"),
        ((0.8, 0.1, 0.05), "sum to 1"),
        ((1.2, -0.1, -0.1), "non-negative"),
        ((0.5, 0.5), "exactly 3"),
        ((float("nan"), 0.5, 0.5), "finite"),
        ("random", "unknown split preset"),
    ],
)
def test_bad_split(split: object, needle: str) -> None:
    with pytest.raises(InvalidSplitError, match=needle):
        NodeDataModule("csbm", split=split)  # type: ignore[arg-type]
    with pytest.raises(InvalidSplitError, match=needle):
        parse_split(split)  # type: ignore[arg-type]


def test_public_split_needs_masks() -> None:
    with pytest.raises(InvalidSplitError, match="no public split"):
        NodeDataModule("csbm", split="public").setup()


def test_nan_and_inf_features_rejected() -> None:
    def broken(root: object, target: str, **kw: object) -> Data:
        x = torch.randn(20, 4)
        x[3, 1] = float("nan")
        x[7, 2] = float("inf")
        ei = torch.tensor([[i for i in range(19)], [i + 1 for i in range(19)]])
        return Data(x=x, edge_index=ei, y=torch.arange(20) % 2)

    register_dataset("test-broken-features", broken, overwrite=True)
    with pytest.raises(InvalidFeaturesError) as err:
        NodeDataModule("test-broken-features").setup()
    msg = str(err.value)
    assert "test-broken-features" in msg and "1 NaN" in msg and "1 infinite" in msg
    assert "[3, 7]" in msg
    data = broken(None, "label")
    with pytest.raises(InvalidFeaturesError, match="NaN"):
        NodeDataModule.from_data(data).setup()
    with pytest.raises(InvalidFeaturesError, match="infinite"):
        ScaleFeatures()(data)


def test_register_dataset_refuses_duplicates() -> None:
    with pytest.raises(ValueError, match="already registered"):
        register_dataset("cora", lambda **kw: Data())


def test_bad_feature_range_and_batch_size() -> None:
    with pytest.raises(ValueError, match="alpha < beta"):
        NodeDataModule("csbm", feature_range=(1.0, 0.0))
    with pytest.raises(ValueError, match="batch_size"):
        GraphDataModule("mutag", batch_size=0)
