"""The fit pipeline: stages every driver composes, and the in-memory driver.

``_config`` (checked parameters) -> ``_stages`` (structure -> tree specs -> m choice -> table
estimation) -> ``_members`` (how members are drawn, estimated together and combined; the one
place a fitted record is built) -> ``_fitted`` (the learned state: :class:`FittedModel`, a list
of :class:`Member`). ``_memory`` runs the stages on a code matrix; the out-of-core,
``partial_fit`` and Dask drivers in :mod:`fastpath.scale` run the same stages on statistics
gathered chunk by chunk. ``_holdout`` is the rule that picks the m holdout rows.
"""

from ._config import ESTIMATORS, STRUCTURES, FitConfig, hdp_options
from ._fitted import FittedModel, Member
from ._memory import fit_in_memory

__all__ = [
    "ESTIMATORS",
    "STRUCTURES",
    "FitConfig",
    "FittedModel",
    "Member",
    "fit_in_memory",
    "hdp_options",
]
