"""The choice of m (``m="auto"``): the leave-one-out RMSE of the true class
(:func:`fastpath.evaluation.rmse_true_class`, selective kDB's criterion) of the whole
m-estimated model for each candidate m.

Each row is predicted by the m-estimates of the counts without it, every tree at its full depth,
with the leave-one-out descent of selective kDB (:mod:`fastpath.structure._selective`, whose
row kernel :func:`~fastpath.structure._selective.loo_row_model_error` this module calls): the
m-estimates choose their m here, beside :mod:`._mestimate`, and the structure search keeps only
the kernels both share.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import prange

from ..counts import _records
from ..counts._counting import TreeSpec
from ..structure import _selective
from ..structure._selective import (
    full_depth,
    full_model_rmse,
    loo_chunk_starts,
    loo_model,
    loo_row_model_error,
    loo_settings,
)
from ..utils._numba_cache import flush_stale_cache
from ..utils._threads import threaded_kernel


@threaded_kernel
def _loo_model_kernel(codes, y, model, settings, chunk_starts, sse):
    """Selective kDB's ``_loo_kernel`` for the whole model only: adds to
    ``sse[chunk, -1, max_k]`` the numbers that kernel adds there, in the same order, and leaves
    the rest of ``sse`` alone.

    The m choice scores one model per candidate m: one softmax per row instead of one per
    (n*, k*), which is most of the work with many classes and attributes.
    """
    n_trees = model.child_col.shape[0]
    if n_trees == 0:
        return
    max_k = settings.max_k
    for h in prange(chunk_starts.shape[0] - 1):
        cum = np.empty(model.class_counts.shape[0])
        prob = np.empty(max_k + 2)
        for r in range(chunk_starts[h], chunk_starts[h + 1]):
            sse[h, n_trees - 1, max_k] += loo_row_model_error(codes, y, r, model, settings,
                                                              cum, prob)


def loo_m_scores(
    specs: Sequence[TreeSpec],
    trees: Sequence,
    class_counts: np.ndarray,
    codes: np.ndarray,
    y_codes: np.ndarray,
    grid: Sequence[float],
    *,
    backoff: str = "path",
) -> dict[float, float]:
    """Leave-one-out RMSE of a whole model for each m of ``grid``.

    ``specs`` are the attribute trees' specs (the class prior's excluded) and ``trees`` their
    context trees counted on the rows ``codes``, ``y_codes``; each row is predicted by the
    m-estimates (with ``backoff``) of the counts without it, every tree at its full depth.
    The sums run in the fixed row chunks of :func:`loo_chunk_starts`, so the streamed
    evaluation (:class:`fastpath.scale._stats.LooStats`) gives the same numbers.
    """
    if codes.shape[0] < 2:
        raise ValueError(f"leave-one-out needs at least 2 rows, got {codes.shape[0]}")
    model = loo_model(specs, trees, class_counts)
    max_k = full_depth(specs)
    codes = np.ascontiguousarray(codes, dtype=np.int64)
    y_codes = np.ascontiguousarray(y_codes, dtype=np.int64)
    chunk_starts = loo_chunk_starts(codes.shape[0])
    scores = {}
    for m in grid:
        sse = np.zeros((chunk_starts.size - 1, len(specs), max_k + 1))
        # only the whole model's entry is filled: the same sum as _loo_kernel's there
        settings = loo_settings(m, backoff == "value", max_k, codes.shape[0])
        _loo_model_kernel(codes, y_codes, model, settings, chunk_starts, sse)
        scores[float(m)] = full_model_rmse(sse.sum(axis=0), codes.shape[0])
    return scores


# the kernel compiles the row kernel of other modules: its cache follows them
flush_stale_cache(globals(), [_selective, _records])
