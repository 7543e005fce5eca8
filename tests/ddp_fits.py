"""What tests/test_ddp.py runs on 2 CPU processes (gloo): ``python ddp_fits.py OUT_DIR``.

Lightning's DDP launcher starts rank 1 by re-running this script; each rank writes what it
holds to ``OUT_DIR/result-<rank>.json`` and the test compares the two ranks with each other and
with single-process fits. One launch covers every check (process launches are slow): the
GW-LDP fits of tests/methods/test_gwldp.py (``methods/gwldp_ddp_fits.py``) run in it too,
after these, and write ``OUT_DIR/gwldp-<rank>.json``. ``tests/conftest.py``'s ``ddp_fits``
fixture runs it once per suite.
"""

import hashlib
import json
import sys
import warnings
from pathlib import Path

warnings.filterwarnings("ignore")
sys.path.insert(0, str(Path(__file__).with_name("methods")))

import lightning as L  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from gwldp_ddp_fits import run as gwldp_fits  # noqa: E402
from lightning.pytorch.callbacks import ModelCheckpoint  # noqa: E402

from lightning_dpgnn import (  # noqa: E402
    DPGNN,
    DPMLP,
    GAP,
    GNN,
    LPGNN,
    MLP,
    PGC,
    EdgeRand,
    PoinDP,
    ProGAP,
)
from lightning_dpgnn.data import NodeDataModule  # noqa: E402
from lightning_dpgnn.privacy import PrivacyAccountant  # noqa: E402
from lightning_dpgnn.privacy.aggregation import sum_aggregate  # noqa: E402
from lightning_dpgnn.privacy.distributed import (  # noqa: E402
    block_sum_aggregate,
    gather_rows,
    row_blocks,
)
from lightning_dpgnn.privacy.dpsgd import (  # noqa: E402
    DPOptimizer,
    GhostDPOptimizer,
    ghost_backward,
    grad_sample_module,
    make_private,
)

OUT = sys.argv[1]


def trainer(**kwargs) -> L.Trainer:
    kwargs.setdefault("enable_checkpointing", False)
    return L.Trainer(strategy="ddp", devices=2, accelerator="cpu", logger=False, **kwargs,
                     enable_model_summary=False, enable_progress_bar=False,
                     default_root_dir=OUT)


