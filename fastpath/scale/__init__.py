"""Fits that do not hold the data: out of core in a few passes, chunk by chunk, or on Dask.

``sources`` (files, factories, iterators as chunk streams) -> ``schema`` (pass 1: columns,
classes, cut points; the coder) -> ``stats`` (passes 2-4: pair tables, counts, leave-one-out
errors; numba ``kernels``) -> ``passes`` (the local driver) | ``dask`` (the same passes as Dask
tasks); ``partial`` keeps the counts of ``partial_fit``. Every driver composes the stages of
:mod:`fastpath.pipeline` and returns a :class:`~fastpath.pipeline.FittedModel`.
"""

from ._errors import StreamError
from ._partial import PartialFit, start_partial_fit
from ._passes import DEFAULT_PAIR_MEMORY, LocalRunner, fit_passes, fit_stream
from ._schema import declare_schema
from ._sources import DEFAULT_CHUNKSIZE, is_dask_frame, is_stream_source

__all__ = [
    "DEFAULT_CHUNKSIZE",
    "DEFAULT_PAIR_MEMORY",
    "LocalRunner",
    "PartialFit",
    "StreamError",
    "declare_schema",
    "fit_passes",
    "fit_stream",
    "is_dask_frame",
    "is_stream_source",
    "start_partial_fit",
]
