"""Declared caches of values derived from a tensor (PyG's ``cached=True`` pattern, with a reset):
keyed by the tensor's identity and a key, never stored on it, bounded, and emptied by
:func:`clear_caches` when a fit ends. Pure torch, a leaf."""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

import torch

__all__ = ["TensorCache", "clear_caches"]

_CACHES: list[TensorCache] = []


class TensorCache:
    """Values computed from a tensor while it lives; ``size`` tensors at most (LRU)."""

    def __init__(self, name: str, size: int = 8) -> None:
        self.name, self.size = name, int(size)
        self._entries: OrderedDict[int, tuple[weakref.ref, Hashable, Any]] = OrderedDict()
        _CACHES.append(self)

    def get(self, tensor: torch.Tensor, key: Hashable) -> Any:
        """The value cached for ``tensor`` under ``key`` (``None``: none)."""
        entry = self._entries.get(id(tensor))
        if entry is None or entry[0]() is not tensor or entry[1] != key:
            return None
        self._entries.move_to_end(id(tensor))
        return entry[2]

    def put(self, tensor: torch.Tensor, key: Hashable, value: Any) -> Any:
        """Cache ``value`` for ``tensor`` under ``key`` (replacing its earlier one)."""
        ident, entries = id(tensor), self._entries

        def forget(ref: weakref.ref, ident: int = ident) -> None:
            entry = entries.get(ident)
            if entry is not None and entry[0] is ref:
                del entries[ident]

        entries[ident] = (weakref.ref(tensor, forget), key, value)
        entries.move_to_end(ident)
        while len(entries) > self.size:
            entries.popitem(last=False)
        return value

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"TensorCache({self.name!r}, {len(self)}/{self.size})"


def clear_caches() -> None:
    """Empty every declared tensor cache."""
    for cache in _CACHES:
        cache.clear()
