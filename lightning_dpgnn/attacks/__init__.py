"""Attacks and empirical audits: evidence about a guarantee beyond its accounted epsilon.

* mechanism audits (an empirical lower bound on epsilon): :func:`audit_aggregation`
  (:func:`audit_mechanism` for a model's own aggregation), :func:`audit_dpsgd`;
* attacks on fitted models: :func:`node_membership_inference` (TSTF shadow-model attack) and
  :func:`link_stealing` (posterior similarity), with :func:`influence_attack` for models one
  can query with chosen features.

The attack math (``audit``, ``dpsgd_audit``, ``membership``, ``link_stealing``) is pure torch;
``shadow`` fits and queries models through Lightning, as a user does.
"""

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
    "AttackAUC",
    "AuditResult",
    "audit_aggregation",
    "audit_dpsgd",
    "audit_mechanism",
    "clopper_pearson",
    "epsilon_lower_bound",
    "fresh_copy",
    "influence_attack",
    "link_stealing",
    "membership_attack",
    "node_membership_inference",
    "posterior_similarity_attack",
    "predict_posteriors",
    "sorted_posteriors",
]
