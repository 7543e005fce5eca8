"""Quiet by default: the warnings and info lines the library causes in Lightning, dropped while a
``dpgnn`` command runs or a method fits; a user's own warnings pass. A leaf module."""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterator

__all__ = ["NOISE_LOGS", "NOISE_WARNINGS", "quiet_lightning"]

#: warnings that say nothing to a user of the library (regexes on the message)
NOISE_WARNINGS = (
    r".*isinstance\(treespec, LeafSpec\).*",  # Lightning's own deprecation, not the user's
    r".*does not have many workers.*",  # one full-batch graph: a worker has nothing to load
    r".*smaller than the logging interval.*",  # one batch per epoch: logged per epoch anyway
    r".*sync_dist=True.*",  # the methods reduce their metrics themselves
    r"Full backward hook is firing.*",  # opacus' hooks on a frozen first layer (DP-SGD)
    r".*The dirpath has changed from.*",  # test/predict --ckpt_path in another folder
    r".*configure_optimizers` returned `None`.*",  # GW-LDP steps its clients itself (FedAvg)
)
#: Lightning's info lines that say nothing to a user of the library (prefixes)
NOISE_LOGS = ("💡 Tip", "GPU available: False", "TPU available: False", "HPU available: False")
#: the loggers Lightning writes its info lines to (``rank_zero_info``'s first)
LOGGERS = ("lightning.pytorch.utilities.rank_zero", "lightning.fabric.utilities.rank_zero")


class DropLines(logging.Filter):
    """Drops the log lines that start with one of ``prefixes``."""

    def __init__(self, prefixes: tuple[str, ...]) -> None:
        super().__init__()
        self.prefixes = prefixes

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.getMessage()).startswith(self.prefixes)


@contextlib.contextmanager
def quiet_lightning() -> Iterator[None]:
    """Drop :data:`NOISE_WARNINGS`, Lightning's deprecation warnings and :data:`NOISE_LOGS`
    inside the block; undone on exit (a fit may run inside a test or a notebook)."""
    noise = DropLines(NOISE_LOGS)
    loggers = [logging.getLogger(name) for name in LOGGERS]
    with warnings.catch_warnings():
        for pattern in NOISE_WARNINGS:
            warnings.filterwarnings("ignore", message=pattern)
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"lightning\..*")
        for logger in loggers:
            logger.addFilter(noise)
        try:
            yield
        finally:
            for logger in loggers:
                logger.removeFilter(noise)


@contextlib.contextmanager
def quiet_sparse() -> Iterator[None]:
    """Drop torch's notices on building sparse CSR/COO tensors from checked graphs."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*Sparse CSR tensor support is in beta.*")
        warnings.filterwarnings("ignore", message=".*Sparse invariant checks are implicitly.*")
        yield
