"""The classifiers of the experiments, by name: structure x estimation method, plus two baselines.

Names
-----
``nb-m``, ``tan-hdp``, ``kdb3-m``, ``skdb5-hdp``, ...
    ``<structure>-<estimation>``: structure ``nb``, ``tan``, ``kdb<K>`` (K >= 0) or ``skdb<K>``
    (selective kDB searching k* <= K); estimation method ``m`` (m-estimates with back-off, m
    chosen on a holdout, paper section "Experimental design and setting") or ``hdp``.
``nb-mv``, ``tan-mv``, ``kdb3-mv``, ``skdb5-mv``, ...
    ``<structure>-mv``: m-estimates with the paper's literal back-off (``m_backoff="value"``: a
    value whose joint count with its context is zero takes the estimate of the deepest ancestor
    where it is non-zero, rows not renormalised); ``-m`` backs off on the context's count
    (``m_backoff="path"``, :func:`fastpath.estimate.m_estimate_table`).
``nb-mloo``, ``tan-mloo``, ``kdb3-mloo``, ...
    ``<structure>-mloo``: m-estimates (path back-off) with the library's default choice of m
    (``m="auto"``: leave-one-out RMSE over every training row among ``{0.05, 0.2, 1, 5, 20}``);
    ``-m`` and ``-mv`` choose m by the paper's holdout rule (``m="holdout"``).
``tan-hdpr``, ``skdb5-hdpr``, ...
    ``<structure>-hdpr``: HDP estimates with the authors' Java sampler's shortcuts
    (``update="window"``: table counts moved within +-window of their value, not an exact Gibbs
    step; ``root="reference"``: the root's table counts fixed at min(1, n)); ``-hdp`` is the
    exact sampler. Both sample the concentrations every fifth iteration, as the reference does,
    for ``--iterations`` iterations (``sampler="paper"``).
``tan-hdpa``, ``kdb3-hdpa``, ``skdb5-hdpa``, ``eskdb-hdpa``, ...
    ``<structure>-hdpa``: HDP estimates with the library's default sampler
    (``sampler="adaptive"``: overrelaxed moves, each tree sampled until the Monte-Carlo error of
    what the training rows read is at most 0.01); ``--iterations`` does not apply.
    ``<structure>-hdpp``: the same rule with the paper's plain moves (``sampler=
    "adaptive-plain"``).
``tan-hdpf``, ``kdb3-hdpf``, ``skdb5-hdpf``, ...
    ``<structure>-hdpf``: HDP estimates with the strict adaptive sampler (``sampler="strict"``,
    formerly ``"fast"``: overrelaxed, concentrations every iteration, each tree sampled until
    every estimate is precise and its chain passes the convergence checks).
``tan-hgs``, ``kdb3-hls``, ``skdb5-hgs``, ``eskdb-hgs``, ``eskdb-hls``, ...
    ``<structure>-hgs``: hierarchical gradient smoothing (Zhang, Petitjean & Buntine 2020;
    :mod:`fastpath.estimate._hgs`), ``-hls``: hierarchical linear smoothing (Cooper, Webb &
    Schmidt 2025, ``C=1``; :mod:`fastpath.estimate._hls`), each with its defaults.
``rf``
    scikit-learn random forest with the paper's (Weka default) settings: 100 trees,
    ``max_features = int(log2(n_attributes) + 1)``, no minimum leaf size (``min_samples_leaf=1``,
    unlimited depth), bootstrap samples.
``rf-onehot``
    The same forest on one-hot indicators of the codes (``max_features = int(log2(n_indicators)
    + 1)``): a nominal attribute can then be split value-against-rest, closer to Weka's nominal
    treatment than ordinal codes. Not in the paper's line-up; it checks whether the ordinal
    coding explains why our forest is stronger than the paper's.
``xgboost``
    XGBoost, ``max_depth=6``, 50 boosting rounds (the paper's Splice experiment), histogram
    trees, other parameters at their defaults.
``eskdb-hdp``, ``eskdb-m``, ``eskdb10-hdp``, ``eskdb-mdl-hdp``, ``eskdb-hdpe``, ...
    ``eskdb[E][-mdl|-rand|-mix][-dwa|-dwc]-<estimation>``: the ensemble of ``E`` (default 20)
    selective kDB-5 members
    (:class:`fastpath.ESKDBClassifier`, Zhang, Petitjean & Buntine 2020), each with its own
    stochastic MDL discretisation (with the authors' forced cut since 2026-11-28: a numeric
    column that no admissible cut splits gets one, drawn in proportion to information gain), or
    with Weka's MDL for every member (``-mdl``), at random resolution (``-rand``: 2 to 12 bins
    per numeric column, cut points at rows' values drawn uniformly) or half of each (``-mix``:
    ``discretization="mixed"``); ``-hdp``
    samples ``--iterations`` iterations with the paper's sampler (the authors ran 1,000),
    ``-hdpe`` with the ensemble's default sampler (``sampler="ensemble"``; ``eskdb-mix-dwc-hdpe``
    is ``ESKDBClassifier()`` as shipped, ``eskdb-hdpe`` the default before the discriminative
    layer, whose name every earlier cell carries), ``-hdpa`` / ``-hdpp`` with the single
    classifier's adaptive presets. Every member scores its selection on a sample of the rows
    (the classifier's default ``selection_rows="auto"``: at most ``max(5000, 1000 x
    classes)``). ``-dwa`` and ``-dwc`` add the discriminative layer
    (``discriminative="attribute"`` or ``"attribute_class"``, the ridge chosen by
    cross-validation).
``rf-weka``
    Weka's RandomForest as the paper ran it (``-I 100 -K 0``, Debian's ``weka`` package; ``make
    weka``) on the same MDL codes written as ARFF with every attribute nominal, so that a split on
    an attribute is multi-way (:mod:`validation.experiments.weka`). Skipped with the reason when
    Java or Weka is missing.
``rf-raw``
    The same forest on the *raw* columns, what a practitioner runs: numeric columns as they are
    (missing values left to scikit-learn's forest), nominal columns one-hot with a missing value
    as a level of its own (``max_features`` counted in the resulting features).
``lightgbm-raw``, ``catboost-raw``, ``xgboost-raw``
    Gradient boosting as a practitioner runs it in 2026 (:class:`RawBooster`): each library's
    default settings on the raw columns, numeric columns as numbers with missing values left to
    the library, nominal columns as the library's native categorical features (LightGBM and
    XGBoost: a pandas categorical with the training fold's categories, missing and unseen values
    missing; CatBoost: the values as text, a missing value a level of its own, since CatBoost
    takes no missing categorical value). Optional (``pip install hdpbn[boost]``): skipped with a
    note when the library is absent.

Except ``rf-raw`` and the ``-raw`` boosters, the baselines see exactly the data the BNCs see:
the BNC encoder (:class:`TableEncoder`, MDL discretisation fitted on the training fold) turns
every column into *ordinal integer codes* (MDL intervals keep their order; nominal values are
coded in sorted order; a missing value is a code of its own; a value unseen in training is
``-1``). The codes are given to the trees as ordinal numbers, not one-hot: this keeps
``max_features`` counted in attributes, as in Weka.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from sklearn.ensemble import RandomForestClassifier

from fastpath.classifier import BayesNetClassifier, ESKDBClassifier
from fastpath.encode import TableEncoder, as_frame
from fastpath.estimate.hdp import PAPER_ITERATIONS, HDPOptions
from fastpath.structure import ENSEMBLE_SELECTION_ROWS

from .weka import WekaForest

__all__ = [
    "DEFAULT_CLASSIFIERS",
    "QUICK_CLASSIFIERS",
    "RAW_BOOSTERS",
    "ClassifierSpec",
    "DiscretisedBaseline",
    "RawBooster",
    "RawForest",
    "fitted_details",
    "make_classifier",
    "parse_classifier",
]

#: the paper's line-up: 8 structures x {m, HDP}, random forest and XGBoost
DEFAULT_CLASSIFIERS: tuple[str, ...] = (
    *(f"{s}-{e}" for s in ("nb", "tan", "kdb1", "kdb2", "kdb3", "kdb4", "kdb5", "skdb5")
      for e in ("m", "hdp")),
    "rf",
    "xgboost",
)

#: ``--quick``: a handful, enough to exercise every code path
QUICK_CLASSIFIERS: tuple[str, ...] = ("nb-m", "tan-m", "kdb3-m", "kdb3-hdp", "skdb3-m", "rf")

_NAME = re.compile(r"^(nb|tan|kdb(\d+)|skdb(\d+))-(mloo|mv|m|hdpr|hdpf|hdpa|hdpp|hdp|hgs|hls)$")
_ENSEMBLE = re.compile(
    r"^eskdb(\d+)?(-mdl|-rand|-mix)?(-dwa|-dwc)?-(m|hdpa|hdpp|hdpe|hdp|hgs|hls)$")
#: the ensembles' name parts for their members' discretisation (none: the stochastic MDL)
_ENSEMBLE_CUTS = {None: "stochastic", "-mdl": "mdl", "-rand": "random", "-mix": "mixed"}
#: the ensembles' name parts for their discriminative layer (none: the generative model)
_ENSEMBLE_LAYER = {None: None, "-dwa": "attribute", "-dwc": "attribute_class"}
#: ESKDB's members' K and default number of members (the authors' settings)
ESKDB_K = 5
ESKDB_MEMBERS = 20


@dataclass(frozen=True)
class ClassifierSpec:
    """A parsed classifier name."""

    name: str
    family: str  # "bnc", "eskdb", "rf", "rf-onehot", "rf-raw", "rf-weka", "xgboost" or a
    # gradient-boosting library on raw columns (RAW_BOOSTERS)
    structure: str | None = None  # "nb", "tan", "kdb", "skdb"
    k: int = 0
    estimation: str | None = None  # "m", "hdp", "hgs" or "hls"
    n_members: int = 0  # eskdb
    discretization: str = "stochastic"  # eskdb: the members' (ESKDBClassifier's parameter)
    m_backoff: str = "path"  # bnc with m-estimates: "path" (-m) or "value" (-mv)
    m_rule: str = "holdout"  # bnc with m-estimates: "holdout" (-m, -mv) or "auto" (-mloo)
    reference_sampler: bool = False  # bnc with HDP: the Java sampler's shortcuts (-hdpr)
    fast_sampler: bool = False  # bnc with HDP: sampler="strict", adaptive length (-hdpf)
    adaptive_sampler: bool = False  # HDP with an adaptive sampler (-hdpa, -hdpp)
    plain_moves: bool = False  # -hdpp: sampler="adaptive-plain"
    ensemble_sampler: bool = False  # eskdb -hdpe: sampler="ensemble", the ensemble's default
    discriminative: str | None = None  # eskdb -dwa, -dwc: the discriminative layer

    @property
    def adaptive_preset(self) -> str:
        """The preset of an adaptive-sampler classifier."""
        if self.ensemble_sampler:
            return "ensemble"
        return "adaptive-plain" if self.plain_moves else "adaptive"

    def cache_tag(self, iterations: int) -> str:
        """Directory name of this classifier's cached cells (HDP tags carry the iterations;
        the adaptive samplers', ``-auto``, their adaptive length; the ensembles' the rows of
        their members' selection sample, ``-selauto``, since 2026-11-26: cells computed when
        every row scored the selection are not reused; and, with stochastic cut points, ``-fc``
        for the authors' forced cut, since 2026-11-28)."""
        if self.fast_sampler or self.adaptive_sampler:
            tag = f"{self.name}-auto"
        else:
            tag = f"{self.name}-it{iterations}" if self.estimation == "hdp" else self.name
        if self.family == "eskdb":
            tag += f"-sel{ENSEMBLE_SELECTION_ROWS}" + (
                "-fc" if self.discretization in ("stochastic", "mixed") else "")
        return tag

    @property
    def label(self) -> str:
        """Display name in the paper's style (``kDB-3``, ``SkDB-5``, ``TAN``, ``RF``)."""
        if self.family == "rf":
            return "RF"
        if self.family == "rf-onehot":
            return "RF (one-hot)"
        if self.family == "rf-raw":
            return "RF (raw columns)"
        if self.family == "rf-weka":
            return "RF (Weka)"
        if self.family == "eskdb":
            det = {"stochastic": "", "mdl": " (MDL)", "random": " (random resolution)",
                   "mixed": " (mixed resolution)"}[self.discretization]
            if self.estimation == "hdp":
                est = (f"HDP ({self.adaptive_preset} sampler)" if self.adaptive_sampler
                       else "HDP")
            else:
                est = {"hgs": "HGS", "hls": "HLS"}.get(self.estimation or "", "m")
            layer = {None: "", "attribute": " + weights (attribute)",
                     "attribute_class": " + weights (attribute, class)"}[self.discriminative]
            return f"ESKDB-{self.n_members}{det}-{est}{layer}"
        if self.family == "xgboost":
            return "XGBoost"
        if self.family in RAW_BOOSTERS:
            return {"lightgbm-raw": "LightGBM", "catboost-raw": "CatBoost",
                    "xgboost-raw": "XGBoost"}[self.family] + " (raw columns)"
        base = {"nb": "NB", "tan": "TAN"}.get(self.structure or "")
        if base is None:
            base = f"{'SkDB' if self.structure == 'skdb' else 'kDB'}-{self.k}"
        if self.estimation == "hdp":
            if self.fast_sampler:
                return f"{base}-HDP (strict sampler)"
            if self.adaptive_sampler:
                return f"{base}-HDP ({self.adaptive_preset} sampler)"
            return f"{base}-HDP (reference sampler)" if self.reference_sampler else f"{base}-HDP"
        if self.estimation in ("hgs", "hls"):
            return f"{base}-{self.estimation.upper()}"
        if self.m_rule == "auto":
            return f"{base}-m (leave-one-out m)"
        return f"{base}-m (value back-off)" if self.m_backoff == "value" else f"{base}-m"


