"""Exceptions raised by :mod:`lightning_dpgnn.data`: each subclasses :class:`DataError` and the
matching built-in exception (:class:`ValueError`, ...), so callers can catch either."""

from __future__ import annotations


class DataError(Exception):
    """Base class of all errors raised by the data layer."""


class UnknownDatasetError(DataError, ValueError):
    """The dataset name is not registered (the message lists the known names)."""


class RawFilesNotFoundError(DataError, FileNotFoundError):
    """The raw files of a dataset are missing (the message names the paths and how to get them)."""


class UnknownTargetError(DataError, ValueError):
    """The requested target column does not exist (the message lists the valid ones)."""


class InvalidSplitError(DataError, ValueError):
    """Split fractions are negative, do not sum to 1, or name an unknown preset."""


class InvalidFeaturesError(DataError, ValueError):
    """Node features contain NaN or infinite values (or are otherwise unusable)."""


class DatasetKindError(DataError, ValueError):
    """A graph-classification dataset was given where a node dataset is needed, or vice versa."""


class EmptyDatasetError(DataError, ValueError):
    """Preprocessing (e.g. the class-size filter) removed every class or every node."""


class CorruptDataError(DataError, ValueError):
    """A raw data file cannot be parsed, or the graph read from it is not the known dataset (the
    message names the file and what to do; nothing is written to the processed cache)."""


class CorruptCacheError(DataError, RuntimeError):
    """A processed-cache entry is unreadable or does not match its manifest (it is rebuilt)."""
