"""``partial_fit``: counts that grow chunk by chunk, tables re-estimated on demand.

The first call fixes everything but the counts (the classes, the coding of every column, the
structure); later calls only add counts. The rows are not kept, so m (``m="auto"`` or
``"holdout"``) is chosen on the paper's holdout rule: the ``min(N/10, 5000)`` rows with the
smallest seeded hashes among all ``N`` rows, which always lie in a *reservoir* of the 5,000 rows
with the smallest hashes seen so far. With ``m="holdout"`` re-estimation chooses m on the same
rows and candidates as :meth:`~fastpath.BayesNetClassifier.fit` on the concatenated chunks;
with ``m="auto"``, ``fit`` scores the candidates by leave-one-out over every row, which
``partial_fit`` cannot revisit: it scores the same positive candidates on the holdout.

Every member of the fit (``config.n_members``; :mod:`fastpath.pipeline._members`) keeps its own
counts: the first call learns each member from its chunk exactly as the in-memory fit would
(own cut points, order, structure), later calls code each chunk once per member. Each member's
reservoir is keyed as its m holdout is in ``fit`` (:func:`~fastpath.pipeline._holdout.
holdout_generator`: member 0 a single classifier's key, the others their own), so a member
holds out the rows it would hold out in ``fit``, and :meth:`PartialFit.refresh` estimates
every member's tables in one call (:func:`~fastpath.pipeline._members.finish_fit`). With a
discriminative layer (:mod:`fastpath.pipeline._weights`), a second reservoir keeps the layer's
rows (the ones with the smallest layer hashes seen so far, as many as the layer weighs), so
that every refresh weighs the rows a fit of the chunks so far would.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from ..counts._context_tree import ContextTree
from ..counts._counting import CountAccumulator, TreeSpec
from ..encode._encoder import TableEncoder
from ..estimate._mestimate import M_GRID, M_GRID_POSITIVE
from ..pipeline._config import FitConfig
from ..pipeline._fitted import FittedModel, Member
from ..pipeline._holdout import MAX_HOLDOUT, holdout_generator, holdout_key, row_hashes
from ..pipeline._members import (
    finish_fit,
    kept_columns,
    learn_member,
    member_encoders,
    member_streams,
    typed_columns,
)
from ..pipeline._stages import LearnedStructure, choose_m, name_trees, plan_m
from ..pipeline._weights import layer_key, layer_rows
from ..utils._validation import check_labels, check_two_classes
from ..utils._warn import DataWarning, warn
from ._errors import StreamError, first_true
from ._schema import declare_schema


def smallest_hashes(hashes: np.ndarray, rows: np.ndarray, start: int, n: int, key: int,
                    size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None,
                                        np.ndarray | None]:
    """A reservoir of the ``size`` rows with the smallest seeded hashes, after rows ``start`` to
    ``start + n`` arrive: the kept rows' ``hashes`` and positions ``rows`` with the new rows'
    appended, and the positions in those arrays that stay and that leave (both None when all
    ``size`` fit). The rows kept after every chunk are those of the concatenated chunks."""
    h = np.concatenate([hashes, row_hashes(start, start + n, key)])
    positions = np.concatenate([rows, np.arange(start, start + n, dtype=np.int64)])
    if h.size <= size:
        return h, positions, None, None
    part = np.argpartition(h, size - 1)
    return h, positions, part[:size], part[size:]


@dataclass
class PartialState:
    """Counts gathered by ``partial_fit``.

    ``accumulator`` counts every row except those of the *reservoir*: the (at most 5,000)
    rows with the smallest holdout hashes seen so far, kept as codes (module docstring).
    Without an m holdout (``key`` None) every row goes to the accumulator.
    """

    accumulator: CountAccumulator
    key: int | None
    n_seen: int = 0
    stale: bool = True
    hashes: np.ndarray = field(default_factory=lambda: np.empty(0, np.uint64))
    rows: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    codes: np.ndarray | None = None
    y: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))

    def add(self, codes: np.ndarray, y: np.ndarray) -> None:
        if self.key is None:
            self.accumulator.update(codes, y)
        else:
            if self.codes is None:
                self.codes = np.empty((0, codes.shape[1]), np.int64)
            h, rows, keep, out = smallest_hashes(self.hashes, self.rows, self.n_seen,
                                                 y.shape[0], self.key, MAX_HOLDOUT)
            all_codes = np.concatenate([self.codes, codes])
            all_y = np.concatenate([self.y, y])
            if keep is not None:
                self.accumulator.update(all_codes[out], all_y[out])
                h, rows, all_codes, all_y = h[keep], rows[keep], all_codes[keep], all_y[keep]
            self.hashes, self.rows, self.codes, self.y = h, rows, all_codes, all_y
        self.n_seen += y.shape[0]
        self.stale = True

    def split(self, n_hold: int) -> tuple[CountAccumulator, np.ndarray, np.ndarray]:
        """Counts of every row but the ``n_hold`` with the smallest hashes, and those rows'
        codes and classes in row order."""
        by_hash = np.argsort(self.hashes, kind="stable")
        hold, rest = by_hash[:n_hold], by_hash[n_hold:]
        hold = hold[np.argsort(self.rows[hold], kind="stable")]
        train = copy.deepcopy(self.accumulator)
        train.update(self.codes[rest], self.y[rest])
        return train, self.codes[hold], self.y[hold]

    def counts(self) -> CountAccumulator:
        """Counts of every row seen."""
        full = copy.deepcopy(self.accumulator)
        if self.codes is not None and self.y.size:
            full.update(self.codes, self.y)
        return full


@dataclass
class LayerReservoir:
    """The discriminative layer's rows among those seen: the ``size`` rows with the smallest
    layer hashes (:func:`~fastpath.pipeline._weights.layer_threshold`'s, so that the rows kept
    after every chunk are those a fit of the concatenated chunks weighs), each member's codes
    of them and their classes."""

    key: int
    size: int
    n_seen: int = 0
    hashes: np.ndarray = field(default_factory=lambda: np.empty(0, np.uint64))
    rows: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    codes: list[np.ndarray] | None = None
    y: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))

    def add(self, codes: list[np.ndarray], y: np.ndarray) -> None:
        h, rows, keep, _ = smallest_hashes(self.hashes, self.rows, self.n_seen, y.shape[0],
                                           self.key, self.size)
        kept = codes if self.codes is None else [np.concatenate([a, b]) for a, b
                                                 in zip(self.codes, codes, strict=True)]
        all_y = np.concatenate([self.y, y])
        if keep is not None:
            keep = np.sort(keep)
            h, rows, all_y = h[keep], rows[keep], all_y[keep]
            kept = [c[keep] for c in kept]
        self.hashes, self.rows, self.codes, self.y = h, rows, kept, all_y
        self.n_seen += y.shape[0]

    def layer(self) -> tuple[list[np.ndarray], np.ndarray]:
        """Every member's codes of the kept rows and their classes, in row order."""
        order = np.argsort(self.rows, kind="stable")
        return [np.ascontiguousarray(c[order]) for c in self.codes or []], self.y[order]


