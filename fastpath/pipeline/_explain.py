"""Exact explanations of a fitted classifier's predictions, and the attributes' importance.

One member (a Bayesian network classifier) explains itself exactly (paper, section 2.1)::

    log P(y | x) = log P(y) + sum_i log P(x_i | y, pa_i) - log Z(x)

(:mod:`fastpath.predict._explain` reads the terms). An attribute whose value is unknown is
marginalised out: its term is 0 and :attr:`Explanation.unknown` flags it.

**An ensemble** (``ESKDBClassifier``, ``E`` members) predicts the mean of its members'
posteriors, whose logarithm is not a sum over attributes. Its explanation is the mean of the
members' exact explanations -- the class prior ``mean_e log P_e(y)``, each attribute's
``mean_e log P_e(x_i | y, pa_i^e)`` (0 for a member that did not select it) and the normaliser
``mean_e log Z_e(x)`` -- which sum exactly to ``mean_e log P_e(y | x)``, the log of the
members' (unnormalised) geometric mean. The model's ``log P(y | x) = log mean_e P_e(y | x)``
exceeds it by the *ensemble gap*::

    gap(y, x) = log mean_e P_e(y | x) - mean_e log P_e(y | x),
    0 <= gap(y, x) <= max_e log P_e(y | x) - mean_e log P_e(y | x)

(Jensen's inequality; the gap is 0 when the members agree on ``P(y | x)``), so that prior +
contributions - normaliser + gap = ``predict_log_proba`` exactly, for one member (gap 0) and
for an ensemble. The gap is reported per row and class: it is what the members' disagreement
adds, and no attribute's.

**Importance.** :meth:`Explanation.importance` is the mean absolute contribution of each
attribute: for two classes to the log-odds ``log P(y_1 | x) - log P(y_0 | x)``, for more to
each class's log-posterior against the classes' mean (the contribution centred over the
classes, so that a term equal for every class, which the normaliser cancels, counts 0).
:func:`structure_information` is the structure's own measure, the empirical conditional mutual
information ``I(X_i; Y | Pa_i)`` of each attribute with the class given its attribute parents,
from the training counts of its context tree (``I(X_i; Y)`` for naive Bayes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import logsumexp

from ..encode._encoder import code_members
from ..predict._combine import log_mean_posterior
from ..predict._explain import member_terms
from ._fitted import Member
from ._members import PredictionPlan, prediction_plan


@dataclass(frozen=True, eq=False)
class LogOdds:
    """A two-class explanation as log-odds of ``classes[1]`` against ``classes[0]``:
    ``base + contributions.sum(axis=1) + gap`` is ``log P(y_1 | x) - log P(y_0 | x)``
    (the normaliser cancels)."""

    classes: np.ndarray
    feature_names: tuple[str, ...]
    base: np.ndarray  # (n_rows,) the class prior's log-odds
    contributions: np.ndarray  # (n_rows, n_features)
    gap: np.ndarray  # (n_rows,) the ensemble gap's difference (0 for one member)

    @property
    def log_odds(self) -> np.ndarray:
        """The model's log-odds, from the parts."""
        return self.base + self.contributions.sum(axis=1) + self.gap


