"""The estimators (:class:`BayesNetClassifier`, :class:`ESKDBClassifier`), their shared base
(:class:`~fastpath.classifier.base.BaseBayesNet`) and their model files (:mod:`.model_io`)."""

from .ensemble import ESKDBClassifier
from .estimator import STRUCTURES, BayesNetClassifier, NotFittedError
from .loading import load_classifier

__all__ = [
    "STRUCTURES",
    "BayesNetClassifier",
    "ESKDBClassifier",
    "NotFittedError",
    "load_classifier",
]
