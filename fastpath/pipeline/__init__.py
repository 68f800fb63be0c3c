"""The fit pipeline: stages every driver composes, and the in-memory driver.

``config`` (checked parameters) -> ``stages`` (structure -> tree specs -> m choice -> table
estimation) -> ``fitted`` (the learned state). ``memory`` runs the stages on a code matrix; the
out-of-core, ``partial_fit`` and Dask drivers in :mod:`fastpath.scale` run the same stages on
statistics gathered chunk by chunk. ``holdout`` is the rule that picks the m holdout rows.
"""

from .config import ESTIMATORS, STRUCTURES, FitConfig, hdp_options
from .fitted import FittedModel
from .memory import fit_in_memory

__all__ = ["ESTIMATORS", "STRUCTURES", "FitConfig", "FittedModel", "fit_in_memory", "hdp_options"]