@dataclass(frozen=True, eq=False)
class Explanation:
    """Every row's exact decomposition of ``log P(y | x)`` (module docstring).

    Attributes
    ----------
    classes : ndarray (n_classes,)
    feature_names : tuple of str
        The attributes the model uses (those a fit left out are not among them).
    prior : ndarray (n_rows, n_classes)
        The class prior's term, ``log P(y)`` (plus ``log w`` of ``class_weight``); an
        ensemble's: the members' mean.
    contributions : ndarray (n_rows, n_features, n_classes)
        Each attribute's term ``log P(x_i | y, pa_i)``; 0 where its value is unknown; an
        ensemble's: the members' mean.
    log_normaliser : ndarray (n_rows,)
        ``log Z(x)``; an ensemble's: the members' mean.
    ensemble_gap : ndarray (n_rows, n_classes)
        ``log mean_e P_e(y | x) - mean_e log P_e(y | x)`` (0 for one member).
    unknown : ndarray of bool (n_rows, n_features)
        Where an attribute's value is unknown to the model (marginalised out).
    n_members : int
    """

    classes: np.ndarray
    feature_names: tuple[str, ...]
    prior: np.ndarray
    contributions: np.ndarray
    log_normaliser: np.ndarray
    ensemble_gap: np.ndarray
    unknown: np.ndarray
    n_members: int

    @property
    def n_rows(self) -> int:
        return int(self.prior.shape[0])

    @property
    def log_posterior(self) -> np.ndarray:
        """``prior + contributions - log_normaliser + ensemble_gap``: the model's
        ``predict_log_proba``, from the parts."""
        return (self.prior + self.contributions.sum(axis=1)
                - self.log_normaliser[:, None] + self.ensemble_gap)

    def centred(self) -> np.ndarray:
        """The contributions minus their mean over the classes (n_rows, n_features,
        n_classes): each attribute's part of ``log P(y | x) - mean_y' log P(y' | x)``, where
        the normaliser cancels."""
        return self.contributions - self.contributions.mean(axis=2, keepdims=True)

    def log_odds(self) -> LogOdds:
        """Two classes: the log-odds of ``classes[1]`` against ``classes[0]`` and each part's
        share of it (``ValueError`` for more classes: :meth:`centred` instead)."""
        if len(self.classes) != 2:
            raise ValueError(f"log_odds needs two classes, the model has {len(self.classes)}: "
                             "use centred() for each class against the classes' mean")
        return LogOdds(self.classes, self.feature_names,
                       self.prior[:, 1] - self.prior[:, 0],
                       self.contributions[:, :, 1] - self.contributions[:, :, 0],
                       self.ensemble_gap[:, 1] - self.ensemble_gap[:, 0])

    def importance(self) -> pd.Series:
        """Mean absolute contribution of each attribute over the rows (module docstring):
        to the log-odds for two classes, else centred over the classes and averaged over
        them too; largest first."""
        if len(self.classes) == 2:
            values = np.abs(self.log_odds().contributions).mean(axis=0)
        else:
            values = np.abs(self.centred()).mean(axis=(0, 2))
        return pd.Series(values, index=list(self.feature_names),
                         name="mean |contribution|").sort_values(ascending=False, kind="stable")

    def to_frame(self, cls: object = None) -> pd.DataFrame:
        """One row per explained row: for two classes (``cls`` None) the log-odds parts
        (``prior``, each attribute, ``ensemble_gap``, ``log_odds``); else class ``cls``'s
        log-posterior parts (``prior``, each attribute, ``log_normaliser`` -- to subtract --,
        ``ensemble_gap``, ``log_posterior``). An attribute whose value is unknown has 0."""
        names = list(self.feature_names)
        if cls is None and len(self.classes) == 2:
            odds = self.log_odds()
            frame = pd.DataFrame(odds.contributions, columns=names)
            frame.insert(0, "prior", odds.base)
            frame["ensemble_gap"] = odds.gap
            frame["log_odds"] = odds.log_odds
            return frame
        if cls is None:
            raise ValueError(f"to_frame needs cls, one of {self.classes.tolist()}, for a model "
                             f"of {len(self.classes)} classes")
        matches = np.flatnonzero(self.classes == cls)
        if matches.size == 0:
            raise ValueError(f"cls={cls!r} is not a class of the model "
                             f"({self.classes.tolist()})")
        c = int(matches[0])
        frame = pd.DataFrame(self.contributions[:, :, c], columns=names)
        frame.insert(0, "prior", self.prior[:, c])
        frame["log_normaliser"] = self.log_normaliser
        frame["ensemble_gap"] = self.ensemble_gap[:, c]
        frame["log_posterior"] = self.log_posterior[:, c]
        return frame


