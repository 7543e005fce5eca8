"""One LightningModule per method, thin over ``privacy/`` and ``nn/``."""

from .base import PrivateModule
from .gap import GAP
from .gnn import GNN
from .lpgnn import LPGNN
from .mlp import DPMLP, MLP
from .pgc import PGC, PGCLinkPrediction
from .progap import ProGAP

__all__ = [
    "PrivateModule",
    "GAP",
    "GNN",
    "MLP",
    "DPMLP",
    "LPGNN",
    "PGC",
    "PGCLinkPrediction",
    "ProGAP",
]