@dataclass
class PartialMember:
    """One member's part of ``partial_fit``: what the first call fixed, and its counts."""

    encoder: TableEncoder
    learned: LearnedStructure
    specs: list[TreeSpec]
    state: PartialState

    def trees_and_m(self, config: FitConfig
                    ) -> tuple[float | None, dict[float, float], list[ContextTree]]:
        """m, the candidates' scores and the context trees of every row seen."""
        rule = config.m_rule
        holdout_config = config if rule is None else replace(config, m="holdout")
        # the holdout of the reservoir's hashes, keyed by the first call
        plan = plan_m(holdout_config, self.state.n_seen, None, key=self.state.key)
        m, scores = plan.m, plan.scores
        if plan.needs_holdout:
            train, hold_codes, hold_y = self.state.split(plan.n_hold)
            m, scores = choose_m(self.specs, train, hold_codes, hold_y,
                                 backoff=config.m_backoff,
                                 grid=M_GRID if rule == "holdout" else M_GRID_POSITIVE)
        trees = name_trees(self.state.counts(), self.specs, self.encoder.feature_names_)
        return m, scores, trees


@dataclass
class PartialFit:
    """What ``partial_fit`` keeps between calls: the part fixed by the first call, and every
    member's counts."""

    config: FitConfig
    classes: np.ndarray
    feature_names: list[str]
    has_names: bool
    members: list[PartialMember]
    n_calls: int = 0
    #: what the calls so far warned about (each message once): the model's ``fit_warnings_``
    warnings: list[str] = field(default_factory=list)
    #: the columns the first call left out (``exclude_features``), by name
    excluded: tuple[str, ...] = ()
    #: the discriminative layer's rows (``config.discriminative`` only)
    reservoir: LayerReservoir | None = None

    @property
    def stale(self) -> bool:
        """Rows were added since the last :meth:`refresh`."""
        return any(member.state.stale for member in self.members)

    def add(self, frame: pd.DataFrame, y: Any) -> None:
        """Add a later chunk to every member; ``StreamError`` naming the call, row and column,
        and nothing is added anywhere, when it holds a class, a category or a missing value
        outside a member's schema."""
        y_codes = _class_codes(self.classes, y, frame.shape[0], self.n_calls)
        frame = kept_columns(frame, self.excluded)
        codes = [_chunk_codes(member.encoder, frame, self.n_calls) for member in self.members]
        for member, member_codes in zip(self.members, codes, strict=True):
            member.state.add(member_codes, y_codes)
        if self.reservoir is not None:
            self.reservoir.add(codes, y_codes)
        self.n_calls += 1

    def refresh(self) -> FittedModel:
        """Context trees and tables from every row seen; m (``m="auto"`` or ``"holdout"``)
        chosen on the holdout rule, since the rows seen are not kept for a leave-one-out pass:
        ``"auto"`` scores the positive candidates (:data:`M_GRID_POSITIVE`), ``"holdout"`` the
        paper's (:data:`M_GRID`, 0 included)."""
        members = []
        for partial in self.members:
            m, scores, trees = partial.trees_and_m(self.config)
            members.append(Member.counted(
                partial.encoder, partial.learned.structure, partial.specs, trees,
                selection=partial.learned.selection, m=m,
                m_scores=scores if self.config.chooses_m else None))
        fitted = finish_fit(self.config, members, classes=self.classes,
                            feature_names=self.feature_names, has_names=self.has_names,
                            excluded=self.excluded,
                            layer=None if self.reservoir is None else self.reservoir.layer())
        for partial in self.members:
            partial.state.stale = False
        return fitted


