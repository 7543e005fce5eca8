"""The constructor arguments of a model class, through PyG-style ``**kwargs`` forwarding."""

from __future__ import annotations

import inspect


def init_arguments(cls: type) -> set[str]:
    """Names ``cls(...)`` accepts: its ``__init__``'s, and where that forwards ``**kwargs`` to
    its bases (GAP -> AggregationPerturbationModule, SAGE -> its base), theirs too.

    Rebuilding a model from its ``hparams`` (the hub's config, an attack's shadow model) must
    keep the forwarded settings, or the copy silently gets the defaults."""
    names: set[str] = set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        params = inspect.signature(init).parameters.values()
        names |= {p.name for p in params if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
        if not any(p.kind == p.VAR_KEYWORD for p in params):
            break
    names.discard("self")
    return names
