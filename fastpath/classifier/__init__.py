"""The estimators (:class:`BayesNetClassifier`, :class:`ESKDBClassifier`), their shared base
(:class:`~fastpath.classifier._base.BaseBayesNet`) and their model files (:mod:`._model_io`)."""

from sklearn.exceptions import NotFittedError

from ..pipeline import STRUCTURES
from ._ensemble import ESKDBClassifier
from ._estimator import BayesNetClassifier
from ._loading import load_classifier
from ._model_io import ModelFileError

__all__ = [
    "STRUCTURES",
    "BayesNetClassifier",
    "ESKDBClassifier",
    "ModelFileError",
    "NotFittedError",
    "load_classifier",
]
