"""lightning-dpgnn: differentially private graph neural networks for PyTorch Lightning.

>>> from lightning_dpgnn import GAP
>>> from lightning_dpgnn.data import NodeDataModule
>>> from lightning_dpgnn.callbacks import PrivacyBudget

The names below are imported on first use (PEP 562): ``import lightning_dpgnn`` itself loads
neither Lightning nor PyG, so tools that only need a submodule (the privacy layer, the zoo's
registry) start fast; ``from lightning_dpgnn import GAP`` imports what GAP needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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
    "GWLDP",
    "PoinDP",
    "HeteroRR",
    "PrivateModule",
    "PrivacyReport",
    "plot",
    "__version__",
]

if TYPE_CHECKING:  # pragma: no cover - static analysers see the eager imports
    from .methods import (
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
    from .plotting import plot
    from .privacy import PrivacyReport


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later lookups skip this hook
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
