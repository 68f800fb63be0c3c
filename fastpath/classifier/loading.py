"""Load a model file whatever estimator saved it (the command line's ``--model``)."""

from __future__ import annotations

import os

from .base import BaseBayesNet
from .ensemble import ESKDBClassifier
from .estimator import BayesNetClassifier
from .model_io import model_class_name

__all__ = ["load_classifier"]

_CLASSES: dict[str, type[BaseBayesNet]] = {
    cls.__name__: cls for cls in (BayesNetClassifier, ESKDBClassifier)
}


def load_classifier(path: str | os.PathLike) -> BayesNetClassifier | ESKDBClassifier:
    """The fitted estimator in ``path``, of the class that saved it (``ValueError`` naming a
    file that is not a model file, or one of an unknown estimator)."""
    name = model_class_name(path)
    if name not in _CLASSES:
        raise ValueError(f"{os.fspath(path)!r} holds a {name}, which this hdpbn does not know")
    return _CLASSES[name].load(path)