def parse_classifier(name: str) -> ClassifierSpec:
    """Parse ``nb-m``, ``kdb5-hdp``, ``skdb5-m``, ``kdb3-mv``, ``eskdb-hdp``, ``rf``, ``rf-raw``,
    ``xgboost`` (case-insensitive)."""
    if not isinstance(name, str):
        raise TypeError(f"a classifier name must be a string, got {name!r}")
    key = name.strip().lower()
    if key in ("rf", "rf-onehot", "rf-raw", "rf-weka", "xgboost", *RAW_BOOSTERS):
        return ClassifierSpec(name=key, family=key)
    ensemble = _ENSEMBLE.match(key)
    if ensemble is not None:
        members, cuts, layer, estimation = ensemble.groups()
        n_members = ESKDB_MEMBERS if members is None else int(members)
        if n_members < 1:
            raise ValueError(f"{name!r}: an ensemble needs at least one member")
        adaptive = estimation in ("hdpa", "hdpp", "hdpe")
        return ClassifierSpec(key, "eskdb", "skdb", ESKDB_K, "hdp" if adaptive else estimation,
                              n_members, _ENSEMBLE_CUTS[cuts], adaptive_sampler=adaptive,
                              plain_moves=estimation == "hdpp",
                              ensemble_sampler=estimation == "hdpe",
                              discriminative=_ENSEMBLE_LAYER[layer])
    match = _NAME.match(key)
    if match is None:
        raise ValueError(
            f"unknown classifier {name!r}: expected <structure>-<estimation> with structure "
            "nb, tan, kdb<K> or skdb<K> and estimation method m, mv (m-estimates with the value "
            "back-off), mloo (m chosen by leave-one-out), hdp, hdpr (HDP with the reference "
            "sampler's shortcuts), hdpa (HDP with the default adaptive sampler), hdpp (the "
            "adaptive rule with the paper's plain moves), hdpf (HDP with the strict adaptive "
            "sampler), hgs (hierarchical gradient smoothing) or hls (hierarchical linear "
            "smoothing) (e.g. kdb3-hdp), "
            "eskdb[E][-mdl|-rand|-mix][-dwa|-dwc]-<estimation>, or rf, rf-onehot, rf-raw, "
            "rf-weka, xgboost, "
            "lightgbm-raw, catboost-raw, xgboost-raw"
        )
    head, kdb_k, skdb_k, estimation = match.groups()
    backoff = "value" if estimation == "mv" else "path"
    m_rule = "auto" if estimation == "mloo" else "holdout"
    reference = estimation == "hdpr"
    fast = estimation == "hdpf"
    adaptive = estimation in ("hdpa", "hdpp")
    plain = estimation == "hdpp"
    estimation = {"mv": "m", "mloo": "m", "hdpr": "hdp", "hdpf": "hdp",
                  "hdpa": "hdp", "hdpp": "hdp"}.get(estimation, estimation)
    if kdb_k is not None:
        structure, k = "kdb", int(kdb_k)
    elif skdb_k is not None:
        structure, k = "skdb", int(skdb_k)
    else:
        structure, k = head, 1 if head == "tan" else 0
    return ClassifierSpec(key, "bnc", structure, k, estimation, m_backoff=backoff, m_rule=m_rule,
                          reference_sampler=reference, fast_sampler=fast,
                          adaptive_sampler=adaptive, plain_moves=plain)


