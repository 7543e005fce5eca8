"""Renamed arguments: the old name keeps working for a while, with a ``DeprecationWarning``."""

from __future__ import annotations

import warnings
from typing import TypeVar

T = TypeVar("T")


def renamed(owner: str, old: str, new: str, old_value: T | None, new_value: T, why: str) -> T:
    """``new_value``, or ``old_value`` (with a warning naming ``new``) when the caller still
    passes the argument under its old name."""
    if old_value is None:
        return new_value
    warnings.warn(
        f"{owner}({old}=...) is renamed {new} ({why}); {old} will be removed",
        DeprecationWarning,
        stacklevel=3,
    )
    return old_value
