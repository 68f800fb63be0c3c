"""Load a model file whatever estimator saved it (the command line's ``--model``)."""

from __future__ import annotations

import os

from .ensemble import ESKDBClassifier
from .estimator import BayesNetClassifier
from .model_io import ENSEMBLE, read_model_meta

__all__ = ["load_classifier"]


def load_classifier(path: str | os.PathLike) -> BayesNetClassifier | ESKDBClassifier:
    """The fitted estimator in ``path``: an :class:`ESKDBClassifier` for an ensemble's file, a
    :class:`BayesNetClassifier` otherwise (``ValueError`` naming a file that is neither)."""
    if read_model_meta(path)["format"] == ENSEMBLE:
        return ESKDBClassifier.load(path)
    return BayesNetClassifier.load(path)
