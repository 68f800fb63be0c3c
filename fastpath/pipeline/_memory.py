"""The in-memory fit: every member's stages on its code matrix of one frame."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd

from ..encode._encoder import column_cache
from ..structure._scores import ScoreCache
from ..utils._threads import limit_threads
from ._config import FitConfig
from ._fitted import FittedModel, Member
from ._holdout import holdout_generator
from ._members import (
    finish_fit,
    learn_member,
    member_encoders,
    member_streams,
    score_keys,
    typed_columns,
)
from ._stages import choose_m_from_codes, name_trees
from ._weights import layer_sample


def fit_in_memory(config: FitConfig, frame: pd.DataFrame, has_names: bool, classes: np.ndarray,
                  y_codes: np.ndarray) -> FittedModel:
    """Fit ``config.n_members`` members (:mod:`fastpath.pipeline._members`) on a checked frame
    and class codes (``classes[y_codes]`` are the labels)."""
    n_classes = classes.size
    n_members = config.n_members
    streams = member_streams(config)
    log = config.log()
    feature_names = [str(c) for c in frame.columns]
    # the columns typed once; identifiers and dates left out, by default
    types, frame, excluded = typed_columns(config, frame)
    encoders = member_encoders(config, streams, types, y_codes, n_classes, log)
    # every column parsed (and every nominal one coded) once, here: the members' threads read
    columns = column_cache(encoders[0], frame) if n_members > 1 else None
    # the members' mutual informations of columns coded alike, computed once
    cache, keys = ScoreCache(), score_keys(encoders)
    # the discriminative layer's rows (the same for every member), and each member's codes
    sample = (layer_sample(config, frame.shape[0], n_classes)
              if config.discriminative is not None else None)
    layer_codes: list[np.ndarray | None] = [None] * n_members

    def fit_member(e: int, rng: np.random.Generator | None) -> Member:
        encoder = encoders[e]
        codes, learned, specs = learn_member(config, e, rng, encoder, frame, y_codes, n_classes,
                                             log, columns=columns, scores=(cache, keys[e]))
        if n_members == 1:
            log.stage(f"counting {len(specs)} context trees")
        counts = learned.counts(specs, codes, y_codes)
        if sample is not None:
            layer_codes[e] = np.ascontiguousarray(codes[sample])
        if n_members == 1 and config.m_rule is not None:
            log.stage(f"choosing m ({config.m_rule})")
        m, scores = choose_m_from_codes(config, specs, codes, y_codes,
                                        holdout_generator(config.random_state, e, rng),
                                        counts=counts)
        trees = name_trees(counts, specs, encoder.feature_names_)
        return Member.counted(encoder, learned.structure, specs, trees,
                              selection=learned.selection, m=m,
                              m_scores=scores if config.chooses_m else None)

    def fit_member_alone(e: int, rng: np.random.Generator | None) -> Member:
        with limit_threads(1):  # a worker thread: its kernels serial, never a nested pool
            return fit_member(e, rng)

    # members in parallel threads: each draws only from its own generator and the results are
    # kept in member order, so the members do not depend on the number of threads
    n_threads = min(config.n_threads, n_members)
    if n_threads > 1:
        with ThreadPoolExecutor(n_threads) as pool:
            members = list(pool.map(fit_member_alone, range(n_members), streams))
    else:
        members = [fit_member(e, rng) for e, rng in enumerate(streams)]
    fitted = finish_fit(config, members, classes=classes, feature_names=feature_names,
                        has_names=has_names, log=log, excluded=excluded,
                        layer=None if sample is None else (layer_codes, y_codes[sample]))
    log.stage("fitted")
    return fitted
