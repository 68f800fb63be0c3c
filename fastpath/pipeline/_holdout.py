"""The m holdout: which training rows score the candidate values of m.

The paper chooses m on a holdout of ``min(N/10, 5000)`` rows. The holdout here is a seeded hash of
the row *index*, not a permutation: the ``n_hold`` rows with the smallest hashes. A stream can
select it chunk by chunk (a row is held out when its hash is at most a threshold that depends only
on N and the key) and ``partial_fit`` can keep the candidates in a reservoir, so the in-memory fit,
the out-of-core passes and ``partial_fit`` hold out the very same rows.
"""

from __future__ import annotations

import numpy as np

# the m holdout is the rows with the smallest seeded hashes of their index
from ..utils._rows import hash_threshold as holdout_threshold
from ..utils._rows import picked_rows as holdout_rows
from ..utils._rows import row_hashes

__all__ = ["MAX_HOLDOUT", "holdout_key", "holdout_rows", "holdout_size", "holdout_threshold",
           "row_hashes"]

#: largest m holdout (paper: min(N/10, 5000) rows)
MAX_HOLDOUT = 5000


def holdout_key(rng: np.random.Generator) -> int:
    """The hash key of the m holdout, drawn from the fit's random generator."""
    return int(rng.integers(0, 2**63 - 1, dtype=np.int64))


def holdout_size(n_rows: int) -> int:
    """``min(N // 10, 5000)``, the paper's holdout size."""
    return min(int(n_rows) // 10, MAX_HOLDOUT)
