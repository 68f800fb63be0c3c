"""The m holdout: which training rows score the candidate values of m.

The paper chooses m on a holdout of ``min(N/10, 5000)`` rows. The holdout here is a seeded hash of
the row *index*, not a permutation: the ``n_hold`` rows with the smallest hashes. A stream can
select it chunk by chunk (a row is held out when its hash is at most a threshold that depends only
on N and the key) and ``partial_fit`` can keep the candidates in a reservoir, so the in-memory fit,
the out-of-core passes and ``partial_fit`` hold out the very same rows.

Each member of a classifier draws its key from one generator, :func:`holdout_generator`, which
every driver asks: member 0 holds out the rows a single classifier with the same
``random_state`` holds out; member ``e > 0`` draws its key from its own generator.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# the m holdout is the rows with the smallest seeded hashes of their index
from ..utils._rows import hash_threshold as holdout_threshold
from ..utils._rows import picked_rows as holdout_rows
from ..utils._rows import row_hashes
from ..utils._validation import as_generator

__all__ = ["MAX_HOLDOUT", "holdout_generator", "holdout_key", "holdout_rows", "holdout_size",
           "holdout_threshold", "row_hashes"]

#: largest m holdout (paper: min(N/10, 5000) rows)
MAX_HOLDOUT = 5000


def holdout_key(rng: np.random.Generator) -> int:
    """The hash key of the m holdout, drawn from the fit's random generator."""
    return int(rng.integers(0, 2**63 - 1, dtype=np.int64))


def holdout_size(n_rows: int) -> int:
    """``min(N // 10, 5000)``, the paper's holdout size."""
    return min(int(n_rows) // 10, MAX_HOLDOUT)


def holdout_generator(random_state: Any, index: int, rng: np.random.Generator | None
                      ) -> np.random.Generator:
    """The generator member ``index`` of a fit draws its m-holdout key from (every driver's).

    Member 0 draws it from ``random_state``'s own generator, as a single classifier does, so
    that it holds out a single classifier's rows; member ``e > 0`` from its generator ``rng``
    (:func:`~fastpath.pipeline._members.member_streams`), after its cut points and its
    attribute order.
    """
    return as_generator(random_state) if index == 0 else rng
