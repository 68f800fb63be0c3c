"""Codes -> structure: naive Bayes, TAN, kDB and selective kDB, and the tree specs they give.

:mod:`.graphs` holds the scores (mutual information, conditional mutual information) and the
:class:`Structure` factories; :mod:`.selective` the leave-one-out search of selective kDB;
:mod:`.specs` turns a structure into the :class:`~fastpath.counts.TreeSpec` of every factor.
"""

from .graphs import (
    STRUCTURE_KINDS,
    Structure,
    conditional_mutual_information,
    kdb,
    kdb_from_scores,
    mutual_information,
    naive_bayes,
    tan,
    tan_from_scores,
)
from .selective import SelectedStructure, loo_scores, select_skdb, selective_structure
from .specs import tree_specs

__all__ = [
    "STRUCTURE_KINDS",
    "SelectedStructure",
    "Structure",
    "conditional_mutual_information",
    "kdb",
    "kdb_from_scores",
    "loo_scores",
    "mutual_information",
    "naive_bayes",
    "select_skdb",
    "selective_structure",
    "tan",
    "tan_from_scores",
    "tree_specs",
]