def digest(tensors) -> str:
    """Bit-level fingerprint of cached tensors (equal iff every bit is)."""
    h = hashlib.sha256()
    for t in tensors:
        h.update(t.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def params(model) -> str:
    return digest(p for p in model.parameters())


def fit(model, **trainer_args):
    t = trainer(**trainer_args)
    t.fit(model, NodeDataModule("csbm", seed=0))
    acc = t.test(model, NodeDataModule("csbm", seed=0), verbose=False)[0]["test/acc"]
    report = model.privacy_spent()
    return t, {"acc": acc, "epochs": t.current_epoch, "params": params(model),
               "epsilon": report.epsilon, "ledger": model.accountant.state_dict()["ledger"]}


class RecordingGAP(GAP):
    """GAP that records, on its rank, what the sharding tests look at: the block of rows and
    the global training rows it held, every full noisy hop, and its share of the last
    validation (correct predictions, rows)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seen = {"blocks": [], "train_shards": [], "hops": []}

    def _aggregate(self, x, d, index):
        agg = yield from super()._aggregate(x, d, index)
        if d.fit:
            self.seen["hops"].append(digest([agg]))
        return agg

    def stage_rows(self, stage_index, data):
        loader = super().stage_rows(stage_index, data)
        self.seen["blocks"].append(self._row_block())
        self.seen["train_shards"].append(self._train_shard(data))
        return loader

    def _split_logits(self, data, split):
        logits, y = super()._split_logits(data, split)
        if split == "val":
            self.seen["val"] = [int((logits.argmax(-1) == y).sum()), len(y)]
        return logits, y


out = {}
# GAP twice from the same weights (seed=0; full-batch training is deterministic): the two
# caches could only be equal if both fits drew the same noise
for run, epochs in (("GAP", 10), ("GAP-again", 1)):
    model = GAP(privacy="edge", epsilon=4.0, hops=2, encoder_epochs=3, classifier_epochs=epochs,
                seed=0)
    t, out[run] = fit(model)
    out[run]["cache"] = digest([model.releases["pma"]])
# sharded rows (the default under DDP): blocks, noisy hops, validation shares
model = RecordingGAP(privacy="edge", epsilon=4.0, hops=2, encoder_epochs=2, classifier_epochs=3,
                     seed=0)
t = trainer()
t.fit(model, NodeDataModule("csbm", seed=0))
out["GAP-sharded"] = dict(model.seen, val_acc=float(t.callback_metrics["val/acc"]),
                          num_nodes=model._graph.num_nodes, cache=digest([model.releases["pma"]]),
                          ledger=model.accountant.state_dict()["ledger"])
# aggregates of the raw features at a fixed noise seed (test-only): the single-process ones;
# from the same initial weights the accuracy is then the single-process one, noise aside
for shard in (True, False):
    model = GAP(privacy="edge", epsilon=4.0, hops=2, encoder_layers=0, classifier_epochs=5,
                noise_seed=7, seed=0, shard_rows=shard)
    t, out[f"GAP-seeded-{shard}"] = fit(model)
    out[f"GAP-seeded-{shard}"]["cache"] = digest([model.releases["pma"]])
    if dist.get_rank() == 0:
        torch.save(model.releases["pma"], f"{OUT}/gap-seeded-{shard}.pt")
model = ProGAP(privacy="edge", epsilon=4.0, depth=2, epochs_per_stage=5)
t, out["ProGAP"] = fit(model)
out["ProGAP"]["cache"] = digest([model.releases[n] for n in model.hop_names()])
# label counts: one more one-time aggregation, drawn once over the sharded rows
model = ProGAP(privacy="edge", epsilon=4.0, depth=1, epochs_per_stage=2, label_counts=True)
t, out["ProGAP-counts"] = fit(model)
out["ProGAP-counts"]["cache"] = digest([model.releases["label_counts"], model.releases["nap/1"]])
model = ProGAP(privacy="none", depth=1, epochs_per_stage=2)
t, out["ProGAP-none"] = fit(model)
# PoinDP: its hyperbolic release is a collective neighbour sum, drawn once on rank 0
model = PoinDP(privacy="edge", epsilon=4.0, encoder_epochs=3, classifier_epochs=10)
t, out["PoinDP"] = fit(model)
out["PoinDP"]["cache"] = digest([model.releases["poindp"]])
model = MLP(privacy="none", epochs=2)
t, out["MLP"] = fit(model)
model = LPGNN(x_epsilon=1.0, y_epsilon=2.0)
t = trainer(max_epochs=3)
t.fit(model, NodeDataModule("csbm", seed=0, split="lpgnn"))
c = model.local.collection()
out["LPGNN"] = {"cache": digest([c.payload.to_dense(), c.labels]), "params": params(model),
                "epsilon": model.privacy_spent().epsilon}
model = PGC(x_epsilon=2.0)  # one-bit feature collection, drawn once
t = trainer(max_epochs=2)
t.fit(model, NodeDataModule("csbm", seed=0, split="lpgnn", feature_range=(0.0, 1.0),
                            feature_bounds=(-4.0, 4.0)))
out["PGC"] = {"cache": digest([model.local.collection().payload.to_dense()]),
              "params": params(model), "epsilon": model.privacy_spent().epsilon}
model = GNN()  # non-private GNN baseline (DDP syncs the initial weights)
t, out["GNN"] = fit(model, max_epochs=2)
# DP-SGD fits at a fixed noise multiplier (calibrating a subsampled Gaussian takes seconds)
model = DPMLP(epsilon=None, noise_multiplier=1.0, batch_size=128)
t, out["DPMLP"] = fit(model, max_epochs=1)
model = GAP(privacy="node", epsilon=None, noise_multiplier=2.0, hops=1, max_degree=100,
            encoder_epochs=1, classifier_epochs=1, batch_size=256)
t, out["GAP-node"] = fit(model)
out["GAP-node"]["cache"] = digest([model.releases["pma"]])
# resume (Trainer.fit(ckpt_path=...)) of a sharded node-level fit (aggregation + DP-SGD) from
# a checkpoint written before the aggregation (epoch 0: one encoder epoch left) and one written
# after it (epoch 2: one classifier epoch left; the aggregation is drawn when the encoder stage
# ends, before that epoch's checkpoint): the ledger of the uninterrupted fit, and the cache of
# the interrupted one when it was written (restored, never drawn again)
def resumable():
    return GAP(privacy="node", epsilon=None, noise_multiplier=2.0, hops=1, max_degree=100,
               encoder_epochs=2, classifier_epochs=2, batch_size=256, seed=0)


model = resumable()
saver = ModelCheckpoint(dirpath=f"{OUT}/resume", save_top_k=-1, filename="{epoch}")
t = trainer(enable_checkpointing=True, callbacks=[saver])
t.fit(model, NodeDataModule("csbm", seed=0))
out["resume-whole"] = {"cache": digest([model.releases["pma"]]), "epochs": t.current_epoch,
                       "ledger": model.accountant.state_dict()["ledger"]}
for epoch in (0, 2):
    model = resumable()
    t = trainer()
    t.fit(model, NodeDataModule("csbm", seed=0), ckpt_path=f"{OUT}/resume/epoch={epoch}.ckpt")
    out[f"resume-from-{epoch}"] = {"cache": digest([model.releases["pma"]]),
                                   "epochs": t.current_epoch,
                                   "ledger": model.accountant.state_dict()["ledger"]}
# the baselines' one-time releases: EdgeRand's noisy graph, DPGNN's inference aggregate
model = EdgeRand(epsilon=2.0, epochs=2)
t, out["EdgeRand"] = fit(model)
out["EdgeRand"]["cache"] = digest([model.releases["edges"]])
model = DPGNN(epsilon=None, noise_multiplier=2.0, max_degree=21, batch_size=128)
t, out["DPGNN"] = fit(model, max_epochs=1)
out["DPGNN"]["cache"] = digest([model.releases["aggregation"]])

# -- DP-SGD on a fixed global batch of 16 rows: rank r holds rows r, r+2, ...; the update's std
# over repeated steps must be the single-process one, z C / B (noise added once, not per rank)
rank, world = dist.get_rank(), dist.get_world_size()
# the partitioned sum: each rank's block of A^T X from the edges into it, gathered, against the
# one-process product (a multigraph: repeated edges count with multiplicity)
torch.manual_seed(0)
n_nodes = 101
edges = torch.randint(0, n_nodes, (2, 900))
x = torch.randn(n_nodes, 5)
parted = gather_rows(block_sum_aggregate(x, edges, row_blocks(n_nodes, world)[rank]), n_nodes)
out["partitioned-sum"] = {
    "max_diff": float((parted - sum_aggregate(x, edges, n_nodes)).abs().max()),
    "digest": digest([parted]),
}

Z, C, B, N, STEPS = 1.0, 0.5, 16, 160, 300


def updates(ghost: bool, distributed: bool) -> torch.Tensor:
    torch.manual_seed(0)  # same weights and data on every rank
    net = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    x, y = torch.randn(B, 6) * 3, torch.randint(0, 3, (B,))
    rows = slice(rank, None, world) if distributed else slice(None)
    sgd = torch.optim.SGD(net.parameters(), lr=1.0)
    acc = PrivacyAccountant("node", 1e-5)
    if distributed:  # what every DP-SGD fit builds under DDP
        gsm, opt = make_private(net, sgd, noise_multiplier=Z, max_grad_norm=C,
                                sample_rate=B / N, num_samples=N, accountant=acc, ghost=ghost)
    else:  # the single-process optimizer, built directly inside this process group
        gsm = grad_sample_module(net, C, ghost=ghost)
        opt = (GhostDPOptimizer if ghost else DPOptimizer)(
            sgd, noise_multiplier=Z, max_grad_norm=C, expected_batch_size=B,
            sample_rate=B / N, accountant=acc)
    start = [p.detach().clone() for p in net.parameters()]
    steps = []
    for _ in range(STEPS):
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(gsm(x[rows]), y[rows], reduction="none")
        if ghost:
            ghost_backward(gsm, opt, loss)
        else:
            loss.mean().backward()
        opt.step()
        steps.append(torch.cat([(p.detach() - s).flatten()
                                for p, s in zip(net.parameters(), start, strict=True)]))
        with torch.no_grad():
            for p, s in zip(net.parameters(), start, strict=True):
                p.copy_(s)
    return torch.stack(steps).double(), acc.total_count("dpsgd")


for ghost in (True, False):
    name = "ghost" if ghost else "classic"
    upd, count = updates(ghost, distributed=True)
    out[f"dpsgd-{name}"] = {"std": float(upd.std(0).mean()), "mean": upd.mean(0).tolist(),
                            "digest": digest([upd]), "steps_recorded": count}
    if rank == 0:
        ref, _ = updates(ghost, distributed=False)
        out[f"dpsgd-{name}"].update(ref_std=float(ref.std(0).mean()), ref_mean=ref.mean(0).tolist(),
                                    std_err=float(ref.std(0).mean() / STEPS**0.5))
out["expected_std"] = Z * C / B
with open(f"{OUT}/result-{rank}.json", "w") as fh:  # ranks share stdout
    json.dump(out, fh)
gwldp_fits(Path(OUT))  # GW-LDP's clients as ranks (tests/methods/test_gwldp.py)
# every rank has written its result before any leaves; then leave the process group (gloo's
# threads otherwise can abort a finished rank at interpreter shutdown, "terminate called
# without an active exception", and Lightning's observer then kills the other rank)
dist.barrier()
dist.destroy_process_group()
