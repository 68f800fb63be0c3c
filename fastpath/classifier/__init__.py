"""The estimators (:class:`BayesNetClassifier`, :class:`ESKDBClassifier`) and their model files
(:mod:`.model_io`)."""

from .ensemble import ESKDBClassifier
from .estimator import STRUCTURES, BayesNetClassifier, NotFittedError

__all__ = ["STRUCTURES", "BayesNetClassifier", "ESKDBClassifier", "NotFittedError"]
