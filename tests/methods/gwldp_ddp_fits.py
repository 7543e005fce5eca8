"""What ``test_gwldp.py::test_clients_as_ddp_ranks_*`` runs on 2 CPU processes (gloo):
:func:`run` is called by ``tests/ddp_fits.py`` inside its launch (one launch of 2 processes
for every DDP check of the suite: starting a process that imports Lightning and PyG costs
seconds); each rank writes what it holds to ``OUT_DIR/gwldp-<rank>.json`` (and rank 0 the
released matrices to ``OUT_DIR/<run>.pt``): the test compares the ranks with each other and
with the same fits on one process. ``python gwldp_ddp_fits.py OUT_DIR`` runs these fits alone
(Lightning's DDP launcher starts rank 1 by re-running it)."""

import hashlib
import json
import sys
import warnings
from pathlib import Path

warnings.filterwarnings("ignore")
sys.path.insert(0, str(Path(__file__).parent))

import lightning as L  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from test_gwldp import RUNS, GWLDPRecording, toy_dm  # noqa: E402

from lightning_dpgnn.methods.gwldp import RELEASE_KEY  # noqa: E402


def digest(tensors) -> str:
    h = hashlib.sha256()
    for t in tensors:
        h.update(t.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def run(out_dir: Path) -> None:
    """The fits of ``RUNS`` with the 5 clients over the 2 ranks of the process group."""
    out = {}
    for name, kwargs in RUNS.items():
        model = GWLDPRecording(**kwargs)
        trainer = L.Trainer(strategy="ddp", devices=2, accelerator="cpu", max_epochs=3,
                            logger=False, enable_checkpointing=False, enable_progress_bar=False,
                            enable_model_summary=False, num_sanity_val_steps=0,
                            default_root_dir=out_dir)
        trainer.fit(model, toy_dm(num_clients=5))
        mats = model.releases[RELEASE_KEY].matrices
        out[name] = {
            "clients": model.clients_run, "params": digest(model.parameters()),
            "release": digest(mats), "ids": model.releases[RELEASE_KEY].graph_ids.tolist(),
            "ledger": [e for state in model.ledgers.state_dict().values()
                       for e in state["ledger"]],
            "epsilon": {n: r.epsilon for n, r in model.privacy_spent().guarantees.items()},
        }
        if dist.get_rank() == 0:
            torch.save({"release": list(mats),
                        "params": [p.detach() for p in model.parameters()]},
                       out_dir / f"{name}.pt")
    (out_dir / f"gwldp-{dist.get_rank()}.json").write_text(json.dumps(out))


if __name__ == "__main__":
    run(Path(sys.argv[1]))
    # every rank has written its result before any leaves; then leave the process group
    # (gloo's threads otherwise can abort a finished rank at interpreter shutdown)
    dist.barrier()
    dist.destroy_process_group()
