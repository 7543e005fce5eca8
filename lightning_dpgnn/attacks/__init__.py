"""Attacks and empirical audits: evidence about a guarantee beyond its accounted epsilon."""

from .audit import AuditResult, audit_aggregation, clopper_pearson, epsilon_lower_bound
from .dpsgd_audit import audit_dpsgd

__all__ = [
    "AuditResult",
    "audit_aggregation",
    "audit_dpsgd",
    "clopper_pearson",
    "epsilon_lower_bound",
]
