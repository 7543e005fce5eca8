"""GW-LDP in a few seconds: 60 MUTAG graphs over 5 clients, FedAvg of a GCN, the locally
private release of every graph's node embeddings, GW on the server, SVM on the GW kernel.

    DPGNN_DATA=../shared/datasets python examples/gwldp_mutag.py
"""

from __future__ import annotations

import lightning as L
import torch
from lightning_dpgnn.callbacks import PrivacyBudget

from lightning_dpgnn import GWLDP
from lightning_dpgnn.data import GraphDataModule, load_graph_dataset


def main() -> None:
    mutag = load_graph_dataset("mutag")
    # 60 graphs drawn by a public seed (no label read), over 5 clients by the default
    # partition (keyed by the graphs' identities: no label read either)
    keep = torch.randperm(len(mutag), generator=torch.Generator().manual_seed(0))[:60]
    dm = GraphDataModule("mutag-60", graphs=[mutag[int(i)] for i in keep],
                         split=(0.7, 0.2, 0.1), num_clients=5)
    model = GWLDP(epsilon=8.0, gnn="gcn", local_epochs=2, seed=0,
                  svm_c_grid=[0.1, 1.0, 10.0], svm_gamma_grid=[0.5, 2.0, 8.0])
    trainer = L.Trainer(max_epochs=10, callbacks=[PrivacyBudget(epsilon=8.0)], logger=False,
                        enable_checkpointing=False, enable_progress_bar=False)
    trainer.fit(model, dm)
    out = trainer.test(model, dm, verbose=False)[0]
    print(f"federated GCN test accuracy: {out['test/acc']:.3f}")
    print(f"SVM on the GW kernel of the released embeddings: {out['test/svm_acc']:.3f}")
    print(model.privacy_spent())


if __name__ == "__main__":
    main()
