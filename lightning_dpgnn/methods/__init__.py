"""One LightningModule per method, thin over ``privacy/`` and ``nn/``."""

from .base import PrivateModel, PrivateModule, require_private_model
from .dpgnn import DPGNN
from .gap import GAP
from .gnn import GNN
from .gwldp import GWLDP
from .heterorr import HeteroRR, HeteroRRRelease
from .lpgnn import LPGNN
from .mlp import DPMLP, MLP
from .pgc import PGC, PGCLinkPrediction
from .poindp import PoinDP, PoinDPPaperCode
from .progap import ProGAP
from .sage import SAGE, EdgeRand

__all__ = [
    "PrivateModel",
    "PrivateModule",
    "require_private_model",
    "GAP",
    "GNN",
    "GWLDP",
    "MLP",
    "DPMLP",
    "LPGNN",
    "PGC",
    "PGCLinkPrediction",
    "ProGAP",
    "SAGE",
    "EdgeRand",
    "DPGNN",
    "PoinDP",
    "PoinDPPaperCode",
    "HeteroRR",
    "HeteroRRRelease",
]
