"""Context trees -> probability tables: m-estimates with back-off, HDP, HGS or HLS estimates.

:mod:`._mestimate` (the paper's baseline), :mod:`.hdp` (the paper's method: options, the numba
collapsed Gibbs sampler, results), :mod:`._hgs` and :mod:`._hls` (its successors: hierarchical
gradient smoothing, Zhang, Petitjean & Buntine 2020, and hierarchical linear smoothing,
Cooper, Webb & Schmidt 2025), :mod:`._convergence` (split R-hat, bulk ESS) and
:mod:`._diagnostics` (their summary over a fit's trees), :mod:`._table_io` (one conditional table
from a data file, for ``hdpbn estimate``).
"""

from ._convergence import ESS_PER_CHAIN_MIN, RHAT_MAX, effective_sample_size, mcse_mean, split_rhat
from ._diagnostics import FitDiagnostics, TreeDiagnostics, UnconvergedWarning, summarise_fit
from ._hgs import HGSFit, hgs_fit, hgs_loo_loss, hgs_table
from ._hls import HLSFit, hls_fit, hls_table
from ._hls_options import HLS_C, HLSOptions
from ._mestimate import M_GRID, M_GRID_POSITIVE, m_estimate_table
from ._table_io import CodedTree, node_frame, read_estimate_table, tree_from_frame
from .hdp import HDPOptions, HDPResult, estimate_tree, estimate_trees

__all__ = [
    "ESS_PER_CHAIN_MIN",
    "HLS_C",
    "M_GRID",
    "M_GRID_POSITIVE",
    "RHAT_MAX",
    "CodedTree",
    "FitDiagnostics",
    "HDPOptions",
    "HDPResult",
    "HGSFit",
    "HLSFit",
    "HLSOptions",
    "TreeDiagnostics",
    "UnconvergedWarning",
    "effective_sample_size",
    "estimate_tree",
    "estimate_trees",
    "hgs_fit",
    "hgs_loo_loss",
    "hgs_table",
    "hls_fit",
    "hls_table",
    "m_estimate_table",
    "mcse_mean",
    "node_frame",
    "read_estimate_table",
    "split_rhat",
    "summarise_fit",
    "tree_from_frame",
]
