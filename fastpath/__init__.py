"""fastpath: Bayesian network classifiers with HDP (or m-) estimates, in numpy + numba.

The production package of hdpbn. Data flows one way, one module per arrow::

    table --encoding--> integer codes --structure--> parents --counting--> context trees
          --mestimate | hdp--> probability tables --inference--> P(y | x)

The entry point is :class:`BayesNetClassifier` (scikit-learn compatible) and the ``hdpbn``
command line. Submodules are imported on first use, so ``import fastpath`` stays light.
"""

from importlib import import_module
from typing import Any

__version__ = "0.1.0.dev0"

_EXPORTS = {
    "BayesNetClassifier": "classifier",
    "ContextTree": "context_tree",
    "tying_groups": "context_tree",
    "CountAccumulator": "counting",
    "TreeSpec": "counting",
    "count_tree": "counting",
    "TableEncoder": "encoding",
}

__all__ = [*sorted(_EXPORTS), "__version__"]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module 'fastpath' has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__
