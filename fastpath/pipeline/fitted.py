"""What a fit learns: one record every driver returns and the estimator assigns."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from ..counts.context_tree import ContextTree
from ..counts.counting import TreeSpec
from ..encode.encoder import TableEncoder
from ..estimate.diagnostics import FitDiagnostics
from ..estimate.hdp.results import HDPResult
from ..structure.graphs import Structure
from ..structure.selective import SelectedStructure

__all__ = ["FittedModel"]


@dataclass
class FittedModel:
    """The learned state of a Bayesian network classifier (the estimator's ``*_`` attributes).

    Fields left ``None`` do not apply to the fit (``m_`` for HDP estimates, ``selection_``
    outside selective kDB, ``n_passes_`` for in-memory fits) and are not assigned.
    """

    classes_: np.ndarray
    n_features_in_: int
    feature_names_in_: np.ndarray | None
    encoder_: TableEncoder
    structure_: Structure
    tree_specs_: list[TreeSpec]
    trees_: list[ContextTree]
    probability_tables_: list[np.ndarray]
    selection_: SelectedStructure | None = None
    m_: float | None = None
    m_scores_: dict[float, float] | None = None
    hdp_results_: list[HDPResult] | None = None
    diagnostics_: FitDiagnostics | None = None
    n_passes_: int | None = None

    def attributes(self) -> dict[str, Any]:
        """The fields that apply, by attribute name."""
        return {f.name: getattr(self, f.name) for f in fields(self)
                if getattr(self, f.name) is not None}

    @classmethod
    def attribute_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))
