"""lightning-dpgnn: differentially private graph neural networks for PyTorch Lightning.

>>> from lightning_dpgnn import GAP
>>> from lightning_dpgnn.data import NodeDataModule
>>> from lightning_dpgnn.callbacks import PrivacyBudget
"""

from .methods import DPMLP, GAP, GNN, LPGNN, MLP, PrivateModule, ProGAP
from .privacy import PrivacyReport

__version__ = "0.1.0"

__all__ = [
    "GAP",
    "ProGAP",
    "GNN",
    "MLP",
    "DPMLP",
    "LPGNN",
    "PrivateModule",
    "PrivacyReport",
    "__version__",
]
