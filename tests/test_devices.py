"""Device handling of the one-time mechanisms, on a CUDA device simulated on the CPU.

No GPU is lent to CI: :class:`tests.fake_cuda.FakeCuda` makes the module's parameters say they
are on ``cuda:0`` and raises where CUDA would (a CPU tensor meeting a device tensor, a CPU
generator drawing for the device). The methods' own hooks run unchanged under it: the fit's
one-time aggregation, the rows a stage trains on, the checkpoint state, transductive and
inductive prediction, a cache restored from a checkpoint, and DP-SGD's noise draws; then
whole fits of every method, where Lightning itself moves the model and the batches to the
simulated device (``OnFakeCuda``). What this cannot show (kernels, memory, NCCL) is listed in
docs/distributed.md.
"""

import copy
import math

import lightning as L
import pytest
import torch

from lightning_dpgnn.data import NodeDataModule
from lightning_dpgnn.methods import (
    DPGNN,
    DPMLP,
    GAP,
    GNN,
    LPGNN,
    MLP,
    PGC,
    SAGE,
    EdgeRand,
    ProGAP,
)
from lightning_dpgnn.privacy import random as R
from tests.fake_cuda import CUDA, FakeCuda, OnFakeCuda


@pytest.fixture(scope="module")
def graph():
    dm = NodeDataModule("csbm", seed=0, classes=[0, 1, 2, 3, 4])
    dm.prepare_data()
    dm.setup("fit")
    return dm.data


@pytest.fixture
def cuda(monkeypatch):
    mode = FakeCuda()
    mode.install(monkeypatch)
    for key in [k for k in R._ENTROPY if k.startswith("cuda")]:
        monkeypatch.delitem(R._ENTROPY, key)  # a device generator made outside the mode
    with mode:
        yield mode
    for key in [k for k in R._ENTROPY if k.startswith("cuda")]:
        R._ENTROPY.pop(key)


def on_cuda(mode, obj):
    """Every tensor of ``obj`` (a tensor, a list of them) is on the simulated device."""
    tensors = obj if isinstance(obj, (list, tuple)) else [obj]
    return bool(tensors) and all(mode.on_device(t) for t in tensors)


def private(model, graph):
    """``model`` as ``setup`` leaves it for a fit on ``graph`` (built, noise fixed)."""
    model.hparams["num_classes"] = 5  # public metadata (node level reads no label for it)
    model.build_for(graph, seed=0)
    model._graph = graph
    model.resolve_delta(graph)
    return model


def test_the_simulated_device_raises_where_cuda_does(cuda):
    w = cuda.place(torch.ones(3, 2))
    with pytest.raises(RuntimeError, match="same device"):
        torch.ones(4, 3) @ w
    with pytest.raises(RuntimeError, match="generator"):
        torch.randn(3, generator=torch.Generator().manual_seed(0), device="cuda")
    moved = torch.ones(4, 3).to(w.device)
    assert moved.device == CUDA and cuda.on_device(moved @ w)
    assert not cuda.on_device((moved @ w).cpu())


@pytest.mark.parametrize("noise_seed", [None, 7])
def test_noise_is_drawn_for_the_device_it_lands_on(cuda, noise_seed):
    """Entropy noise from the device's own generator; seeded (research) noise from its CPU
    generator, copied over, so a seeded fit draws the same noise on a CPU and a GPU."""
    gen = None if noise_seed is None else R.reproducible_generator(noise_seed)
    for draw in (
        R.normal((5, 3), 2.0, generator=gen, device=CUDA),
        R.uniform((5,), generator=gen, device=CUDA),
        R.laplace((5,), 1.0, generator=gen, device=CUDA),
        R.bernoulli(cuda.place(torch.full((5,), 0.5)), generator=gen),
    ):
        assert draw.device == CUDA and cuda.on_device(draw)
    if noise_seed is not None:
        on_gpu = R.normal((4,), 1.0, generator=R.reproducible_generator(noise_seed), device=CUDA)
        on_cpu = R.normal((4,), 1.0, generator=R.reproducible_generator(noise_seed))
        assert torch.equal(on_gpu.cpu(), on_cpu)
    else:
        assert R.entropy_generator(CUDA).device == CUDA  # the device's own, entropy-seeded


