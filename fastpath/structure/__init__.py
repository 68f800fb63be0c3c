"""Codes -> structure: naive Bayes, TAN, kDB and selective kDB, and the tree specs they give.

:mod:`._scores` computes the mutual informations, :mod:`._graphs` holds :class:`Structure` and its
factories, :mod:`._orders` samples attribute orders in proportion to the mutual information (ESKDB),
:mod:`._selective` the leave-one-out search of selective kDB, and :mod:`._specs` turns a structure
into the :class:`~fastpath.counts.TreeSpec` of every factor.
"""

from ._graphs import (
    STRUCTURE_KINDS,
    Structure,
    kdb,
    kdb_from_scores,
    naive_bayes,
    tan,
    tan_from_scores,
)
from ._orders import sample_order
from ._scores import conditional_mutual_information, mutual_information
from ._selective import (
    ENSEMBLE_SELECTION_ROWS,
    SelectedStructure,
    loo_scores,
    select_skdb,
    selective_structure,
)
from ._specs import tree_specs

__all__ = [
    "ENSEMBLE_SELECTION_ROWS",
    "STRUCTURE_KINDS",
    "SelectedStructure",
    "Structure",
    "conditional_mutual_information",
    "kdb",
    "kdb_from_scores",
    "loo_scores",
    "mutual_information",
    "naive_bayes",
    "sample_order",
    "select_skdb",
    "selective_structure",
    "tan",
    "tan_from_scores",
    "tree_specs",
]
