"""Table -> integer codes: the encoder, MDL discretisation, and its streaming sketch.

:class:`TableEncoder` codes nominal columns by their categories and numeric columns by MDL cut
points (:mod:`._discretize`, Fayyad & Irani); :mod:`._sketch` computes the same cut points from
bounded class-conditional histograms when a column cannot be held in memory. The
``stochastic_*`` variants draw each cut among the admissible ones, as ESKDB's members do;
:func:`random_cut_points` cuts at random resolution (members of ``discretization="random"``).
"""

from ._discretize import (
    RANDOM_BINS,
    apply_cut_points,
    mdl_cut_points,
    random_cut_points,
    stochastic_mdl_cut_points,
)
from ._encoder import UNKNOWN, AttributeCoding, TableEncoder, as_frame
from ._sketch import (
    DEFAULT_MAX_BINS,
    ClassHistogram,
    mdl_cut_points_from_counts,
    stochastic_mdl_cut_points_from_counts,
)

__all__ = [
    "DEFAULT_MAX_BINS",
    "RANDOM_BINS",
    "UNKNOWN",
    "AttributeCoding",
    "ClassHistogram",
    "TableEncoder",
    "apply_cut_points",
    "as_frame",
    "mdl_cut_points",
    "mdl_cut_points_from_counts",
    "random_cut_points",
    "stochastic_mdl_cut_points",
    "stochastic_mdl_cut_points_from_counts",
]
