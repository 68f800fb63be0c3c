"""fastpath: Bayesian network classifiers with HDP (or m-) estimates, in numpy + numba.

The production package of hdpbn. Data flows one way, one folder per arrow::

    table --io--> DataFrame --encode--> integer codes --structure--> parents + tree specs
          --counts--> context trees --estimate (m | hdp)--> probability tables
          --predict--> P(y | x)

:mod:`fastpath.pipeline` composes these stages into a fit; :mod:`fastpath.scale` runs the same
stages out of core, chunk by chunk, or on Dask; :mod:`fastpath.classifier` is the scikit-learn
estimator on top, and :mod:`fastpath.cli` the ``hdpbn`` command line. ``docs/architecture.md``
draws the layers. Submodules are imported on first use, so ``import fastpath`` stays light.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .version import __version__

if TYPE_CHECKING:  # what a type checker reads; at run time __getattr__ imports on first use
    from .classifier import BayesNetClassifier as BayesNetClassifier
    from .classifier import ESKDBClassifier as ESKDBClassifier
    from .classifier import ModelFileError as ModelFileError
    from .counts import ContextTree as ContextTree
    from .counts import CountAccumulator as CountAccumulator
    from .counts import TreeSpec as TreeSpec
    from .counts import count_tree as count_tree
    from .counts import tying_groups as tying_groups
    from .encode import TableEncoder as TableEncoder
    from .estimate import HDPOptions as HDPOptions
    from .estimate import UnconvergedWarning as UnconvergedWarning
    from .estimate import estimate_tree as estimate_tree
    from .estimate import estimate_trees as estimate_trees
    from .io import load_dataset as load_dataset
    from .io import read_table as read_table
    from .scale import declare_schema as declare_schema
    from .utils import DataWarning as DataWarning

_EXPORTS = {
    "BayesNetClassifier": "classifier",
    "ContextTree": "counts",
    "CountAccumulator": "counts",
    "DataWarning": "utils",
    "ESKDBClassifier": "classifier",
    "HDPOptions": "estimate",
    "ModelFileError": "classifier",
    "TableEncoder": "encode",
    "TreeSpec": "counts",
    "UnconvergedWarning": "estimate",
    "count_tree": "counts",
    "declare_schema": "scale",
    "estimate_tree": "estimate",
    "estimate_trees": "estimate",
    "load_dataset": "io",
    "read_table": "io",
    "tying_groups": "counts",
}

__all__ = [*sorted(_EXPORTS), "__version__"]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module 'fastpath' has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__