class DiscretisedBaseline:
    """A scikit-learn-style tree ensemble on the BNC encoder's ordinal codes.

    ``fit`` learns the encoder (MDL cut points, nominal categories) on the training rows, then
    the model on their codes; ``predict_proba`` codes the test rows the same way.
    """

    def __init__(self, kind: str, *, categorical_features: Any = "auto", seed: int = 0,
                 n_jobs: int = 1) -> None:
        if kind not in ("rf", "rf-onehot", "xgboost"):
            raise ValueError(f"kind must be 'rf', 'rf-onehot' or 'xgboost', got {kind!r}")
        self.kind = kind
        self.categorical_features = categorical_features
        self.seed = seed
        self.n_jobs = n_jobs

    def _model(self, n_attributes: int, n_classes: int):
        if self.kind in ("rf", "rf-onehot"):
            return RandomForestClassifier(
                n_estimators=100,
                max_features=max(1, int(math.log2(max(n_attributes, 1)) + 1)),
                min_samples_leaf=1,
                max_depth=None,
                bootstrap=True,
                n_jobs=self.n_jobs,
                random_state=self.seed,
            )
        from xgboost import XGBClassifier

        return XGBClassifier(
            n_estimators=50,
            max_depth=6,
            tree_method="hist",
            n_jobs=self.n_jobs,
            random_state=self.seed,
            objective="binary:logistic" if n_classes == 2 else "multi:softprob",
        )

    def fit(self, X, y) -> DiscretisedBaseline:
        y_arr = np.asarray(y)
        self.classes_, y_codes = np.unique(y_arr, return_inverse=True)
        n_classes = self.classes_.size
        self.encoder_ = TableEncoder(self.categorical_features).fit(X, y_codes, n_classes)
        codes = self._features(self.encoder_.transform(X), fit=True)
        self.model_ = self._model(codes.shape[1], n_classes)
        self.model_.fit(codes, y_codes)
        return self

    def _features(self, codes: np.ndarray, fit: bool = False) -> np.ndarray:
        """Ordinal codes as float32, or (``rf-onehot``) one indicator per code seen in training;
        an unseen or unknown code (-1) gives an all-zero block."""
        if self.kind != "rf-onehot":
            return codes.astype(np.float32)
        if fit:
            self.onehot_values_ = [np.unique(codes[:, j]) for j in range(codes.shape[1])]
        blocks = [codes[:, [j]] == v[None, :] for j, v in enumerate(self.onehot_values_)]
        return np.concatenate(blocks, axis=1).astype(np.float32)

    def predict_proba(self, X) -> np.ndarray:
        codes = self._features(self.encoder_.transform(X))
        proba = np.asarray(self.model_.predict_proba(codes), dtype=np.float64)
        out = np.zeros((codes.shape[0], self.classes_.size))
        # a model may know fewer classes than the labels (never here, but be exact)
        known = np.asarray(getattr(self.model_, "classes_", np.arange(proba.shape[1])), int)
        out[:, known] = proba
        return out


