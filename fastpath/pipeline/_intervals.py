"""Credible intervals of ``P(y | x)`` under the posterior of the HDP tables.

``predict_proba`` returns ``P(y | x)`` of the posterior-mean tables. The sampler's chains
also visit the tables' posterior, and with ``HDPOptions(record_draws=True)`` each tree keeps
a draw of every node's probability vector every ``thin`` iterations after burn-in, with the
concentrations of the same state (the trace). Draw ``s`` of the model is draw ``s`` of every
tree: the tables' posterior is a product over the trees (each tree's data and prior are its
own), so draws of different trees, taken each from its own chains, pair into draws of all the
tables. Under draw ``s``, every member's ``P_s(y | x)`` is computed exactly as a prediction
is (:mod:`fastpath.predict._draws`, which also draws the unseen paths' nodes from the model),
an ensemble's being the mean of its members'; the quantiles of ``P_s(y | x)`` over the draws
are the credible interval.

With a discriminative layer (:mod:`fastpath.pipeline._weights`), each draw's terms are
weighted as the estimates' are, the weights held at their fitted values: the interval is the
tables' posterior under the fitted weights, not the weights' uncertainty.

What the interval covers: the tables' posterior *given the structure* (for an ensemble, given
every member's structure, cut points and attribute order, which are chosen, not sampled): the
uncertainty of the structure itself is not in it. Which draws: each tree's draws pooled over
its chains (chain by chain), ``n_draws`` of them evenly spaced (all when there are fewer; the
model's number of draws is the smallest tree's). The draws are the sampler's every ``thin``-th
state, so they are as independent as the chain is mixed at that lag.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..encode._encoder import code_members
from ..estimate.hdp._results import HDPResult
from ..predict._draws import draw_joint_log_likelihood
from ..predict._inference import posterior_from_joint
from ._fitted import Member
from ._members import PredictionPlan, distinct_trees, prediction_plan

#: draws an interval uses at most unless told otherwise
DEFAULT_INTERVAL_DRAWS = 200

_HOW = ("fit with the sampler's draws kept: sampler=clf.hdp_options().replace("
        "record_draws=True) (estimation='hdp')")


@dataclass(frozen=True)
class TreeDraws:
    """One tree's pooled draws: node probability vectors (draws, nodes, K) and the
    concentration of each depth below the root in the same state (draws, depth)."""

    tables: np.ndarray
    level_alpha: np.ndarray

    @property
    def n_draws(self) -> int:
        return int(self.tables.shape[0])


def tree_draws(result: HDPResult, label: str) -> TreeDraws:
    """The pooled draws of one tree's :class:`HDPResult` (``ValueError`` naming the tree and
    the fix when the fit kept no draws, not every node's, or no trace of the
    concentrations)."""
    tree = result.tree
    if result.draws is None or result.draw_node_ids is None or not np.array_equal(
            result.draw_node_ids, np.arange(tree.n_nodes)):
        raise ValueError(f"credible intervals need posterior draws of every node of every "
                         f"tree, and {label} has none: {_HOW}")
    trace = result.trace
    depth = tree.depth
    n_chains, per_chain = result.draws.shape[:2]
    tables = np.asarray(result.draws).reshape(n_chains * per_chain, tree.n_nodes, -1)
    if depth == 0:
        return TreeDraws(tables, np.zeros((tables.shape[0], 0)))
    tying = result.options.tying
    if tying not in ("level", "single"):
        raise ValueError(f"credible intervals need the concentrations tied by level or "
                         f"single (HDPOptions.tying), not {tying!r}")
    kept = trace.concentrations[:, trace.kept] if trace.iterations.size else None
    if kept is None or kept.shape[1] != per_chain:
        raise ValueError(f"credible intervals need the concentrations' traces, and {label} "
                         "kept none: fit with keep_traces=True besides record_draws=True")
    conc = np.asarray(kept).reshape(n_chains * per_chain, -1)
    groups = [int(result.groups[tree.level_offsets[d]]) for d in range(1, depth + 1)]
    return TreeDraws(tables, conc[:, groups])


@dataclass(frozen=True)
class ModelDraws:
    """Every distinct tree's draws, where each member's trees are among them, and the draws
    each tree contributes to model draw ``s`` (``picks[t][s]``)."""

    trees: list[TreeDraws]
    slots: list[list[int]]
    picks: list[np.ndarray]

    @property
    def n_draws(self) -> int:
        return int(self.picks[0].size) if self.picks else 0


def model_draws(members: Sequence[Member],
                results: Sequence[HDPResult] | ModelDraws | None,
                n_draws: int | None = None) -> ModelDraws:
    """The draws of the model's tables (module docstring), ``n_draws`` evenly spaced of each
    tree's (default :data:`DEFAULT_INTERVAL_DRAWS`; of a model file's draws, ``results`` a
    :class:`ModelDraws`, all it kept by default)."""
    if isinstance(results, ModelDraws):  # a model file's: already picked
        if n_draws is not None and int(n_draws) < 1:
            raise ValueError(f"n_draws must be a positive integer, got {n_draws!r}")
        count = results.n_draws if n_draws is None else min(int(n_draws), results.n_draws)
        picks = [np.round(np.linspace(0, results.n_draws - 1, count)).astype(np.int64)
                 for _ in results.trees]
        return ModelDraws(results.trees, results.slots, picks)
    if not results:
        raise ValueError(f"credible intervals are for HDP estimates with posterior draws: {_HOW}")
    _, names, slots = distinct_trees(list(members))
    if len(names) != len(results):
        raise ValueError("the model's trees and its HDP results disagree; refit the model")
    trees = [tree_draws(r, name) for r, name in zip(results, names, strict=True)]
    available = min(t.n_draws for t in trees)
    wanted = DEFAULT_INTERVAL_DRAWS if n_draws is None else int(n_draws)
    if wanted < 1:
        raise ValueError(f"n_draws must be a positive integer, got {n_draws!r}")
    count = min(wanted, available)
    picks = [np.round(np.linspace(0, t.n_draws - 1, count)).astype(np.int64) for t in trees]
    return ModelDraws(trees, slots, picks)


def stored_draws(members: Sequence[Member], draws: ModelDraws
                 ) -> list[list[tuple[np.ndarray, np.ndarray]]]:
    """Per member and tree, the draws model draw ``s`` reads (tables (S, nodes, K), level
    concentrations (S, depth)): what a model file keeps."""
    return [[(draws.trees[t].tables[draws.picks[t]], draws.trees[t].level_alpha[draws.picks[t]])
             for t in draws.slots[e]] for e in range(len(members))]


def from_stored(stored: list[list[tuple[np.ndarray, np.ndarray]]]) -> ModelDraws:
    """The :class:`ModelDraws` of :func:`stored_draws`' arrays (each tree its own, every
    draw picked in order)."""
    trees, slots = [], []
    for member in stored:
        slots.append(list(range(len(trees), len(trees) + len(member))))
        trees.extend(TreeDraws(tables, alphas) for tables, alphas in member)
    n = trees[0].n_draws if trees else 0
    return ModelDraws(trees, slots, [np.arange(n) for _ in trees])


def members_proba_draws(members: Sequence[Member], draws: ModelDraws, frame: pd.DataFrame,
                        class_shift: np.ndarray | None = None,
                        plan: PredictionPlan | None = None, seed: int = 0) -> np.ndarray:
    """``P_s(y | x)`` of every row of ``frame`` under every draw ``s`` of the tables, shape
    (n_draws, n_rows, n_classes); an ensemble's: the members' mean under the same draw."""
    plan = prediction_plan(members) if plan is None else plan
    packed = plan.packed
    codes, columns = code_members(plan.encoders, frame, plan.layout)
    codes_t = np.ascontiguousarray(codes.T, dtype=np.int32)
    n_members, n_classes = packed.class_log_prior.shape
    # where each packed attribute tree's level concentrations go in one draw's vector
    tree_of: list[tuple[int, int, int]] = []  # (packed tree, distinct tree, depth)
    for e, member in enumerate(members):
        for j, tree in enumerate(member.trees[1:]):
            tree_of.append((int(packed.tree_ptr[e]) + j, draws.slots[e][j + 1], tree.depth))
    # the discriminative layer's weights of every packed tree's term (1: none), and of the
    # class prior: a draw's tables are the estimates' draws, weighted as the estimates are
    term_weights = np.ones((packed.child_col.size, n_classes))
    prior_weights = np.ones((n_members, n_classes))
    for e, member in enumerate(members):
        if member.term_weights is not None:
            start = int(packed.tree_ptr[e])
            term_weights[start:start + len(member.trees) - 1] = member.term_weights[1:]
            prior_weights[e] = member.term_weights[0]
    alpha_ptr = np.zeros(packed.child_col.size, np.int64)
    total = 0
    for a, _, depth in tree_of:
        alpha_ptr[a] = total
        total += depth
    root = np.random.SeedSequence(seed)
    shift = None if class_shift is None else np.asarray(class_shift, dtype=np.float64)
    out = np.zeros((draws.n_draws, codes.shape[0], n_classes))
    log_prob = np.empty_like(packed.log_prob)
    level_alpha = np.empty(total)
    for s in range(draws.n_draws):
        with np.errstate(divide="ignore"):
            for a, t, depth in tree_of:
                table = draws.trees[t].tables[draws.picks[t][s]]
                start = int(packed.logp_offset[a])
                log_prob[start:start + table.size] = np.log(table).ravel()
                level_alpha[alpha_ptr[a]:alpha_ptr[a] + depth] = (
                    draws.trees[t].level_alpha[draws.picks[t][s]])
        for e in range(n_members):
            t = draws.slots[e][0]  # the class prior's tree
            with np.errstate(divide="ignore"):
                prior = np.log(draws.trees[t].tables[draws.picks[t][s]][0]) * prior_weights[e]
            joint = draw_joint_log_likelihood(packed, codes_t, columns, e, log_prob, prior,
                                              level_alpha, alpha_ptr,
                                              _state(root, s, e), term_weights)
            if shift is not None:
                joint += shift
            out[s] += posterior_from_joint(joint)
        if n_members > 1:
            out[s] /= n_members
    return out


def _state(root: np.random.SeedSequence, draw: int, member: int) -> np.ndarray:
    """The xoshiro256** state of the Beta draws of model draw ``draw``, member ``member``:
    ``SeedSequence(seed, spawn_key=(draw, member))`` (never all zero)."""
    state = np.random.SeedSequence(root.entropy, spawn_key=(draw, member)).generate_state(
        4, np.uint64)
    if not state.any():  # pragma: no cover - probability 2^-256
        state[0] = 1
    return state
