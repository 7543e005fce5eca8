"""Renamed arguments: the old name keeps working for a while, with a ``DeprecationWarning``."""

from __future__ import annotations

import math
import warnings
from typing import Any, TypeVar

T = TypeVar("T")

#: why LPGNN's and PGC's budgets were renamed (``x_eps`` -> ``x_epsilon``, ``y_eps`` ->
#: ``y_epsilon``)
BUDGET_NAMES = "one spelling for every budget: epsilon, x_epsilon, y_epsilon"
#: why ``None`` budgets became ``math.inf`` (HeteroRR's "no release, the input is public")
NO_PRIVACY = "one spelling of 'no privacy' for every budget: math.inf"


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


def no_privacy_alias(owner: str, name: str, value: Any) -> Any:
    """``value``, or ``math.inf`` (with a warning naming it) when the caller still spells
    "no privacy for this input" as ``name=None``."""
    if value is not None:
        return value
    warnings.warn(
        f"{owner}({name}=None) is deprecated: write {name}=math.inf ({NO_PRIVACY}); None will "
        "be removed",
        DeprecationWarning,
        stacklevel=4,
    )
    return math.inf