class _RawBaseline:
    """What the baselines on raw columns share: the nominal columns (found as the BNCs find
    them), each one's levels in the training rows, the classes, and the probabilities in the
    order of the labels. A subclass sets ``categorical_features`` and ``model_`` and codes the
    columns in ``_features``."""

    categorical_features: Any
    model_: Any

    def _learn_columns(self, X, y, *, missing_level: bool) -> tuple[pd.DataFrame, np.ndarray]:
        """The training frame and class codes; sets ``classes_``, ``nominal_`` and ``levels_``
        (each nominal column's sorted texts, a missing value a level of its own when
        ``missing_level``)."""
        frame, _ = as_frame(X)
        self.classes_, y_codes = np.unique(np.asarray(y), return_inverse=True)
        self.nominal_ = TableEncoder(self.categorical_features).nominal_mask(frame)
        self.levels_ = {}
        for j in np.flatnonzero(self.nominal_):
            col = frame.iloc[:, j]
            levels = {str(v) for v in col[col.notna()]}
            if missing_level and col.isna().any():
                levels.add(_MISSING)
            self.levels_[int(j)] = np.asarray(sorted(levels))
        return frame, y_codes

    def _features(self, X) -> Any:
        raise NotImplementedError

    def predict_proba(self, X) -> np.ndarray:
        proba = np.asarray(self.model_.predict_proba(self._features(X)), dtype=np.float64)
        out = np.zeros((proba.shape[0], self.classes_.size))
        out[:, np.asarray(self.model_.classes_, int)] = proba
        return out


