"""lightning-dpgnn: differentially private graph neural networks for PyTorch Lightning."""

__version__ = "0.1.0"