def _chunk_codes(encoder: TableEncoder, frame: pd.DataFrame, call: int) -> np.ndarray:
    codes = encoder.transform(frame)
    _check_chunk_codes(codes, encoder, frame, call)
    return codes


def _check_chunk_codes(codes: np.ndarray, encoder: TableEncoder, frame: pd.DataFrame,
                       call: int) -> None:
    if codes.size and codes.min() < 0:
        r, j = (int(v) for v in np.argwhere(codes < 0)[0])
        value = frame.iloc[r, j]
        what = "a missing value" if pd.isna(value) else f"value {value!r}"
        raise StreamError(
            f"partial_fit call {call}, row {r}, column {encoder.feature_names_[j]!r}: {what} is "
            "outside the schema fixed by the first call (declare it with "
            "schema=declare_schema(...) on the first call)"
        )


def _class_codes(classes: np.ndarray, y: Any, n_rows: int, call: int) -> np.ndarray:
    labels, codes = check_labels(y, n_rows)
    index = pd.Index(classes).get_indexer(pd.Index(labels))
    if (index < 0).any():
        bad = labels[first_true(index < 0)]
        raise StreamError(
            f"partial_fit call {call}: class label {bad!r} is not one of the classes fixed by "
            f"the first call {list(classes)} (pass classes= on the first call)"
        )
    return index[codes].astype(np.int64)


def _schema_encoder(config: FitConfig, frame: pd.DataFrame, has_names: bool, schema: Any,
                    y_codes: np.ndarray, n_classes: int) -> TableEncoder:
    if schema is None:
        return config.table_encoder().fit(frame, y_codes, n_classes)
    enc = schema if isinstance(schema, TableEncoder) else declare_schema(
        schema, categorical_features=config.categorical_features
    )
    if not isinstance(schema, TableEncoder):  # a declared mapping reads as the model says
        enc.na_values, enc.numeric_errors = config.na_values, config.numeric_errors
    if not hasattr(enc, "codings_"):
        raise ValueError("schema must be a fitted TableEncoder or a declare_schema mapping")
    if len(enc.codings_) != frame.shape[1]:
        raise ValueError(f"schema declares {len(enc.codings_)} columns, X has {frame.shape[1]}")
    names = [str(c) for c in frame.columns]
    if has_names and list(enc.feature_names_) != names:
        raise ValueError(f"schema declares columns {list(enc.feature_names_)}, X has {names}")
    return copy.deepcopy(enc)