@pytest.mark.parametrize(
    "make",
    [
        lambda: GAP("edge", epsilon=None, noise_multiplier=1.0, encoder_epochs=1),
        lambda: GAP("node", epsilon=None, noise_multiplier=1.0, max_degree=200, noise_seed=3),
        lambda: ProGAP("edge", epsilon=None, noise_multiplier=1.0, depth=2),
        lambda: ProGAP("node", epsilon=None, noise_multiplier=1.0, max_degree=200, depth=1),
    ],
    ids=["gap-edge", "gap-node-seeded", "progap-edge", "progap-node"],
)
def test_aggregation_perturbation_runs_and_caches_on_the_module_device(cuda, graph, make):
    model = private(make(), graph)
    cuda.module(model)
    last = len(model.staged.stages) - 1
    for stage in range(last + 1):
        model.draw_releases(stage)  # the fit's one-time aggregations (the graph is on the CPU)
    cache = [model.releases[n] for n in model.hop_names()]
    assert on_cuda(cuda, cache)
    # the rows of the last stage are built from the CPU graph the data module hands over
    # (one full batch: Poisson batches need a trainer's epoch, and index the same rows)
    model._phase = lambda stage: None
    *inputs, y = next(iter(model.stage_rows(last, graph)))
    assert cuda.on_device(model._eval_forward(model.stage_model(last), *inputs))

    # checkpoints and the hub get CPU tensors
    state = model.privacy_state()
    saved = [t for t in state["outputs"].values() if t is not None]
    assert len(saved) == len(model.releases.declared)  # every release: the hops (and counts)
    for t in saved:
        assert not cuda.on_device(t) and t.device.type == "cpu"

    # prediction on the training graph (Lightning's batch: on the device) from the cache, and
    # on a new graph handed over on the CPU, with fresh noise there
    batch = copy.copy(graph).to("cuda")
    assert cuda.on_device(model.predict_step(batch, 0))
    assert cuda.on_device(model.predict_inductive(graph))

    # a model restored from the checkpoint state (a CPU cache) and moved to the device
    restored = private(make(), graph)
    restored.load_privacy_state(state)
    restored.staged.load_state_dict(model.staged.state_dict())
    cuda.module(restored)
    assert cuda.on_device(restored.predict_step(batch, 0))
    assert on_cuda(cuda, [restored.releases[n] for n in restored.hop_names()])
    # the data module's graph was copied, never moved in place
    assert not any(cuda.on_device(t) for _, t in graph() if isinstance(t, torch.Tensor))


def test_dpgnn_releases_its_aggregate_on_the_module_device(cuda, graph):
    model = private(DPGNN(epsilon=None, noise_multiplier=1.0, max_degree=200), graph)
    cuda.module(model)
    model.draw_releases()
    assert cuda.on_device(model.releases["aggregation"])
    assert not cuda.on_device(model.privacy_state()["outputs"][model.mechanism_name])
    batch = copy.copy(graph).to("cuda")
    assert cuda.on_device(model.predict_step(batch, 0))
    assert cuda.on_device(model.predict_inductive(graph))


def test_poisson_batches_index_rows_on_the_device(cuda):
    """The sampler's indices (CPU) select rows of device tensors, sparse features too."""
    from lightning_dpgnn.privacy.dpsgd import row_loader

    x = cuda.place(torch.eye(6).to_sparse_coo())
    y = cuda.place(torch.arange(6))
    gen = R.reproducible_generator(0)
    batches = list(row_loader(x, y, sample_rate=0.5, steps=3, generator=gen))
    assert any(len(b[1]) for b in batches)
    assert all(cuda.on_device(t) for b in batches for t in b if t.numel())


def _cached(model):
    """The one-time outputs a model holds for its fit (None: it has none)."""
    if hasattr(model, "hop_names"):  # GAP, ProGAP: the hops drawn
        return [v for n in model.hop_names() if (v := model.releases.get(n)) is not None] or None
    name = {DPGNN: "aggregation", EdgeRand: "edges"}.get(type(model))
    return None if name is None else model.releases.get(name)


