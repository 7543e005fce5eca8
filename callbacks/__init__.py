"""Lightning callbacks of lightning-dpgnn (importable as ``lightning_dpgnn.callbacks``)."""

from .drop_early_stopping import DropEarlyStopping
from .privacy_audit import PrivacyAudit
from .privacy_budget import BudgetExceededError, PrivacyBudget

__all__ = ["PrivacyBudget", "BudgetExceededError", "DropEarlyStopping", "PrivacyAudit"]
