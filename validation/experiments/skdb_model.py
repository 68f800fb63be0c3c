"""Selective kDB as a classifier, for the experiments, until the library's classifier has it.

:class:`fastpath.BayesNetClassifier` gets ``structure="skdb"`` by the same steps as here
(:func:`fastpath.selective.select_skdb` in place of :func:`fastpath.structure.kdb`, and context
trees for the selected attributes only). :func:`validation.experiments.classifiers.make_classifier`
uses the library's classifier as soon as ``"skdb"`` is among its structures, and this class
otherwise.
"""

from __future__ import annotations

from typing import Any

from fastpath.classifier import BayesNetClassifier, _check_random_state
from fastpath.counting import CountAccumulator, TreeSpec
from fastpath.encoding import TableEncoder
from fastpath.mestimate import m_estimate_table
from fastpath.selective import select_skdb

__all__ = ["SelectiveKDBClassifier"]


class SelectiveKDBClassifier(BayesNetClassifier):
    """``BayesNetClassifier`` whose structure is selective kDB with ``k`` as the largest k*.

    Extra fitted attributes: ``selection_`` (:class:`fastpath.selective.SelectedStructure`),
    ``n_selected_``, ``k_selected_``. Unselected attributes have no context tree.
    """

    def __init__(self, k: int = 5, estimator: str = "m", **kwargs: Any) -> None:
        super().__init__(structure="kdb", k=k, estimator=estimator, **kwargs)

    @classmethod
    def _param_names(cls) -> tuple[str, ...]:
        return BayesNetClassifier._param_names()

    def fit(self, X: Any, y: Any) -> SelectiveKDBClassifier:
        self._validate_params()
        frame = self._validate_X(X, fitting=True)
        classes, y_codes = self._validate_y(y, frame.shape[0])
        if classes.size < 2:
            raise ValueError(
                f"the target has only 1 class ({classes[0]!r}); a classifier needs at least 2"
            )
        self.classes_ = classes
        n_classes = classes.size
        self.encoder_ = TableEncoder(self.categorical_features).fit(frame, y_codes, n_classes)
        codes = self.encoder_.transform(frame)
        cards = self.encoder_.cardinalities_

        self.selection_ = select_skdb(codes, y_codes, cards, n_classes, int(self.k))
        self.structure_ = self.selection_.structure
        self.n_selected_ = self.selection_.n_selected
        self.k_selected_ = self.selection_.k_selected

        self.tree_specs_ = self._tree_specs(cards, n_classes)
        rng = _check_random_state(self.random_state)
        if self.estimator == "m":
            self._select_m(codes, y_codes, rng)
        accumulator = CountAccumulator(self.tree_specs_).update(codes, y_codes)
        self.trees_ = [self._named_tree(accumulator, i) for i in range(len(self.tree_specs_))]
        if self.estimator == "m":
            tables = [m_estimate_table(t, self.m_) for t in self.trees_]
        else:
            tables = self._hdp_tables(rng)
        for t in tables:
            t.flags.writeable = False
        self.probability_tables_ = tables
        self._packed = self._pack(self.trees_, tables)
        return self

    def _tree_specs(self, cards: tuple[int, ...], n_classes: int) -> list[TreeSpec]:
        specs = [TreeSpec(-1, (), n_classes, ())]
        for i in sorted(self.selection_.attributes):
            order = self.structure_.branching_order(i)
            specs.append(
                TreeSpec(i, (-1, *order), cards[i], (n_classes, *(cards[p] for p in order)))
            )
        return specs
