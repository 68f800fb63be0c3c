"""Load a model file whatever classifier saved it (the command line's ``--model``)."""

from __future__ import annotations

import os

from ._base import BaseBayesNet
from ._ensemble import ESKDBClassifier
from ._estimator import BayesNetClassifier
from ._model_io import ModelFileError, model_class_name, with_article

_CLASSES: dict[str, type[BaseBayesNet]] = {
    cls.__name__: cls for cls in (BayesNetClassifier, ESKDBClassifier)
}


def load_classifier(path: str | os.PathLike) -> BayesNetClassifier | ESKDBClassifier:
    """The fitted classifier in ``path``, of the class that saved it
    (:class:`~fastpath.classifier.ModelFileError`, a ``ValueError``, naming a file that is not
    a model file, or one of an unknown classifier; ``FileNotFoundError`` for a missing one)."""
    name = model_class_name(path)
    if name not in _CLASSES:
        raise ModelFileError(f"{os.fspath(path)!r} holds {with_article(name)}, which this "
                             "hdpbn does not know")
    return _CLASSES[name].load(path)
