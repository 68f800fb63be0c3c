"""Codes -> counts -> context trees: the data structure every estimator reads.

:class:`TreeSpec` names a conditional table (child, conditioning variables in branching order);
:mod:`._counting` counts rows into sparse leaves, chunk by chunk and mergeable
(:class:`CountAccumulator`); :mod:`._context_tree` holds a :class:`ContextTree` (class first,
then parents) with the counts of every node.
"""

from ._context_tree import TYING_STRATEGIES, ContextTree, TreeLevel, tying_groups
from ._counting import CountAccumulator, TreeSpec, count_leaves, count_tree

__all__ = [
    "TYING_STRATEGIES",
    "ContextTree",
    "CountAccumulator",
    "TreeLevel",
    "TreeSpec",
    "count_leaves",
    "count_tree",
    "tying_groups",
]
