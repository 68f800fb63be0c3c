"""Context trees -> probability tables: m-estimates with back-off, or HDP estimates.

:mod:`.mestimate` (the paper's baseline), :mod:`.hdp` (the paper's method: options, the numba
collapsed Gibbs sampler, results), :mod:`.convergence` (split R-hat, bulk ESS) and
:mod:`.diagnostics` (their summary over a fit's trees), :mod:`.table_io` (one conditional table
from a data file, for ``hdpbn estimate``).
"""

from .convergence import ESS_PER_CHAIN_MIN, RHAT_MAX, effective_sample_size, split_rhat
from .diagnostics import FitDiagnostics, TreeDiagnostics, UnconvergedWarning, summarise_fit
from .hdp import HDPOptions, HDPResult, estimate_tree, estimate_trees
from .mestimate import M_GRID, M_GRID_POSITIVE, m_estimate_table

__all__ = [
    "ESS_PER_CHAIN_MIN",
    "M_GRID",
    "M_GRID_POSITIVE",
    "RHAT_MAX",
    "FitDiagnostics",
    "HDPOptions",
    "HDPResult",
    "TreeDiagnostics",
    "UnconvergedWarning",
    "effective_sample_size",
    "estimate_tree",
    "estimate_trees",
    "m_estimate_table",
    "split_rhat",
    "summarise_fit",
]
