"""Train GAP with edge-level DP on two CPU processes (Lightning DDP, gloo).

    python examples/ddp_gap.py [--devices 2] [--epsilon 4]

Lightning's DDP launcher starts the other processes by re-running this script; every process
trains a replica, the private aggregation is drawn once (on rank 0) and shared, and the privacy
report is the one a single process would print. Runs in about a minute on a laptop CPU (a
synthetic graph generated in code, no download). On GPUs: ``--accelerator gpu``; on several
machines: see docs/distributed.md.
"""

from __future__ import annotations

import argparse

import lightning as L
from lightning_dpgnn.callbacks import PrivacyBudget

from lightning_dpgnn import GAP
from lightning_dpgnn.data import NodeDataModule


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=2)
    parser.add_argument("--accelerator", default="cpu")
    parser.add_argument("--epsilon", type=float, default=4.0)
    args = parser.parse_args()

    dm = NodeDataModule("csbm", seed=0)
    model = GAP(privacy="edge", epsilon=args.epsilon, hops=2, encoder_epochs=20,
                classifier_epochs=20, seed=0)
    trainer = L.Trainer(
        strategy="ddp", devices=args.devices, accelerator=args.accelerator,
        callbacks=[PrivacyBudget(epsilon=args.epsilon)], logger=False,
        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
    )
    trainer.fit(model, dm)
    acc = trainer.test(model, dm, verbose=False)[0]["test/acc"]
    if trainer.global_rank == 0:  # every rank holds the same model and report
        print(f"test accuracy on {trainer.world_size} processes: {acc:.3f}")
        print(model.privacy_spent())


if __name__ == "__main__":
    main()
