"""Attacks and empirical audits: evidence about a guarantee beyond its accounted epsilon
(docs/audits.md). The attack math is pure torch; :mod:`.shadow` fits and queries models through
Lightning, as a user does."""

from .audit import (
    AuditResult,
    audit_aggregation,
    audit_mechanism,
    clopper_pearson,
    epsilon_lower_bound,
)
from .dpsgd_audit import audit_dpsgd
from .link_stealing import influence_attack, posterior_similarity_attack
from .membership import AttackAUC, membership_attack, sorted_posteriors
from .shadow import fresh_copy, link_stealing, node_membership_inference, predict_posteriors

__all__ = [
    "AttackAUC", "AuditResult", "audit_aggregation", "audit_dpsgd", "audit_mechanism",
    "clopper_pearson", "epsilon_lower_bound", "fresh_copy", "influence_attack", "link_stealing",
    "membership_attack", "node_membership_inference", "posterior_similarity_attack",
    "predict_posteriors", "sorted_posteriors",
]