class RawForest(_RawBaseline):
    """The forest of ``rf`` on the raw columns (``rf-raw``): numeric columns as numbers (NaN for
    a missing value, which scikit-learn's forest routes itself), nominal columns one-hot with a
    missing value as a level of its own; a value unseen in training is all zeros."""

    def __init__(self, *, categorical_features: Any = "auto", seed: int = 0,
                 n_jobs: int = 1) -> None:
        self.categorical_features = categorical_features
        self.seed = seed
        self.n_jobs = n_jobs

    def _features(self, X) -> np.ndarray:
        frame, _ = as_frame(X)
        blocks = []
        for j, column in enumerate(frame.columns):
            col = frame[column]
            if self.nominal_[j]:
                text = col.astype(object).where(col.notna(), _MISSING).astype(str).to_numpy()
                blocks.append((text[:, None] == self.levels_[j][None, :]).astype(np.float32))
            else:
                values = pd.to_numeric(col, errors="coerce").to_numpy(dtype=np.float64)
                blocks.append(values[:, None].astype(np.float32))
        return np.concatenate(blocks, axis=1)

    def fit(self, X, y) -> RawForest:
        frame, y_codes = self._learn_columns(X, y, missing_level=True)
        features = self._features(frame)
        self.model_ = RandomForestClassifier(
            n_estimators=100,
            max_features=max(1, int(math.log2(max(features.shape[1], 1)) + 1)),
            min_samples_leaf=1,
            max_depth=None,
            bootstrap=True,
            n_jobs=self.n_jobs,
            random_state=self.seed,
        ).fit(features, y_codes)
        return self