def _warn_if_the_first_chunk_lacks_classes(encoder: TableEncoder, classes: np.ndarray,
                                           y_codes: np.ndarray) -> None:
    """The first chunk fixes every column's coding: when it lacks classes (class-sorted rows),
    MDL finds no cut on its numeric columns and nominal values of the other classes are unseen,
    so later chunks cannot teach the model much. Say so rather than fit a near-prior model."""
    present = np.unique(y_codes)
    if present.size == classes.size:
        return
    absent = [classes[c].item() if hasattr(classes[c], "item") else classes[c]
              for c in range(classes.size) if c not in set(present.tolist())]
    uncut = [c.name for c in encoder.codings_ if c.kind == "numeric" and not c.cut_points]
    detail = f"; its numeric columns {uncut[:5]} got no cut point" if uncut else ""
    warn(
        f"partial_fit: the first chunk holds no row of the classes {absent[:5]}, but it fixes "
        f"the coding of every column{detail}. Shuffle the rows, or pass "
        "schema=declare_schema(...) (or a TableEncoder fitted on a sample) on the first call",
        DataWarning)


def _first_call_classes(frame: pd.DataFrame, y: Any, classes: Any) -> tuple[np.ndarray,
                                                                            np.ndarray]:
    """The classes fixed by the first call (``classes`` when given, else ``y``'s) and the
    first chunk's class codes."""
    if classes is not None:
        declared = np.asarray(classes).ravel()
        class_labels, _ = check_labels(declared, declared.shape[0])
    else:
        class_labels, _ = check_labels(y, frame.shape[0])
    check_two_classes(class_labels,
                      " (pass every class with classes= on the first partial_fit call)")
    return class_labels, _class_codes(class_labels, y, frame.shape[0], 0)


def start_partial_fit(config: FitConfig, frame: pd.DataFrame, has_names: bool, y: Any,
                      classes: Any = None, schema: Any = None) -> PartialFit:
    """The first ``partial_fit`` call: fix the classes, and every member's coding (``schema``
    when given, for every member), attribute order and structure, learned from this chunk."""
    class_labels, y_codes = _first_call_classes(frame, y, classes)
    n_classes = class_labels.size
    feature_names = [str(c) for c in frame.columns]
    excluded: tuple[str, ...] = ()
    if schema is None:  # a declared schema declares the columns it codes
        types, frame, excluded = typed_columns(config, frame)
    declared = None
    if schema is not None:
        declared = _schema_encoder(config, frame, has_names, schema, y_codes, n_classes)
    streams = member_streams(config)
    if declared is None:
        encoders = member_encoders(config, streams, types, y_codes, n_classes)
    else:
        encoders = [copy.deepcopy(declared) for _ in streams]
    members, first_codes = [], []
    for e, (rng, encoder) in enumerate(zip(streams, encoders, strict=True)):
        codes, learned, specs = learn_member(config, e, rng, encoder, frame, y_codes, n_classes)
        first_codes.append(codes)
        _check_chunk_codes(codes, encoder, frame, 0)
        if e == 0 and schema is None:
            _warn_if_the_first_chunk_lacks_classes(encoder, class_labels, y_codes)
        # the reservoir's hash key: the m-holdout key the member draws in fit(), from the
        # same generator after the same draws
        key = (holdout_key(holdout_generator(config.random_state, e, rng)) if config.m_rule
               else None)
        member = PartialMember(encoder, learned, specs, PartialState(CountAccumulator(specs), key))
        member.state.add(codes, y_codes)
        members.append(member)
    reservoir = None
    if config.discriminative is not None:
        reservoir = LayerReservoir(layer_key(config), layer_rows(n_classes))
        reservoir.add(first_codes, y_codes)
    return PartialFit(config, class_labels, feature_names, has_names, members, n_calls=1,
                      excluded=excluded, reservoir=reservoir)
