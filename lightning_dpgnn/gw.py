"""The server side of GW-LDP: (fused) Gromov-Wasserstein discrepancies (POT), the GW kernel,
SVMs and clustering (scikit-learn). All of it is post-processing of what the clients released
(or of raw graphs the caller chose to read): no private read happens here.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

__all__ = ["C_GRID", "GAMMA_GRID", "structure_cost", "embedding_cost", "gw_discrepancy",
           "pairwise_discrepancy", "pair_discrepancies", "gw_kernel", "svm_nested_cv",
           "svm_split", "knn_accuracy", "cluster", "cluster_scores", "SVMResult"]

#: the FGW repository's grids (Vayer et al. 2019)
C_GRID = np.logspace(-4, 4, 15)
GAMMA_GRID = 2.0 ** np.linspace(-10, 10, 15)


def structure_cost(edge_index: torch.Tensor, num_nodes: int) -> np.ndarray:
    """All-pairs shortest-path lengths (hops) of a graph; unreachable pairs cost ``n``."""
    from scipy.sparse.csgraph import shortest_path
    from torch_geometric.utils import to_scipy_sparse_matrix

    n = int(num_nodes)
    adj = to_scipy_sparse_matrix(edge_index.detach().cpu(), num_nodes=n).tocsr()
    c = shortest_path(adj, directed=False, unweighted=True)
    c[np.isinf(c)] = n
    return c.astype(np.float64)


def _f64(a: torch.Tensor | np.ndarray) -> torch.Tensor:
    return torch.as_tensor(a).detach().cpu().to(torch.float64)


def embedding_cost(h: torch.Tensor | np.ndarray, normalize: str | None = "max") -> np.ndarray:
    """Euclidean distances between the rows of ``h`` (GW-LDP eq. 3), ``float64``, divided by
    the largest (``"mean"``: the mean; ``None``: kept); rows all equal give zeros."""
    c = torch.cdist(_f64(h), _f64(h)).numpy()
    if normalize not in _SCALES:
        raise ValueError(f"normalize must be 'max', 'mean' or None, got {normalize!r}")
    scale = _SCALES[normalize](c)
    return c / scale if scale > 0 else c


#: ``embedding_cost``'s ``normalize``: the scale a distance matrix is divided by
_SCALES = {"max": np.max, "mean": np.mean, None: lambda c: 1.0, "none": lambda c: 1.0}


def feature_cost(a: torch.Tensor | np.ndarray, b: torch.Tensor | np.ndarray) -> np.ndarray:
    """Squared Euclidean distances between the rows of ``a`` and of ``b`` (FGW's ``M``)."""
    return (torch.cdist(_f64(a), _f64(b)) ** 2).numpy()


def gw_discrepancy(c1: np.ndarray, c2: np.ndarray, m: np.ndarray | None = None,
                   alpha: float = 0.5, armijo: bool = False, max_iter: int = 500) -> float:
    """GW (``m=None``) or FGW discrepancy between two metric-measure spaces with uniform
    weights, by POT's conditional gradient (line search: exact for the square loss, or
    Armijo); float64 and the fixed initial plan ``p q^T``. FGW's objective is
    ``(1 - alpha) <T, M> + alpha * sum L(C1, C2) T T``."""
    import ot

    c1 = np.ascontiguousarray(c1, dtype=np.float64)
    c2 = np.ascontiguousarray(c2, dtype=np.float64)
    p = np.full(c1.shape[0], 1.0 / c1.shape[0])
    q = np.full(c2.shape[0], 1.0 / c2.shape[0])
    g0 = np.outer(p, q)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # POT warns when CG stops at max_iter
        if m is None:
            val = ot.gromov.gromov_wasserstein2(c1, c2, p, q, "square_loss", armijo=armijo,
                                                G0=g0, max_iter=max_iter)
        else:
            val = ot.gromov.fused_gromov_wasserstein2(
                np.ascontiguousarray(m, dtype=np.float64), c1, c2, p, q, "square_loss",
                alpha=alpha, armijo=armijo, G0=g0, max_iter=max_iter)
    return max(float(val), 0.0)


def _pair_values(pairs, costs, feats, alpha: float, armijo: bool) -> list[float]:
    return [gw_discrepancy(costs[i], costs[j],
                           None if feats is None else feature_cost(feats[i], feats[j]),
                           alpha, armijo) for i, j in pairs]


def _digest(costs: Sequence[np.ndarray], feats: Sequence[np.ndarray] | None, **settings) -> str:
    h = hashlib.sha256(json.dumps(settings, sort_keys=True).encode())
    for a in [*costs, *(feats or ())]:
        h.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
        h.update(str(a.shape).encode())
    return h.hexdigest()[:32]


def pair_discrepancies(
    pairs: Sequence[tuple[int, int]], costs: Sequence[np.ndarray],
    features: Sequence[np.ndarray] | None = None, alpha: float = 0.5, armijo: bool = False,
    n_jobs: int = 1, progress: bool = False, chunk: int = 256,
) -> list[float]:
    """The GW (FGW with ``features``) discrepancy of each pair ``(i, j)`` of the graphs given
    by their cost matrices, in order; blocks of ``chunk`` pairs run in ``n_jobs`` workers."""
    from joblib import Parallel, delayed

    blocks = [pairs[k : k + chunk] for k in range(0, len(pairs), chunk)]
    if n_jobs == 1 or len(blocks) <= 1:
        return [v for b in blocks for v in _pair_values(b, costs, features, alpha, armijo)]
    parts = Parallel(n_jobs=n_jobs, verbose=10 if progress else 0)(
        delayed(_pair_values)(b, costs, features, alpha, armijo) for b in blocks)
    return [v for part in parts for v in part]


def pairwise_discrepancy(
    costs: Sequence[np.ndarray], features: Sequence[torch.Tensor | np.ndarray] | None = None,
    alpha: float = 0.5, armijo: bool = False, n_jobs: int = 1,
    cache_dir: str | Path | None = None, progress: bool = False, chunk: int = 256,
) -> np.ndarray:
    """The symmetric matrix of GW (FGW with node ``features``) discrepancies of all pairs of
    graphs given by their cost matrices; with ``cache_dir`` it is stored under a hash of every
    input and setting and read back on a rerun."""
    costs = [np.asarray(c, dtype=np.float64) for c in costs]
    feats = None if features is None else [_f64(f).numpy() for f in features]
    n = len(costs)
    path = None
    if cache_dir is not None:
        key = _digest(costs, feats, alpha=alpha, armijo=armijo, fused=feats is not None,
                      solver="pot-cg-square-g0pq", version=1)
        path = Path(cache_dir) / f"gw-{key}.npy"
        if path.exists():
            return np.load(path)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    values = pair_discrepancies(pairs, costs, feats, alpha, armijo, n_jobs, progress, chunk)
    d = np.zeros((n, n))
    if pairs:
        idx = np.array(pairs)
        d[idx[:, 0], idx[:, 1]] = values
        d[idx[:, 1], idx[:, 0]] = values
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp.npy")
        np.save(tmp, d)
        tmp.replace(path)
    return d


def gw_kernel(d: np.ndarray, gamma: float, scale: float | None = None) -> np.ndarray:
    """``exp(-gamma * D / scale)`` (``scale``: the largest entry of ``D`` by default)."""
    s = float(np.max(d)) if scale is None else float(scale)
    return np.exp(-gamma * d / (s if s > 0 else 1.0))


@dataclass
class SVMResult:
    accuracies: list[float]
    params: list[dict[str, float]]

    @property
    def mean(self) -> float:
        return float(np.mean(self.accuracies))

    @property
    def std(self) -> float:
        return float(np.std(self.accuracies))


def _fit_score(d, y, train, test, c, gamma, scale) -> float:
    from sklearn.svm import SVC

    k = gw_kernel(d, gamma, scale)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = SVC(C=float(c), kernel="precomputed", max_iter=int(1e7))
        clf.fit(k[np.ix_(train, train)], y[train])
        return float((clf.predict(k[np.ix_(test, train)]) == y[test]).mean())


def _grid_search(score, c_grid, gamma_grid) -> tuple[float, float]:
    """The first ``(C, gamma)`` of the grids (gamma outer) with the best ``score(c, gamma)``."""
    best, best_score = (float(c_grid[0]), float(gamma_grid[0])), -1.0
    for gamma in gamma_grid:
        for c in c_grid:
            value = float(score(c, gamma))
            if value > best_score + 1e-12:
                best, best_score = (float(c), float(gamma)), value
    return best


def _select(d, y, train, c_grid, gamma_grid, inner_folds, seed) -> tuple[float, float]:
    """Best (C, gamma) by stratified inner cross-validation on ``train``."""
    from sklearn.model_selection import StratifiedKFold

    counts = np.bincount(y[train])
    folds = max(2, min(int(inner_folds), int(counts[counts > 0].min())))
    skf = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    scale = float(np.max(d[np.ix_(train, train)]))
    splits = list(skf.split(np.zeros(len(train)), y[train]))
    return _grid_search(lambda c, gamma: np.mean([
        _fit_score(d, y, train[a], train[b], c, gamma, scale) for a, b in splits
    ]), c_grid, gamma_grid)


def svm_nested_cv(
    d: np.ndarray, y: Sequence[int] | np.ndarray, outer_splits: int = 10,
    test_size: float = 0.1, inner_folds: int = 10, c_grid: Sequence[float] = C_GRID,
    gamma_grid: Sequence[float] = GAMMA_GRID, seed: int = 0,
) -> SVMResult:
    """The FGW protocol: ``outer_splits`` random stratified ``1 - test_size`` / ``test_size``
    splits; on each, (C, gamma) chosen by ``inner_folds``-fold stratified CV on the training
    part, refit on it, accuracy on the held-out part. The kernel's scale is the largest
    discrepancy among training graphs (no test pair is looked at)."""
    from sklearn.model_selection import StratifiedShuffleSplit

    y = np.asarray(y)
    sss = StratifiedShuffleSplit(n_splits=outer_splits, test_size=test_size, random_state=seed)
    accs, params = [], []
    for k, (train, test) in enumerate(sss.split(np.zeros(len(y)), y)):
        c, gamma = _select(d, y, train, c_grid, gamma_grid, inner_folds, seed + k)
        scale = float(np.max(d[np.ix_(train, train)]))
        accs.append(_fit_score(d, y, train, test, c, gamma, scale))
        params.append({"C": c, "gamma": gamma})
    return SVMResult(accs, params)


def svm_split(
    d: np.ndarray, y: Sequence[int] | np.ndarray, train: Sequence[int] | np.ndarray,
    val: Sequence[int] | np.ndarray, test: Sequence[int] | np.ndarray,
    c_grid: Sequence[float] = C_GRID, gamma_grid: Sequence[float] = GAMMA_GRID,
) -> tuple[float, dict[str, float]]:
    """A fixed split (GW-LDP's 7:2:1): (C, gamma) chosen on ``val`` with SVMs fit on
    ``train``; test accuracy of the chosen one. Returns ``(accuracy, params)``."""
    y = np.asarray(y)
    train, val, test = (np.asarray(a, dtype=int) for a in (train, val, test))
    scale = float(np.max(d[np.ix_(train, train)]))
    c, gamma = _grid_search(
        lambda c, gamma: _fit_score(d, y, train, val, c, gamma, scale) if len(val) else 0.0,
        c_grid, gamma_grid)
    return _fit_score(d, y, train, test, c, gamma, scale), {"C": c, "gamma": gamma}


def knn_accuracy(
    d: np.ndarray, y: Sequence[int] | np.ndarray, train: np.ndarray, test: np.ndarray, k: int = 5
) -> float:
    """k-nearest-neighbour accuracy in discrepancy space (GW-LDP Fig. 3)."""
    from sklearn.neighbors import KNeighborsClassifier

    y = np.asarray(y)
    clf = KNeighborsClassifier(n_neighbors=min(int(k), len(train)), metric="precomputed")
    clf.fit(d[np.ix_(train, train)], y[train])
    return float((clf.predict(d[np.ix_(test, train)]) == y[test]).mean())


def _k_medoids(d: np.ndarray, k: int, seed: int, iters: int = 100) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = d.shape[0]
    medoids = [int(rng.integers(n))]
    while len(medoids) < k:  # k-means++ style seeding on D
        dist = d[:, medoids].min(axis=1) ** 2
        medoids.append(int(rng.choice(np.setdiff1d(np.arange(n), medoids)) if dist.sum() <= 0
                           else rng.choice(n, p=dist / dist.sum())))
    medoids = np.array(medoids)
    for _ in range(iters):
        labels = d[:, medoids].argmin(axis=1)
        new = medoids.copy()
        for c in range(k):
            members = np.flatnonzero(labels == c)
            if members.size:
                new[c] = members[d[np.ix_(members, members)].sum(axis=1).argmin()]
        if np.array_equal(new, medoids):
            break
        medoids = new
    return d[:, medoids].argmin(axis=1)


def cluster(
    d: np.ndarray, k: int, method: str = "spectral", gamma: float = 1.0, seed: int = 0
) -> np.ndarray:
    """Cluster graphs in discrepancy space: ``"spectral"`` (on the kernel
    ``exp(-gamma D / max D)``) or ``"kmedoids"`` (on D)."""
    if method == "kmedoids":
        return _k_medoids(d, int(k), seed)
    if method != "spectral":
        raise ValueError(f"method must be 'spectral' or 'kmedoids', got {method!r}")
    from sklearn.cluster import SpectralClustering

    aff = gw_kernel(d, gamma)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clustering = SpectralClustering(n_clusters=int(k), affinity="precomputed",
                                        random_state=seed)
        return clustering.fit_predict(aff)


def cluster_scores(labels: Sequence[int], truth: Sequence[int]) -> dict[str, Any]:
    """NMI and ARI of a clustering against (pseudo-)labels."""
    from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

    return {"nmi": float(normalized_mutual_info_score(truth, labels)),
            "ari": float(adjusted_rand_score(truth, labels))}