#: the gradient-boosting baselines on raw columns, and the module each needs
RAW_BOOSTERS: dict[str, str] = {
    "lightgbm-raw": "lightgbm", "catboost-raw": "catboost", "xgboost-raw": "xgboost",
}


class RawBooster(_RawBaseline):
    """A gradient-boosting library with its defaults on the raw columns (``lightgbm-raw``,
    ``catboost-raw``, ``xgboost-raw``; module doc): what a practitioner fits without any of the
    BNCs' preprocessing. Numeric columns are numbers (a non-number is missing); nominal columns
    (:meth:`TableEncoder.nominal_mask`) are native categorical features with the categories of
    the training rows."""

    def __init__(self, kind: str, *, categorical_features: Any = "auto", seed: int = 0,
                 n_jobs: int = 1) -> None:
        if kind not in RAW_BOOSTERS:
            raise ValueError(f"kind must be one of {sorted(RAW_BOOSTERS)}, got {kind!r}")
        self.kind = kind
        self.categorical_features = categorical_features
        self.seed = seed
        self.n_jobs = n_jobs

    def _features(self, X) -> pd.DataFrame:
        frame, _ = as_frame(X)
        columns = {}
        for j, column in enumerate(frame.columns):
            col = frame[column]
            name = f"f{j}"  # plain names: the libraries restrict the characters of names
            if not self.nominal_[j]:
                columns[name] = pd.to_numeric(col, errors="coerce").to_numpy(dtype=np.float64)
                continue
            text = col.astype(object).where(col.notna(), None)
            text = text.map(lambda v: v if v is None else str(v))
            if self.kind == "catboost-raw":  # CatBoost takes no missing categorical value
                columns[name] = text.where(text.notna(), _MISSING).astype(str).to_numpy()
            elif self.levels_[j].size == 0:
                # no value in the training rows (anneal's all-missing columns): a missing
                # number, which the libraries accept (XGBoost refuses a category-less column)
                columns[name] = np.full(len(frame), np.nan)
            else:  # a value the training rows lack is missing, as the library would make it
                known = text.where(text.isin(self.levels_[j]), None)
                columns[name] = pd.Categorical(known, categories=self.levels_[j])
        return pd.DataFrame(columns, index=pd.RangeIndex(len(frame)))

    def _model(self):
        if self.kind == "lightgbm-raw":
            from lightgbm import LGBMClassifier

            return LGBMClassifier(random_state=self.seed, n_jobs=self.n_jobs, verbosity=-1)
        if self.kind == "xgboost-raw":
            from xgboost import XGBClassifier

            return XGBClassifier(enable_categorical=True, tree_method="hist",
                                 random_state=self.seed, n_jobs=self.n_jobs)
        from catboost import CatBoostClassifier

        return CatBoostClassifier(random_seed=self.seed, thread_count=self.n_jobs,
                                  verbose=False, allow_writing_files=False)

    def fit(self, X, y) -> RawBooster:
        frame, y_codes = self._learn_columns(X, y, missing_level=False)
        features = self._features(frame)
        self.model_ = self._model()
        if self.kind == "catboost-raw":
            nominal = [f"f{j}" for j in np.flatnonzero(self.nominal_)]
            self.model_.fit(features, y_codes, cat_features=nominal)
        else:
            self.model_.fit(features, y_codes)
        return self


