"""The accounting of a private model (``model.ledgers``): its guarantees (its own,
``model.accountant``, and others over other units, never added), delta, the noise multiplier
calibrated from what the method declares it will spend, the reports (the only source of
epsilon) and the privacy state checkpoints and published models hold.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from lightning.fabric.utilities.apply_func import apply_to_collection
from torch import Tensor
from torch_geometric.data import Data

from ..levels import EDGE_UNITS, Level, Unit
from ..privacy import (
    PrivacyAccountant,
    PrivacyReport,
    SeveralGuarantees,
    check_epsilon,
    resolve_delta,
)
from ..privacy.accountant import DELTA_RULES
from ..privacy.calibration import calibrate_noise_multiplier
from ..privacy.guarantee import Guarantee, default_words

__all__ = ["Ledgers", "calibrated", "check_privacy_arguments", "checkpoint_state", "no_privacy",
           "unit_of", "to_host", "CHECKPOINT_KEY"]

Report = PrivacyReport | SeveralGuarantees
#: where a checkpoint holds :meth:`Ledgers.privacy_state`
CHECKPOINT_KEY = "dpgnn_privacy"


def to_host(obj: Any) -> Any:
    """``obj`` with every tensor in it on the CPU (what checkpoints and the hub store)."""
    return apply_to_collection(obj, Tensor, lambda t: t.cpu())


def check_privacy_arguments(
    privacy: str,
    levels: tuple[str, ...],
    epsilon: float | None,
    delta: float | str | None,
    edge_unit: str,
    noise_seed: int | None,
    owner: str = "this method",
) -> tuple[Level, float | None]:
    """The level of ``privacy`` and the target epsilon (``inf`` without privacy; ``None``: no
    target), after checking the privacy arguments; ``epsilon=math.inf`` gives level ``none``."""
    if privacy not in levels:
        raise ValueError(f"privacy must be one of {levels}, got {privacy!r}")
    level = Level.of(privacy)
    if level.private and no_privacy(epsilon):
        if Level.NONE.value not in levels:
            raise ValueError(
                f"epsilon=math.inf means no privacy, and {owner} is private only "
                f"(privacy in {levels}): give a finite epsilon > 0, or use a method with "
                "privacy='none' (GAP, ProGAP, MLP, SAGE, GNN)"
            )
        level = Level.NONE
    if not level.private or epsilon is None:
        target = None if level.private else math.inf
    else:
        target = check_epsilon(epsilon)
    if not (delta in DELTA_RULES or delta is None or isinstance(delta, (int, float))):
        raise ValueError(f"delta must be a number in (0, 1), 'auto' or 'paper', got {delta!r}")
    if isinstance(delta, (int, float)) and not isinstance(delta, bool):
        if not 0 < float(delta) < 1:
            raise ValueError(f"delta must be in the open interval (0, 1), got {delta!r}")
    if edge_unit not in EDGE_UNITS:
        raise ValueError(f"edge_unit must be one of {EDGE_UNITS}, got {edge_unit!r}")
    if noise_seed is not None and (isinstance(noise_seed, bool) or not isinstance(
        noise_seed, int
    )):
        raise ValueError(f"noise_seed must be an integer or None, got {noise_seed!r}")
    return level, target


def no_privacy(epsilon: Any) -> bool:
    """Whether a budget is ``math.inf``: no privacy for that input."""
    return isinstance(epsilon, (int, float)) and not isinstance(epsilon, bool) and (
        math.isinf(epsilon) and epsilon > 0)


def checkpoint_state(checkpoint: dict[str, Any]) -> dict[str, Any]:
    """The privacy state a Lightning checkpoint holds (an error without it: unknown spend)."""
    state = checkpoint.get(CHECKPOINT_KEY)
    if state is None:
        raise KeyError(
            f"checkpoint has no '{CHECKPOINT_KEY}' entry: it was not written by a "
            "lightning-dpgnn model, so its privacy spend is unknown"
        )
    return state


def unit_of(level: Level, edge_unit: str) -> str:
    """The protected unit of the model's own guarantee, in words."""
    return Unit(level, edge_unit if level is Level.EDGE else None).describe()


def calibrated(
    plan: Callable[[float], PrivacyAccountant],
    z: float | None,
    target: float | None,
    delta: float | None = None,
    name: str = "noise_multiplier",
) -> float:
    """The one calibration path: the smallest noise multiplier whose ``plan`` (the ledger of the
    whole fit at ``z``) meets ``target`` at ``delta``, or the fixed ``z`` checked against it."""
    if z is None:
        if target is None:
            raise ValueError(f"give epsilon (to calibrate the noise) or a {name}")
        return calibrate_noise_multiplier(plan, target, delta)
    if target is not None:
        spend = plan(z).epsilon()
        if spend > target * (1 + 1e-9):
            raise ValueError(
                f"{name}={z:g} would spend epsilon {spend:.4g} > target {target:g}; leave it "
                "unset to calibrate"
            )
    return z


