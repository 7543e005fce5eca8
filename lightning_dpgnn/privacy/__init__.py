"""Mechanisms and accounting. Pure torch/numpy: this package never imports Lightning."""

from .accountant import (
    LEVELS,
    LedgerEntry,
    PrivacyAccountant,
    check_delta,
    check_epsilon,
    resolve_delta,
    units_at_risk,
)
from .aggregation import (
    DegreeBoundError,
    GaussianAggregation,
    check_degree_promise,
    normalize_rows,
    sum_aggregate,
)
from .calibration import CalibrationError, calibrate_noise_multiplier, gaussian_plan
from .degree import PrivateDegreeBound, degree_excess, round_candidates
from .feature_rr import FeatureRR, public_feature_weights
from .graph_ldp import GraphRelease, MatrixMultiBit, PaperCodeGaussian
from .hrg import EdgeRR
from .hyperbolic import HyperbolicGaussian
from .labels import RandomizedResponse
from .lapgraph import LapGraph
from .ldp import (
    AnalyticGaussian,
    Duchi,
    FeatureRandomizer,
    Laplace,
    MultiBit,
    OneBit,
    Piecewise,
    optimal_m,
)
from .ldp_numeric import Hybrid, PMSub, ThreeOutputs
from .local import FEATURE_MECHANISMS, FEATURE_SOURCES, LocalCollection, LocalCollector
from .random import SecureModeError, is_secure_mode, secure_mode, set_secure_mode
from .report import MultipleGuaranteesError, PrivacyReport, SeveralGuarantees, report_from_dict

__all__ = [
    "LEVELS", "LedgerEntry", "PrivacyAccountant", "PrivacyReport", "SeveralGuarantees",
    "MultipleGuaranteesError", "report_from_dict", "PrivateDegreeBound", "degree_excess",
    "round_candidates", "CalibrationError", "DegreeBoundError", "FEATURE_MECHANISMS",
    "FEATURE_SOURCES", "LocalCollection", "LocalCollector", "SecureModeError",
    "calibrate_noise_multiplier", "check_degree_promise", "check_delta", "check_epsilon",
    "gaussian_plan", "is_secure_mode", "resolve_delta", "units_at_risk", "secure_mode",
    "set_secure_mode", "AnalyticGaussian", "Duchi", "FeatureRandomizer", "GraphRelease",
    "MatrixMultiBit", "PaperCodeGaussian", "GaussianAggregation", "HyperbolicGaussian", "Laplace",
    "MultiBit", "OneBit", "Piecewise", "RandomizedResponse", "normalize_rows", "optimal_m",
    "sum_aggregate", "EdgeRR", "LapGraph", "FeatureRR", "public_feature_weights", "Hybrid", "PMSub",
    "ThreeOutputs",
]
