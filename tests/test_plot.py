"""``lightning_dpgnn.plot`` / ``dpgnn plot``: accuracy vs epsilon from run files."""

import json
import math
import sys

import numpy as np
import pytest
from scipy import stats

import lightning_dpgnn
from lightning_dpgnn.cli import RUN_FILE, main
from lightning_dpgnn.plotting import load_runs, summarize_runs


def _write(folder, name, method, level, epsilon, acc, dataset="cora"):
    privacy = {
        "epsilon": None if level == "none" else epsilon,
        "epsilon_is_infinite": level == "none",
        "delta": 1e-4,
        "level": level,
    }
    (folder / name).mkdir(parents=True)
    (folder / name / RUN_FILE).write_text(json.dumps(
        {"method": method, "dataset": dataset, "seed": 0, "metrics": {"test/acc": acc},
         "privacy": privacy, "checkpoint": None}
    ))


@pytest.fixture
def runs(tmp_path):
    accs = {1.0: [0.61, 0.65, 0.60], 4.0: [0.74, 0.71, 0.75]}
    for eps, values in accs.items():
        for seed, acc in enumerate(values):
            # calibrated runs land just below their target: grouped with it
            _write(tmp_path, f"gap-{eps}-{seed}", "GAP", "edge", eps * 0.9993, acc)
    for seed, acc in enumerate([0.80, 0.82]):
        _write(tmp_path, f"inf-{seed}", "GAP", "none", None, acc)
    _write(tmp_path, "mlp", "MLP", "none", None, 0.55)
    _write(tmp_path, "mlp-edge", "MLP", "edge", 0.0, 0.56)  # reads no edge: epsilon 0
    (tmp_path / "notes.json").write_text("[1, 2]")  # other JSON files are ignored
    return tmp_path, accs


def test_points_are_means_with_a_t_interval_over_seeds(runs):
    folder, accs = runs
    assert len(load_runs(folder)) == 10
    points = {(p.method, p.epsilon): p for p in summarize_runs(load_runs(folder))}
    assert set(points) == {("GAP (edge)", 1.0), ("GAP (edge)", 4.0), ("GAP", math.inf),
                           ("MLP", math.inf), ("MLP (edge)", 0.0)}
    for eps, values in accs.items():
        p = points[("GAP (edge)", eps)]
        half = stats.t.ppf(0.975, 2) * np.std(values, ddof=1) / math.sqrt(3)
        assert (p.n, p.dataset) == (3, "cora")
        assert p.mean == pytest.approx(np.mean(values)) and p.ci == pytest.approx(half)
    assert points[("MLP", math.inf)].ci == 0 and points[("MLP", math.inf)].n == 1


def test_plot_writes_an_image(runs, tmp_path):
    folder, _ = runs
    out = lightning_dpgnn.plot(folder, output=tmp_path / "fig.png")
    from matplotlib.image import imread

    image = imread(out)
    assert image.ndim == 3 and image.shape[0] > 100 and image.shape[1] > 100


def test_dpgnn_plot_prints_where_and_refuses_an_empty_folder(runs, tmp_path, capsys):
    folder, _ = runs
    main(["plot", str(folder)])
    assert f"plot: {folder / 'privacy_utility.png'}" in capsys.readouterr().out
    assert (folder / "privacy_utility.png").stat().st_size > 1000

    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(SystemExit) as exit_info:
        main(["plot", str(empty)])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.startswith("error: no runs with 'test/acc' below")


def test_missing_matplotlib_says_how_to_install_it(runs, monkeypatch):
    folder, _ = runs
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    with pytest.raises(ImportError, match=r"pip install 'lightning-dpgnn\[plot\]'"):
        lightning_dpgnn.plot(folder)
