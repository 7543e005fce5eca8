"""lightning-dpgnn: differentially private graph neural networks for PyTorch Lightning.

>>> from lightning_dpgnn import GAP
>>> from lightning_dpgnn.data import NodeDataModule
>>> from lightning_dpgnn.callbacks import PrivacyBudget
"""

from .methods import (
    DPGNN,
    DPMLP,
    GAP,
    GNN,
    LPGNN,
    MLP,
    PGC,
    SAGE,
    EdgeRand,
    PGCLinkPrediction,
    PrivateModule,
    ProGAP,
)
from .plotting import plot
from .privacy import PrivacyReport

__version__ = "0.1.0"

__all__ = [
    "GAP",
    "ProGAP",
    "GNN",
    "MLP",
    "DPMLP",
    "SAGE",
    "EdgeRand",
    "DPGNN",
    "LPGNN",
    "PGC",
    "PGCLinkPrediction",
    "PrivateModule",
    "PrivacyReport",
    "plot",
    "__version__",
]
