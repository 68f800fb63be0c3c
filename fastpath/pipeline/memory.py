"""The in-memory fit: every stage on one code matrix."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..counts.counting import CountAccumulator
from ..encode.encoder import TableEncoder
from ..utils.validation import as_generator
from .config import FitConfig
from .fitted import FittedModel
from .stages import (
    choose_m_from_codes,
    estimate_tables,
    learn_structure,
    name_trees,
    structure_name,
    tree_specs,
)

__all__ = ["fit_in_memory"]


def fit_in_memory(config: FitConfig, frame: pd.DataFrame, has_names: bool, classes: np.ndarray,
                  y_codes: np.ndarray, *, stacklevel: int = 2) -> FittedModel:
    """Fit on a checked frame and class codes (``classes[y_codes]`` are the labels)."""
    n_classes = classes.size
    log = config.log()
    log.stage(f"coding {frame.shape[0]} rows x {frame.shape[1]} columns")
    encoder = TableEncoder(config.categorical_features).fit(frame, y_codes, n_classes)
    codes = encoder.transform(frame)
    cards = encoder.cardinalities_
    log.stage(f"learning the structure ({structure_name(config)})")
    learned = learn_structure(config, codes, y_codes, cards, n_classes)
    specs = tree_specs(learned.structure, cards, n_classes, learned.attributes)
    log.stage(f"counting {len(specs)} context trees")
    counts = CountAccumulator(specs).update(codes, y_codes)
    if config.m_rule is not None:
        log.stage(f"choosing m ({config.m_rule})")
    m, scores = choose_m_from_codes(config, specs, codes, y_codes,
                                    as_generator(config.random_state), counts=counts)
    trees = name_trees(counts, specs, encoder.feature_names_)
    estimated = estimate_tables(config, trees, m, log=log)
    log.stage("fitted")
    return FittedModel(
        classes_=classes,
        n_features_in_=frame.shape[1],
        feature_names_in_=np.asarray(frame.columns, dtype=object) if has_names else None,
        encoder_=encoder,
        structure_=learned.structure,
        tree_specs_=specs,
        trees_=trees,
        probability_tables_=estimated.tables,
        selection_=learned.selection,
        m_=m,
        m_scores_=scores if config.estimator == "m" else None,
        hdp_results_=estimated.hdp_results,
        diagnostics_=estimated.diagnostics,
    )
