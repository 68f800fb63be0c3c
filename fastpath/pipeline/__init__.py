"""The fit pipeline: stages every driver composes, and the in-memory driver.

``_config`` (checked parameters) -> ``_stages`` (structure -> tree specs -> m choice -> table
estimation) -> ``_members`` (how members are drawn, estimated together and combined; the one
place a fitted record is built) -> ``_fitted`` (the learned state: :class:`FittedModel`, a list
of :class:`Member`). ``_memory`` runs the stages on a code matrix; the out-of-core,
``partial_fit`` and Dask drivers in :mod:`fastpath.scale` run the same stages on statistics
gathered chunk by chunk. ``_holdout`` is the rule that picks the m holdout rows; ``_registry``
the one place estimators and structure learners are registered (:func:`register_estimator`,
:func:`register_structure`).
"""

from ._config import FitConfig, hdp_options
from ._fitted import FittedModel, Member
from ._memory import fit_in_memory
from ._registry import (
    ESTIMATORS,
    STRUCTURES,
    EstimatedTables,
    EstimationContext,
    StructureLearner,
    TableEstimator,
    register_estimator,
    register_structure,
    unregister_estimator,
    unregister_structure,
)

__all__ = [
    "ESTIMATORS",
    "STRUCTURES",
    "EstimatedTables",
    "EstimationContext",
    "FitConfig",
    "FittedModel",
    "Member",
    "StructureLearner",
    "TableEstimator",
    "fit_in_memory",
    "hdp_options",
    "register_estimator",
    "register_structure",
    "unregister_estimator",
    "unregister_structure",
]
