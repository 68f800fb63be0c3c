"""HDP estimates of conditional probability tables (the paper's method).

Files, top to bottom: :mod:`._api` runs the chains (:func:`estimate_tree`, :func:`estimate_trees`),
:mod:`._options` holds :class:`HDPOptions` and the samplers' presets, :mod:`._results`
:class:`HDPResult`, :mod:`._stopping` the adaptive length's rule (:func:`rows_mcse`),
:mod:`._kernels` the numba collapsed Gibbs sampler and :mod:`._stirling` the log Stirling numbers
it needs (:func:`log_stirling`, with the exact and asymptotic forms it combines).
"""

from ._api import RATIO_N_MAX, estimate_tree, estimate_trees
from ._options import (
    DEFAULT_ENSEMBLE_SAMPLER,
    DEFAULT_SAMPLER,
    PAPER_ITERATIONS,
    ROOT_TREATMENTS,
    SAMPLER_PRESETS,
    UPDATES,
    HDPOptions,
)
from ._results import HDPResult, HDPTrace
from ._stirling import (
    N_EXACT,
    T_EDGE,
    LogStirlingTable,
    log_stirling,
    log_stirling_large,
    log_stirling_reference,
)
from ._stopping import rows_mcse

__all__ = [
    "DEFAULT_ENSEMBLE_SAMPLER",
    "DEFAULT_SAMPLER",
    "N_EXACT",
    "PAPER_ITERATIONS",
    "RATIO_N_MAX",
    "ROOT_TREATMENTS",
    "SAMPLER_PRESETS",
    "T_EDGE",
    "UPDATES",
    "HDPOptions",
    "HDPResult",
    "HDPTrace",
    "LogStirlingTable",
    "estimate_tree",
    "estimate_trees",
    "log_stirling",
    "log_stirling_large",
    "log_stirling_reference",
    "rows_mcse",
]