class Ledgers:
    """The guarantees of ``module`` and what they spend (it reads the module's attributes and
    declared hooks, and holds no Lightning state)."""

    def __init__(self, module: Any) -> None:
        self.module = module
        #: the guarantees besides the model's own, by name (:meth:`declare`)
        self._others: dict[str, Guarantee] = {}

    # -- the guarantees --------------------------------------------------------------------
    def declare(
        self,
        name: str,
        level: str,
        unit: str,
        delta: float | None = None,
        epsilon: float | None = None,
    ) -> PrivacyAccountant:
        """Declare a guarantee besides the model's own, over another unit (e.g. features under
        local DP beside edges): its releases record on its accountant, and the report carries
        both, never added. ``epsilon``: its target."""
        m = self.module
        if m.guarantee_name is None:
            raise ValueError(
                f"{type(m).__name__}: name the model's own guarantee (guarantee_name) before "
                "declaring another one"
            )
        if name == m.guarantee_name or name in self._others:
            raise ValueError(f"a guarantee named {name!r} is already declared")
        target = None if epsilon is None else check_epsilon(epsilon, f"{name}: epsilon")
        acc = PrivacyAccountant(level, delta, unit=unit)
        self._others[name] = Guarantee(name, acc, target)
        return acc

    def guarantees(self) -> list[Guarantee]:
        """The model's guarantees, its own first: each with its level, unit, accountant,
        target, and in words what it protects, uses in the clear and holds only under."""
        m = self.module
        target = m.target_epsilon
        own = Guarantee(m.guarantee_name or m.level.value, m.accountant,
                        target if target is not None and math.isfinite(target) else None)
        return [self._described(g) for g in (own, *self._others.values())]

    def _described(self, g: Guarantee) -> Guarantee:
        """``g`` with its words and conditions (the method's data, else the level's)."""
        m, level = self.module, g.level
        protects, public = m.guarantee_words.get(level.value) or default_words(
            level, m.labels_private())
        conditions = m.guarantee_conditions.get(level.value, ())
        bound = m.hparams.get("max_degree") if level is Level.NODE else None
        if bound is not None:
            conditions = (f"on graphs whose every in- and out-degree is at most D = {bound} "
                          "(the fit refuses graphs above it)", *conditions)
        return replace(g, protects=protects, public=public, conditions=conditions)

    @property
    def others(self) -> dict[str, PrivacyAccountant]:
        """The accountants of the guarantees besides the model's own, by name."""
        return {n: g.accountant for n, g in self._others.items()}

    def of(self, guarantee: str | None) -> PrivacyAccountant:
        """The accountant of ``guarantee`` (``None``: the model's own)."""
        m = self.module
        if guarantee is None or guarantee == m.guarantee_name:
            return m.accountant
        try:
            return self._others[guarantee].accountant
        except KeyError:
            raise KeyError(
                f"{type(m).__name__} declares no guarantee named {guarantee!r}"
            ) from None

    def for_new_graph(self, graph: Data | None, guarantee: str | None = None) -> PrivacyAccountant:
        """A new graph's own ledger of ``guarantee`` (disjoint data: parallel composition), its
        delta from its own units."""
        m = self.module
        if guarantee is not None and guarantee != m.guarantee_name:
            own = self.of(guarantee)
            return PrivacyAccountant(own.level, own.delta, unit=own.unit)
        delta = None
        if m.level.central:
            delta = resolve_delta(m.target_delta, m.private_units(graph))
        elif m.level is Level.LDP:
            delta = m.accountant.delta
        return PrivacyAccountant(m.privacy, delta, unit=m.accountant.unit)

    # -- delta -------------------------------------------------------------------------------
    def units(self, data: Data) -> int:
        """The protected units of ``data``: undirected or directed edges, or nodes."""
        m = self.module
        if m.level is Level.EDGE:
            units = data.num_edges // 2 if m.edge_unit == "undirected" else data.num_edges
            if units < 1:
                raise ValueError(
                    f"{type(m).__name__}: the graph has no edges, so edge-level DP has "
                    "nothing to protect (and the model nothing to aggregate); check the edge "
                    "list, or train an MLP"
                )
        else:
            units = data.num_nodes
        return max(int(units), 1)

    def resolve_delta(self, data: Data) -> float | None:
        """Fix delta once the private units are known (edges or nodes)."""
        m = self.module
        if not m.level.private:
            return None
        if m.accountant.delta is not None and m.target_delta in DELTA_RULES:
            return m.accountant.delta  # already resolved (e.g. restored from a checkpoint)
        m.accountant.delta = resolve_delta(m.target_delta, m.private_units(data))
        return m.accountant.delta

    # -- calibrate ---------------------------------------------------------------------------
    def planned_accountant(self, noise_multiplier: float | None) -> PrivacyAccountant | None:
        """What has been spent plus the plan of the rest (``None``: open-ended)."""
        acc = self.module.accountant.copy()
        return acc if self.module.plan_mechanisms(acc, noise_multiplier) else None

    def closed_plan(self, z: float) -> PrivacyAccountant:
        """The ledger of the whole fit at ``z`` (what calibration solves over)."""
        acc = self.module.accountant.copy()
        if not self.module.plan_mechanisms(acc, z):  # only a fit without a target is open-ended
            raise RuntimeError(
                f"{type(self.module).__name__}: an open-ended plan cannot be calibrated")
        return acc

    def calibrate(self) -> None:
        """Solve the noise multiplier for the target epsilon, or check a fixed one."""
        m = self.module
        if not m.level.private or not m.calibrates_noise():
            return
        fixed = m.noise_multiplier is not None
        z = calibrated(self.closed_plan, m.noise_multiplier, m.target_epsilon, m.accountant.delta)
        if not fixed:
            m.noise_multiplier = m.hparams["noise_multiplier"] = z

    # -- reports -----------------------------------------------------------------------------
    def report(
        self, own: PrivacyAccountant, others: dict[str, PrivacyAccountant] | None = None
    ) -> Report:
        """The report of ``own`` (and of the other guarantees' accountants, never added)."""
        m = self.module
        main = PrivacyReport.from_accountant(own, private=m.level.private)
        if not self._others:
            return main
        others = self.others if others is None else others
        return SeveralGuarantees(((m.guarantee_name, main), *(
            (n, g.report(others[n])) for n, g in self._others.items())))

    def graph_report(self, ledgers: dict[str | None, PrivacyAccountant]) -> Report:
        """The report of a new graph's ledgers (every guarantee, drawn on it or not)."""
        others = {n: a for n, a in ledgers.items() if n is not None}
        if self._others:
            others = {n: others.get(n) or self.module.inductive_accountant(None, n)
                      for n in self._others}
        return self.report(ledgers[None], others)

    def spent(self) -> Report:
        """The guarantee(s) of what has run so far — the only source of epsilon."""
        return self.report(self.module.accountant)

    def planned(self) -> Report | None:
        """Spend of the whole fit (``None`` when it cannot be known in advance)."""
        m = self.module
        if not m.level.private:
            return self.spent()
        acc = self.planned_accountant(m.noise_multiplier)
        if acc is None:
            return None
        others = {}
        for name, spent in self.others.items():
            others[name] = spent.copy()
            m.releases.plan(others[name], m.noise_multiplier, guarantee=name)
        return self.report(acc, others)

    def if_next_step(self) -> Report | None:
        """Spend if one more optimizer step ran; ``None`` when steps read no private data."""
        m = self.module
        phase = m.dpsgd_phase()
        if phase is None or m.noise_multiplier is None:
            return None
        acc = m.accountant.copy()
        phase.plan(acc, m.noise_multiplier, 1)
        return self.report(acc)

    # -- state -------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Every accountant's state: the model's own (key ``""``), then the others'."""
        return {"": self.module.accountant.state_dict(),
                **{n: a.state_dict() for n, a in self.others.items()}}

    def load_state_dict(self, states: dict[str, Any]) -> None:
        for name, state in states.items():
            self.of(name or None).load_state_dict(state)

    def privacy_state(self) -> dict[str, Any]:
        """What a checkpoint and a published model hold besides parameters and
        hyper-parameters (invariant releases-only)."""
        m = self.module
        return {
            "guarantees": {n: a.state_dict() for n, a in self.others.items()},
            "accountant": m.accountant.state_dict(),
            "report": self.spent().to_dict(),
            "noise_multiplier": m.noise_multiplier,
            # CPU tensors: a checkpoint of a GPU fit loads anywhere
            "outputs": to_host(m.mechanism_outputs()),
            "public": to_host(m.public_state()),
            "halted": m.privacy_halted,
        }

    def load_privacy_state(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`privacy_state` returned (never re-running a mechanism)."""
        m = self.module
        m.accountant.load_state_dict(state["accountant"])
        for name, acc_state in state.get("guarantees", {}).items():
            self.of(name).load_state_dict(acc_state)
        m.noise_multiplier = state.get("noise_multiplier", m.noise_multiplier)
        m.releases.load_state_dict(state.get("outputs", {}))
        m.on_releases_changed(list(m.releases.declared), restored=True)
        m.load_public_state(state.get("public", {}))
        m.privacy_halted = bool(state.get("halted", False))