CSBM = dict(seed=0, classes=[0, 1, 2, 3, 4])
LDP = dict(CSBM, split="lpgnn", feature_range=(0.0, 1.0), feature_bounds=(-4.0, 4.0))
WHOLE_FITS = {
    "GAP-edge": (lambda: GAP("edge", epsilon=1.0, encoder_epochs=1, classifier_epochs=1), CSBM),
    "GAP-node": (lambda: GAP("node", epsilon=None, noise_multiplier=2.0, max_degree=200,
                             encoder_epochs=1, classifier_epochs=1, batch_size=512), CSBM),
    "ProGAP-edge": (lambda: ProGAP("edge", epsilon=1.0, depth=2, epochs_per_stage=1), CSBM),
    "GAP-label-counts": (lambda: GAP("edge", epsilon=1.0, encoder_epochs=1, classifier_epochs=1,
                                     label_counts=True), CSBM),
    "DPGNN": (lambda: DPGNN(epsilon=None, noise_multiplier=1.0, max_degree=200, epochs=1,
                            batch_size=512), CSBM),
    "EdgeRand": (lambda: EdgeRand(epsilon=2.0, epochs=1), CSBM),
    "LPGNN": (lambda: LPGNN(x_epsilon=1.0, y_epsilon=2.0), LDP),
    # LPGNN predicts on a new graph only without a noise draw (tests/methods/test_inductive.py)
    "LPGNN-clear": (lambda: LPGNN(x_epsilon=math.inf, y_epsilon=2.0), LDP),
    "PGC": (lambda: PGC(x_epsilon=2.0), LDP),
    "MLP": (lambda: MLP(privacy="none", epochs=1), CSBM),
    "DPMLP": (lambda: DPMLP(epsilon=None, noise_multiplier=1.0, batch_size=512, epochs=1), CSBM),
    "GNN": (lambda: GNN(), CSBM),
    "SAGE": (lambda: SAGE(epochs=1), CSBM),
}


@pytest.mark.parametrize("name", list(WHOLE_FITS))
def test_a_whole_fit_runs_on_the_device(cuda, name):
    """fit, test and predict of every method with Lightning moving the model and the batches to
    the simulated device. No validation: on a GPU, Lightning's first validation batch moves the
    data module's graph to the device in place (PyG's ``Data.to``), which hid GAP's and
    ProGAP's CPU aggregation whenever validation ran before it."""
    make, data = WHOLE_FITS[name]
    model, dm = make(), NodeDataModule("csbm", **data)
    staged = getattr(model, "staged", None)
    epochs = 1 if staged is None else staged.total_epochs()  # staged: its plan
    trainer = L.Trainer(
        accelerator="cpu", devices=1, max_epochs=epochs, limit_val_batches=0, logger=False,
        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
        callbacks=[OnFakeCuda()],
    )
    trainer.fit(model, dm)
    cached = _cached(model)
    if cached is not None:  # kept where the fit used it
        assert on_cuda(cuda, cached)
    if model.releases.get("label_counts") is not None:  # GAP/ProGAP's label counts
        assert cuda.on_device(model.releases["label_counts"])
    for value in model.privacy_state()["outputs"].values():  # checkpoints: CPU tensors
        for t in value if isinstance(value, list) else [value]:
            assert not isinstance(t, torch.Tensor) or not cuda.on_device(t)
    trainer.test(model, dm, verbose=False)
    assert trainer.predict(model, dm)[0].shape[0] == dm.num_nodes
    if hasattr(model, "predict_inductive") and getattr(model, "transfers_to_new_graphs", True):
        # a new graph handed over on the CPU
        new = NodeDataModule("csbm", **data)
        new.prepare_data()
        new.setup("predict")
        with torch.no_grad():
            assert cuda.on_device(cuda.module(model).predict_inductive(new.data))
        # the user's graph is copied to the device, not moved in place
        assert not any(cuda.on_device(t) for _, t in new.data() if isinstance(t, torch.Tensor))