#: the experiments keep every column, as the paper's (Weka's) protocol does: the library's default
#: leaves out identifier-like columns, which a small training set (a learning curve's 100 rows)
#: could make of an ordinary nominal column
_PAPER_COLUMNS = None

#: the level of a missing nominal value in ``rf-raw`` (not a value any table holds)
_MISSING = "\x00missing"


def make_classifier(
    spec: ClassifierSpec,
    *,
    iterations: int = PAPER_ITERATIONS,
    seed: int = 0,
    categorical_features: Any = "auto",
    n_jobs: int = 1,
):
    """A fresh, unfitted model for one classifier name (fit / predict_proba / classes_)."""
    if spec.family in ("rf", "rf-onehot", "xgboost"):
        return DiscretisedBaseline(
            spec.family, categorical_features=categorical_features, seed=seed, n_jobs=n_jobs
        )
    if spec.family == "rf-raw":
        return RawForest(categorical_features=categorical_features, seed=seed, n_jobs=n_jobs)
    if spec.family in RAW_BOOSTERS:
        return RawBooster(spec.family, categorical_features=categorical_features, seed=seed,
                          n_jobs=n_jobs)
    if spec.family == "rf-weka":
        return WekaForest(categorical_features=categorical_features, seed=seed, n_jobs=n_jobs)
    if spec.family == "eskdb":
        ensemble = ESKDBClassifier(
            n_estimators=spec.n_members, k=spec.k, estimation=spec.estimation,
            discretization=spec.discretization, categorical_features=categorical_features,
            discriminative=spec.discriminative,
            n_jobs=n_jobs, random_state=seed, exclude_features=_PAPER_COLUMNS,
            sampler=spec.adaptive_preset if spec.adaptive_sampler else "paper",
        )
        if not spec.adaptive_sampler:  # the paper's sampler for --iterations iterations (its
            # tolerance, which only warns, the preset's scaled to the ensemble)
            ensemble.set_params(sampler=ensemble.hdp_options().replace(n_iter=iterations))
        return ensemble
    kwargs: dict[str, Any] = dict(
        estimation=spec.estimation,
        categorical_features=categorical_features,
        exclude_features=_PAPER_COLUMNS,
        random_state=seed,
        n_jobs=n_jobs,  # the threads of every stage, numba's kernels included
    )
    if spec.estimation == "hdp" and spec.fast_sampler:
        kwargs.update(sampler="strict")
    elif spec.estimation == "hdp" and spec.adaptive_sampler:
        kwargs.update(sampler=spec.adaptive_preset)
    elif spec.estimation == "hdp":
        reference = dict(update="window", root="reference") if spec.reference_sampler else {}
        kwargs.update(sampler=HDPOptions.preset("paper", n_iter=iterations, **reference))
    elif spec.estimation in ("hgs", "hls"):
        pass  # no option: HGS fits its weights by leave-one-out, HLS has the authors' C = 1
    else:
        # -m, -mv: the paper's rule, m in {0, 0.05, 0.2, 1, 5, 20} by RMSE on a holdout of N/10
        # rows; -mloo: the library's default, leave-one-out
        kwargs.update(m=spec.m_rule, m_backoff=spec.m_backoff)
    return BayesNetClassifier(structure=spec.structure, k=spec.k, **kwargs)