def members_explain(members: Sequence[Member], frame: pd.DataFrame, classes: np.ndarray,
                    feature_names: Sequence[str], class_shift: np.ndarray | None = None,
                    plan: PredictionPlan | None = None) -> Explanation:
    """The :class:`Explanation` of every row of ``frame`` (columns as the members code them),
    one member at a time: memory of the explanation itself plus one member's terms."""
    plan = prediction_plan(members) if plan is None else plan
    codes, columns = code_members(plan.encoders, frame, plan.layout)
    n_members = len(members)
    n_rows, n_classes = codes.shape[0], len(classes)
    shift = np.zeros(n_classes) if class_shift is None else np.asarray(class_shift, float)
    prior = np.zeros((n_rows, n_classes))
    contributions = np.zeros((n_rows, columns.shape[1], n_classes))
    normaliser = np.zeros(n_rows)
    mean_log = np.zeros((n_rows, n_classes))
    logs = np.empty((n_members, n_rows, n_classes)) if n_members > 1 else None
    unknown = np.zeros((n_rows, columns.shape[1]), dtype=bool)
    for e in range(n_members):
        terms, joint, unknown_e = member_terms(plan.packed, codes, columns, e)
        if class_shift is not None:
            joint = joint + shift  # as members_log_proba adds it
        with np.errstate(invalid="ignore"):
            log_z = logsumexp(joint, axis=1)
            log_post = joint - log_z[:, None]
        prior += plan.packed.class_log_prior[e] + shift
        contributions += terms
        normaliser += log_z
        mean_log += log_post
        unknown |= unknown_e
        if logs is not None:
            logs[e] = log_post
    if n_members > 1:
        prior /= n_members
        contributions /= n_members
        normaliser /= n_members
        mean_log /= n_members
        # the model's log P(y | x), as members_log_proba computes it, minus the members' mean
        gap = log_mean_posterior(logs) - mean_log
    else:
        gap = np.zeros((n_rows, n_classes))
    return Explanation(np.asarray(classes), tuple(str(n) for n in feature_names), prior,
                       contributions, normaliser, gap, unknown, n_members)


def conditional_information(counts: np.ndarray, paths: np.ndarray) -> float:
    """Empirical ``I(X; Y | Pa)`` in nats from a context tree's leaves: ``counts`` (leaves x
    values of X) and ``paths`` (leaves x (class, parents...)), every leaf at full depth."""
    counts = np.asarray(counts, dtype=np.float64)
    total = counts.sum()
    if total <= 0:
        return 0.0
    # n(pa, x): the leaves of one parent configuration added over the classes
    if paths.shape[1] > 1:
        _, parent_group = np.unique(paths[:, 1:], axis=0, return_inverse=True)
        parent_group = np.asarray(parent_group).reshape(-1)
    else:  # no attribute parent: I(X; Y)
        parent_group = np.zeros(paths.shape[0], np.int64)
    n_groups = int(parent_group.max()) + 1 if parent_group.size else 0
    pa_x = np.zeros((n_groups, counts.shape[1]))
    np.add.at(pa_x, parent_group, counts)
    pa = pa_x.sum(axis=1)
    y_pa = counts.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = counts * pa[parent_group, None] / (y_pa[:, None] * pa_x[parent_group])
        terms = np.where(counts > 0, counts * np.log(ratio), 0.0)
    return max(0.0, float(terms.sum() / total))


def structure_information(members: Sequence[Member], feature_names: Sequence[str]
                          ) -> pd.Series:
    """Each attribute's ``I(X_i; Y | Pa_i)`` (nats) in the members' structures, from the
    training counts of its context tree (module docstring); an ensemble's: the members' mean
    (0 for a member that did not select the attribute). Largest first."""
    total = np.zeros(len(feature_names))
    for member in members:
        for spec, tree in zip(member.tree_specs, member.trees, strict=True):
            if spec.child < 0:
                continue
            leaves = tree.leaves
            total[spec.child] += conditional_information(tree.counts[leaves],
                                                         tree.paths()[leaves])
    return pd.Series(total / len(members), index=[str(n) for n in feature_names],
                     name="I(X; Y | parents)").sort_values(ascending=False, kind="stable")
