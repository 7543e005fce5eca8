"""lightning-dpgnn: differentially private graph neural networks for PyTorch Lightning
(``from lightning_dpgnn import GAP``); the names below are imported on first use (PEP 562)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_exports

__version__ = "0.1.0"

#: public name -> the submodule that defines it
_EXPORTS = {
    "GAP": "methods",
    "ProGAP": "methods",
    "GNN": "methods",
    "MLP": "methods",
    "DPMLP": "methods",
    "SAGE": "methods",
    "EdgeRand": "methods",
    "DPGNN": "methods",
    "LPGNN": "methods",
    "PGC": "methods",
    "PGCLinkPrediction": "methods",
    "GWLDP": "methods",
    "PoinDP": "methods",
    "HeteroRR": "methods",
    "PrivateModule": "methods",
    "PrivacyReport": "privacy",
    "plot": "plotting",
}

__all__ = [*_EXPORTS, "__version__"]

if TYPE_CHECKING:  # pragma: no cover - static analysers see the eager imports
    from .methods import (  # noqa: F401 - exported lazily, see _EXPORTS
        DPGNN,
        DPMLP,
        GAP,
        GNN,
        GWLDP,
        LPGNN,
        MLP,
        PGC,
        SAGE,
        EdgeRand,
        HeteroRR,
        PGCLinkPrediction,
        PoinDP,
        PrivateModule,
        ProGAP,
    )
    from .plotting import plot  # noqa: F401
    from .privacy import PrivacyReport  # noqa: F401


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
