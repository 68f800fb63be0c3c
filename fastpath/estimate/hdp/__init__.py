"""HDP estimates of conditional probability tables (the paper's method).

Files, top to bottom: :mod:`.api` runs the chains (:func:`estimate_tree`, :func:`estimate_trees`),
:mod:`.options` holds :class:`HDPOptions`, :mod:`.results` :class:`HDPResult`, :mod:`.kernels`
the numba collapsed Gibbs sampler and :mod:`.stirling` the log Stirling numbers it needs.
"""

from .api import RATIO_N_MAX, estimate_tree, estimate_trees
from .options import ROOT_TREATMENTS, UPDATES, HDPOptions
from .results import HDPResult, HDPTrace
from .stirling import LogStirlingTable

__all__ = [
    "RATIO_N_MAX",
    "ROOT_TREATMENTS",
    "UPDATES",
    "HDPOptions",
    "HDPResult",
    "HDPTrace",
    "LogStirlingTable",
    "estimate_tree",
    "estimate_trees",
]
