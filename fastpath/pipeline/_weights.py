"""The discriminative layer of a fit: every member's weights on its log-probabilities.

With ``discriminative`` set, a fit ends (after :func:`~fastpath.pipeline._members.finish_fit`
has estimated the tables) by weighing each member's terms
(:mod:`fastpath.estimate._discriminative`): ``w_(0,y)`` on the class prior's ``log P(y)`` and
``w_(t,y)`` on tree ``t``'s ``log P(x_t | y, pa_t)``.

Which rows. The weights are fitted on at most :func:`layer_rows` training rows: those whose
seeded hash of their position is among the smallest (:mod:`fastpath.utils._rows`), a function
of the positions alone, so a fit in memory, one that reads the rows in chunks and
``partial_fit`` over chunks weigh the same rows. Every member uses the same rows. The budget is
the sample selective kDB's ``selection_rows="auto"`` scores, ``max(5000, 1000 x classes)``: the
layer's terms and minimisations are linear in the rows, and halving connect-4's and adult's
10,000 rows cost them 0.0014 and 0.0003 in 0-1 loss (nursery's 6,480 -> 5,000: 0.00002), the
W-D-L over the 41 datasets against every baseline unchanged (docs/results.md). Weighing each
member on its own half of the rows, as a forest's trees see their own samples, halves the
layer's cost everywhere but loses 0-1 loss on 28 of the 41 datasets (11-2-28, p = 0.009).

Leaving each row out. A term read from tables that counted the row itself rewards the deepest,
most over-fitted trees: a leaf that one training row reached gives that row its own value with
a high probability, which a new row does not get. Each node's estimate is its counts ``n``
shrunk towards a base ``b`` by a concentration ``c`` (HDP: the parent's estimate and the node's
posterior-mean concentration, paper eq. 14; m-estimates: the uniform ``1/K`` and ``m``; any
other estimator, HGS, HLS or a registered one: the parent's estimate and the concentration that
makes the node's estimate that shrinkage of its counts most nearly, by least squares,
:func:`inferred_concentrations`), ``phi_k = (n_k + c b_k) / (N + c)``; with the row's own count
removed the node's value ``x`` reads ``phi^(-r)_x``, the estimate's ratio applied to the tables
as estimated (:mod:`fastpath.estimate._left_out`, which computes it; for an HDP estimate, a
posterior mean, the ratio is that of the mean concentration). The base is left as it is: the
row's share of a parent's estimate is of the next order. A row alone at its leaf reads its
parent's estimate, what a new row whose path was never seen reads. A row was counted only below
its own class: its terms for the other classes are read from the tables as estimated (left out
there too, the other classes would read as less likely than they are, and the fitted loss would
flatter the weights). The class prior's term keeps the row (one row of many).

The ridge is chosen by cross-validating member 0's weights among
:data:`~fastpath.estimate._discriminative.PENALTY_GRID`
(:func:`~fastpath.estimate._discriminative.choose_penalty`): the ridge that serves one
classifier best. An ensemble of ``M`` members averages their probabilities, which cancels part
of each member's variance, so each member may follow its rows further than one classifier alone
should (as a forest grows its trees unpruned): every member is weighed with that ridge divided
by ``M ** 1.5`` (:func:`member_penalty`; a single classifier keeps it). The power was chosen on
the 41 datasets among 0 (member 0's ridge for every member), 1, 1.5 and 2 (docs/results.md):
1.5 lowers 0-1 loss against 1 (28-2-11) and 0 (26-1-14); 2 lowers it a little further (21-6-13,
not significant) but raises log loss (on 26 datasets of 40).

The weighted model. The weights are folded into the tables a prediction reads: a node below
class ``y`` holds ``phi ** w_(t,y)`` (:func:`weighted_tables`), the class prior ``P(y) **
w_(0,y)``, so a prediction, an explanation and a model file read the weighted model as they
read any tables, at the same cost; the member keeps its estimates (``probability_tables``) and
its weights (``term_weights``). The root of a tree, above the class, is read only for a class
the tree never counted, and keeps its estimate.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np

from ..counts._context_tree import ContextTree
from ..estimate import _discriminative
from ..estimate._discriminative import choose_penalty, fit_term_weights
from ..estimate._left_out import left_out_tables
from ..estimate.hdp._results import HDPResult
from ..predict._explain import member_terms
from ..predict._inference import PackedMembers
from ..structure._selective import auto_selection_rows, loo_sample_mask, loo_sample_threshold
from ..utils._threads import limit_threads
from ..utils._validation import seed_int
from ._config import FitConfig
from ._fitted import Member
from ._stages import pack_fitted

#: how the ridge falls with the number of members averaged (:func:`member_penalty`)
MEMBER_PENALTY_POWER: float = 1.5
#: the stream of the layer's row sample among the fit's seeds (``SeedSequence`` spawn key)
_LAYER_STREAM = 0x1A7E5


def layer_rows(n_classes: int) -> int:
    """The most training rows the weights are fitted on: ``max(5000, 1000 x classes)``, the
    rows selective kDB's ``selection_rows="auto"`` scores
    (:func:`~fastpath.structure._selective.auto_selection_rows`)."""
    return auto_selection_rows(n_classes)


def layer_key(config: FitConfig) -> int:
    """The hash key of the layer's rows: a child of ``config.random_state``'s seed."""
    seq = np.random.SeedSequence(seed_int(config.random_state), spawn_key=(_LAYER_STREAM,))
    return int(seq.generate_state(1, np.uint64)[0] >> np.uint64(1))


def layer_threshold(config: FitConfig, n_rows: int, n_classes: int
                    ) -> tuple[int, np.uint64 | None]:
    """The hash key of the layer's rows and the largest hash picked among ``n_rows`` (None:
    every row): row ``i`` is picked when ``row_hashes(i, i + 1, key) <= threshold``."""
    key = layer_key(config)
    return key, loo_sample_threshold(n_rows, layer_rows(n_classes), key)


def layer_sample(config: FitConfig, n_rows: int, n_classes: int) -> np.ndarray:
    """The positions (ascending) of the rows the layer is fitted on among ``n_rows``."""
    key, threshold = layer_threshold(config, n_rows, n_classes)
    if threshold is None:
        return np.arange(n_rows)
    return np.flatnonzero(loo_sample_mask(0, n_rows, threshold, key))


def member_penalty(single: float, n_members: int) -> float:
    """The ridge of each of ``n_members`` members whose probabilities are averaged, from the
    ridge ``single`` chosen for one classifier: ``single / n_members ** MEMBER_PENALTY_POWER``
    (module docstring); ``single`` itself for one member."""
    return float(single) / float(n_members) ** MEMBER_PENALTY_POWER


def inferred_concentrations(tree: ContextTree, table: np.ndarray, base: np.ndarray
                            ) -> np.ndarray:
    """The ``c`` of each node that makes ``(n + c b) / (N + c)`` nearest its estimate ``phi``
    in least squares, ``c = sum_k (n_k - N phi_k)(phi_k - b_k) / sum_k (phi_k - b_k)^2``, at
    least 0; infinite where the estimate is its base (the counts are then not read)."""
    n = tree.counts.astype(np.float64)
    total = n.sum(axis=1, keepdims=True)
    gap = table - base
    spread = (gap * gap).sum(axis=1)
    pull = ((n - total * table) * gap).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.where(spread > 1e-300, np.maximum(pull, 0.0) / spread, np.inf)
    return c


def node_concentrations(member: Member, results: Sequence[HDPResult] | None
                        ) -> list[np.ndarray]:
    """The concentration ``c`` of every node of each of the member's attribute trees (module
    docstring): HDP's posterior-mean concentration of the node's group (``results``: the
    member's trees' sampler results, class prior's first), the member's ``m``, or, for any
    other estimator (neither), :func:`inferred_concentrations`."""
    out = []
    for t, tree in enumerate(member.trees[1:], start=1):
        if results is None and member.m is None:
            table = member.probability_tables[t]
            out.append(inferred_concentrations(tree, table, table[np.maximum(tree.parent, 0)]))
        elif results is None:
            out.append(np.full(tree.n_nodes, float(member.m)))
        else:
            r = results[t]
            out.append(np.where(r.groups >= 0, r.concentration_mean[np.maximum(r.groups, 0)],
                                0.0))
    return out


class LayerTables(NamedTuple):
    """Every member's estimates packed together, as a prediction packs them (one packing for
    all: a member's alone costs more than its descent on small data), and their left-out
    log-probabilities in the same layout, each member's block written by
    :func:`member_loo_terms`."""

    packed: PackedMembers
    own_log_prob: np.ndarray


def layer_tables(members: Sequence[Member]) -> LayerTables:
    """The :class:`LayerTables` of ``members``' estimates, their left-out blocks unwritten."""
    packed = pack_fitted([m.tree_specs for m in members], [m.trees for m in members],
                         [m.probability_tables for m in members])
    return LayerTables(packed, np.empty_like(packed.log_prob))


def member_loo_terms(member: Member, codes: np.ndarray, y: np.ndarray,
                     concentrations: list[np.ndarray], tables: LayerTables | None = None,
                     index: int = 0) -> np.ndarray:
    """The terms (rows, trees, classes) of the training rows ``codes`` (the member's codes) of
    classes ``y``; term 0 the class prior's. A row was counted below its own class only: its
    term for its class is read from the tables with the row left out, for every other class
    from the tables as estimated. ``tables``: the members' :func:`layer_tables`, this member
    the ``index``-th of them (default: the member's own)."""
    if tables is None:
        tables, index = layer_tables([member]), 0
    children = np.array([spec.child for spec in member.tree_specs[1:]], dtype=np.int64)
    n_rows, n_classes = codes.shape[0], member.probability_tables[0].shape[1]
    terms = np.empty((n_rows, 1 + len(children), n_classes))
    with np.errstate(divide="ignore"):
        terms[:, 0] = np.log(member.probability_tables[0][0])
    if children.size:
        # the member's block of the packing's log_prob: its attribute trees' tables in order
        left_out = left_out_tables(member.trees[1:], member.probability_tables[1:],
                                   concentrations, uniform_base=member.m is not None)
        packed = tables.packed
        start = packed.logp_offset[packed.tree_ptr[index]]
        np.log(left_out, out=tables.own_log_prob[start:start + left_out.size])
        # one descent reads both: the own class's term left out, the others' as estimated
        columns = np.tile(np.arange(codes.shape[1], dtype=np.int64), (index + 1, 1))
        by_attribute = member_terms(packed, codes, columns, index, own_classes=y,
                                    own_log_prob=tables.own_log_prob)[0]
        # into place without the copy that fancy indexing makes first (a third of the time)
        np.take(by_attribute, children, axis=1, out=terms[:, 1:], mode="clip")
    return terms


def fit_layer(config: FitConfig, members: Sequence[Member], codes: Sequence[np.ndarray],
              y: np.ndarray, results: Sequence[Sequence[HDPResult]] | None) -> float:
    """Fit every member's ``term_weights`` on its codes of the layer's rows (``codes[e]``) and
    their classes ``y``; ``results[e]``: member ``e``'s trees' HDP results (None for
    m-estimates). Returns the members' ridge (:func:`member_penalty` of the ridge chosen on
    member 0's weights). Members in parallel threads, each weighed from its own rows, so the
    weights do not depend on the number of threads."""
    granularity = config.discriminative
    tables = layer_tables(members)

    def terms_of(e: int) -> np.ndarray:
        # one thread: the members are weighed in threads of their own, and a first fit then
        # compiles only the serial terms kernel (the parallel one costs several times more)
        with limit_threads(1):
            return member_loo_terms(members[e], codes[e], y, node_concentrations(
                members[e], None if results is None else results[e]), tables, e)

    first = terms_of(0)
    penalty = member_penalty(choose_penalty(first, y, granularity, _discriminative.PENALTY_GRID),
                             len(members))

    def weigh(e: int) -> np.ndarray:
        terms = first if e == 0 else terms_of(e)
        with limit_threads(1):
            return fit_term_weights(terms, y, granularity, penalty)

    n_threads = min(config.n_threads, len(members))
    if n_threads > 1:
        with ThreadPoolExecutor(n_threads) as pool:
            weights = list(pool.map(weigh, range(len(members))))
    else:
        weights = [weigh(e) for e in range(len(members))]
    for member, w in zip(members, weights, strict=True):
        member.term_weights = w
    return float(penalty)
