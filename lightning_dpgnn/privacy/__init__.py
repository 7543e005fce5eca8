"""Mechanisms and accounting. Pure torch/numpy: this package never imports Lightning."""

from .accountant import (
    LEVELS,
    LedgerEntry,
    PrivacyAccountant,
    check_delta,
    check_epsilon,
    resolve_delta,
)
from .calibration import CalibrationError, calibrate_noise_multiplier, gaussian_plan
from .random import SecureModeError, is_secure_mode, secure_mode, set_secure_mode
from .report import PrivacyReport

__all__ = [
    "LEVELS",
    "LedgerEntry",
    "PrivacyAccountant",
    "PrivacyReport",
    "CalibrationError",
    "SecureModeError",
    "calibrate_noise_multiplier",
    "check_delta",
    "check_epsilon",
    "gaussian_plan",
    "is_secure_mode",
    "resolve_delta",
    "secure_mode",
    "set_secure_mode",
]
