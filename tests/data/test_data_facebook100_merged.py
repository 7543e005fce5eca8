"""The merged Facebook100 graph ("FB-100", ProGAP's scale dataset) on two tiny schools."""

from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
import torch

from lightning_dpgnn.data import load_dataset
from lightning_dpgnn.data.readers import FACEBOOK100_COLUMNS


def write_school(path: Path, info: np.ndarray, edges: list[tuple[int, int]]) -> None:
    n = info.shape[0]
    a = sp.lil_matrix((n, n))
    for u, v in edges:
        a[u, v] = a[v, u] = 1
    scipy.io.savemat(str(path), {"A": a.tocsc(), "local_info": info.astype(float)})


@pytest.fixture
def two_schools(tmp_path: Path) -> Path:
    folder = tmp_path / "facebook100"
    folder.mkdir()
    year, high_school = FACEBOOK100_COLUMNS.index("year"), FACEBOOK100_COLUMNS.index(
        "high_school"
    )
    a = np.zeros((3, len(FACEBOOK100_COLUMNS)), dtype=np.int64)
    a[:, 0], a[:, 1], a[:, year] = [1, 2, 1], [1, 1, 2], [2008, 2009, 2008]
    a[:, high_school] = [501, 502, 503]
    b = np.zeros((4, len(FACEBOOK100_COLUMNS)), dtype=np.int64)
    b[:, 0], b[:, 1], b[:, year] = [2, 2, 1, 1], [2, 1, 0, 1], [2009, 0, 2010, 2008]
    b[:, high_school] = [601, 602, 603, 604]
    write_school(folder / "Aschool1.mat", a, [(0, 1), (1, 2)])
    write_school(folder / "Bschool2.mat", b, [(0, 1), (1, 2), (2, 3), (0, 3)])
    return tmp_path


def test_schools_are_stacked_block_diagonally_without_high_school(two_schools, tmp_path):
    data = load_dataset("facebook100/all", root=two_schools, target="year", cache_dir=tmp_path)
    # school B's node 1 has no year: dropped with its edges
    assert data.num_nodes == 3 + 3
    assert data.y.tolist() == [0, 1, 0, 1, 2, 0]  # years 2008/2009/2010 pooled across schools
    assert data.label_values.tolist() == [2008, 2009, 2010]
    assert data.node_id.tolist() == [0, 1, 2, 3, 5, 6]  # raw rows, schools stacked
    ei = data.edge_index
    assert ((ei[0] < 3) == (ei[1] < 3)).all()  # no edge crosses schools
    pairs = {tuple(e) for e in ei.t().tolist()}
    assert pairs == {(0, 1), (1, 0), (1, 2), (2, 1), (4, 5), (5, 4), (3, 5), (5, 3)}
    # features: status {1, 2} + gender {1, 2} one-hots; no high-school block
    assert data.num_features == 4
    assert data.x.layout == torch.sparse_coo and data.x.dtype == torch.float32
    x = data.x.to_dense()
    assert torch.equal(x.sum(1), torch.tensor([2.0, 2.0, 2.0, 2.0, 1.0, 2.0]))
    again = load_dataset("fb-100", root=two_schools, target="year", cache_dir=tmp_path)
    assert torch.equal(again.x.to_dense(), x) and torch.equal(again.edge_index, data.edge_index)
    assert torch.equal(again.node_id, data.node_id) and torch.equal(again.y, data.y)


def _dense_reference(folder: Path, target: str):
    """The merged graph computed the straightforward way: dense one-hot features over the
    codes pooled across schools, edges of every school's ``A`` restricted to the kept nodes."""
    t = FACEBOOK100_COLUMNS.index(target)
    infos, edges, offset = [], set(), 0
    for f in sorted(folder.glob("*.mat")):
        mat = scipy.io.loadmat(str(f))
        info = np.asarray(mat["local_info"], dtype=np.int64)
        keep = info[:, t] != 0
        a = np.asarray(mat["A"].todense())[keep][:, keep]
        edges |= {(int(u) + offset, int(v) + offset) for u, v in zip(*np.nonzero(a), strict=True)}
        infos.append(info[keep])
        offset += int(keep.sum())
    info = np.concatenate(infos)
    blocks = []
    for j, name in enumerate(FACEBOOK100_COLUMNS):
        if j == t or name == "high_school":
            continue
        values = np.unique(info[:, j][info[:, j] != 0])
        blocks.append((info[:, j][:, None] == values[None, :]).astype(np.float32))
    y = np.unique(info[:, t], return_inverse=True)[1]
    return torch.from_numpy(np.concatenate(blocks, axis=1)), edges, torch.from_numpy(y)


@pytest.mark.parametrize("target", ["year", "gender"])
def test_sparse_csr_cache_equals_the_dense_computation(two_schools, tmp_path, target):
    x, edges, y = _dense_reference(two_schools / "facebook100", target)
    for _ in range(2):  # the fresh build, then the memory-mapped cache
        data = load_dataset("facebook100/all", root=two_schools, target=target, cache_dir=tmp_path)
        assert torch.equal(data.x.to_dense(), x)
        assert {tuple(e) for e in data.edge_index.t().tolist()} == edges
        assert data.edge_index.size(1) == len(edges) and data.edge_index.dtype == torch.long
        assert torch.equal(data.y, y)
    cache = next((tmp_path / "processed").glob("facebook100-all-*"))
    stored = torch.load(next(cache.glob("merged-*.pt")), weights_only=True)
    assert stored["col"].dtype == torch.int32 and stored["feat_col"].dtype == torch.int32


def test_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(Exception, match=r"facebook100"):
        load_dataset("facebook100/all", root=tmp_path, target="year", cache_dir=tmp_path)
