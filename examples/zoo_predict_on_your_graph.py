"""Use a published private model on your own graph.

A data owner trains GAP with edge-level DP on their graph and publishes it (here to a folder;
``model.push_to_hub("org/name")`` publishes to the hub). You load it and predict on *your*
graph, which the model has never seen: the aggregations run on your graph with fresh noise, so
your edges get their own guarantee, reported next to the model's.

    python examples/zoo_predict_on_your_graph.py [--folder DIR]

Runs in about a minute on a laptop CPU (a synthetic graph generated in code, no download).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import lightning as L
import torch
from torch_geometric.data import Data

from lightning_dpgnn import GAP
from lightning_dpgnn.data import NodeDataModule
from lightning_dpgnn.data.synthetic import make_csbm


def two_disjoint_graphs(seed: int = 0) -> tuple[Data, Data]:
    """One community graph cut into two halves with no node in common: the owner's graph and
    yours (same kind of data, different people)."""
    full = make_csbm(num_nodes=4000, seed=seed)
    owner = torch.zeros(full.num_nodes, dtype=torch.bool)
    owner[torch.randperm(full.num_nodes, generator=torch.Generator().manual_seed(seed))[:2000]] = 1
    return full.subgraph(owner), full.subgraph(~owner)


def main(folder: Path, epochs: int = 50) -> dict:
    owner_graph, your_graph = two_disjoint_graphs()

    # -- the data owner: train with edge-level DP and publish -------------------------------
    model = GAP(privacy="edge", epsilon=4.0, encoder_epochs=epochs, classifier_epochs=epochs)
    trainer = L.Trainer(max_epochs=2 * epochs, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(model, NodeDataModule.from_data(owner_graph, name="owner-graph"))
    model.save_pretrained(folder, model_card_kwargs={"dataset": "owner-graph (synthetic)"})

    # -- you: load it and predict on your graph (three lines) --------------------------------
    published = GAP.from_pretrained(folder)
    your_graph.inductive = True  # a new graph: the mechanism runs on it, with fresh noise
    # the labels you already know (here half of your nodes): the model was trained with label
    # counts (the default at edge level), so it counts them around each node; no other is read
    known = torch.rand(your_graph.num_nodes, generator=torch.Generator().manual_seed(1)) < 0.5
    your_graph.train_mask = known
    probs = published.predict_step(your_graph, 0)

    right = probs.argmax(-1)[~known] == your_graph.y[~known]
    accuracy = float(right.float().mean())
    print(f"accuracy on your unlabelled nodes: {accuracy:.3f} (your labels, for your eyes only)")
    print("the model's guarantee (the owner's edges):\n" + str(published.privacy_spent()))
    print("your graph's own cost (your edges):\n" + str(published.last_inference_report))
    return {"accuracy": accuracy, "model": published.privacy_spent(),
            "yours": published.last_inference_report}


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--folder", type=Path, default=None, help="where to publish (default: temp)")
    args = p.parse_args()
    if args.folder is not None:
        main(args.folder)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(Path(tmp) / "gap-edge-owner")
