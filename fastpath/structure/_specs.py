"""Structure -> tree specifications: which context tree every factor of the model gets."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..counts._counting import TreeSpec
from ._graphs import Structure


def tree_specs(structure: Structure, cardinalities: Sequence[int], n_classes: int,
               attributes: Iterable[int]) -> list[TreeSpec]:
    """The class prior's tree, then one per attribute in ``attributes``.

    An attribute's tree branches on the class, then on its parents in branching order
    (paper, "Intuition -- general framework"; :meth:`Structure.branching_order`).
    """
    specs = [TreeSpec(-1, (), n_classes, ())]
    for i in attributes:
        order = structure.branching_order(i)
        specs.append(
            TreeSpec(i, (-1, *order), cardinalities[i],
                     (n_classes, *(cardinalities[p] for p in order)))
        )
    return specs