def fitted_details(model) -> dict[str, Any]:
    """What a fitted model chose: m, selected n* and k* (JSON-serialisable)."""
    out: dict[str, Any] = {}
    m = getattr(model, "m_", None)
    if m is not None:
        out["m"] = float(m)
    members = getattr(model, "members_", None)
    if members is not None and hasattr(model, "n_estimators"):  # an ensemble's members
        out["n_members"] = len(members)
        out["mean_n_selected"] = float(np.mean([mb.selection.n_selected for mb in members]))
        out["mean_k_selected"] = float(np.mean([mb.selection.k_selected for mb in members]))
    results = getattr(model, "hdp_results_", None)
    if results:
        iters = np.array([r.n_iterations for r in results])
        out["hdp_seconds"] = float(sum(r.seconds for r in results))
        out["hdp_iterations"] = {"min": int(iters.min()), "median": float(np.median(iters)),
                                 "max": int(iters.max()), "sum": int(iters.sum()),
                                 "at_max_iter": int(sum(r.stop_reason == "max_iter"
                                                        for r in results))}
    selection = getattr(model, "selection_", None)
    if selection is not None:
        out["n_selected"] = int(selection.n_selected)
        out["k_selected"] = int(selection.k_selected)
        out["n_attributes"] = int(selection.structure.n_attributes)
    return out
