"""fastpath.evaluation._metrics: the scores, each against its formula written out.

The paper's RMSE is checked against the authors' computation as their evaluation code does it
(the squared error summed over every class of every test row, divided by rows x classes, then
the root), for 2, 3 and 10 classes; the Brier score against its definition and scikit-learn's
binary Brier score; log loss against scikit-learn's. Properness is tested as mathematics: the
expected Brier score under a distribution q is smallest at the prediction q, while the RMSE of
the true class is beaten there by a prediction that moves mass off the least likely class.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from sklearn.metrics import accuracy_score, brier_score_loss
from sklearn.metrics import log_loss as sk_log_loss

from fastpath.evaluation import (
    METRICS,
    brier_score,
    log_loss,
    rmse,
    rmse_true_class,
    score,
    zero_one_loss,
)


@st.composite
def probabilities(draw, n_classes=None):
    n = draw(st.integers(1, 20))
    k = draw(st.integers(2, 12)) if n_classes is None else n_classes
    raw = draw(hnp.arrays(np.float64, (n, k), elements=st.floats(0.0, 1.0)))
    raw[:, 0] += 1e-3  # a row of zeros has no distribution
    y = np.array(draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n)))
    return y, raw / raw.sum(axis=1, keepdims=True)


def authors_rmse(y, proba):
    """The authors' loop: squared error summed over rows and classes, over rows x classes."""
    total = 0.0
    n_rows, n_classes = proba.shape
    for i in range(n_rows):
        for c in range(n_classes):
            total += (proba[i, c] - (1.0 if c == y[i] else 0.0)) ** 2
    return math.sqrt(total / (n_rows * n_classes))


@pytest.mark.parametrize("n_classes", [2, 3, 10])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_rmse_is_the_authors_formula(n_classes, data):
    y, proba = data.draw(probabilities(n_classes))
    assert rmse(y, proba) == pytest.approx(authors_rmse(y, proba), rel=1e-12, abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(probabilities())
def test_every_score_equals_its_formula(case):
    y, proba = case
    n, k = proba.shape
    onehot = np.eye(k)[y]
    brier = sum(sum((proba[i, c] - onehot[i, c]) ** 2 for c in range(k)) for i in range(n)) / n
    assert brier_score(y, proba) == pytest.approx(brier, rel=1e-12, abs=1e-12)
    assert rmse(y, proba) == pytest.approx(math.sqrt(brier / k), rel=1e-12, abs=1e-12)
    p_true = [proba[i, c] for i, c in enumerate(y)]
    assert rmse_true_class(y, proba) == pytest.approx(
        math.sqrt(sum((1 - p) ** 2 for p in p_true) / n), rel=1e-12, abs=1e-12)
    assert zero_one_loss(y, proba) == pytest.approx(
        1.0 - accuracy_score(y, proba.argmax(axis=1)), abs=1e-15)
    assert log_loss(y, proba) == pytest.approx(
        sk_log_loss(y, np.clip(proba, 1e-15, 1), labels=list(range(k))), rel=1e-6)
    assert score(y, proba) == {name: f(y, proba) for name, f in METRICS.items()}


@settings(max_examples=60, deadline=None)
@given(probabilities(2))
@example((np.array([0]), np.array([[1.0, 1e-12]])))  # a confident right row: no cancellation
def test_two_classes_the_rmse_is_the_true_class_s_and_brier_is_scikit_learn_s(case):
    y, proba = case
    assert rmse(y, proba) == pytest.approx(rmse_true_class(y, proba), rel=1e-12, abs=1e-12)
    # scikit-learn's binary Brier score is the mean of (p_1 - [y = 1])^2: half of ours
    assert brier_score(y, proba) == pytest.approx(
        2 * brier_score_loss(y, proba[:, 1], pos_label=1), rel=1e-12, abs=1e-12)


def _expected(metric, q, p):
    """E_{y ~ q} of a per-row score of the prediction p."""
    return sum(q[y] * metric(np.array([y]), p[None, :]) ** 2 for y in range(q.size))


def test_brier_is_proper_and_the_true_class_rmse_is_not():
    q = np.array([0.5, 0.3, 0.2])
    moved = np.array([0.6, 0.4, 0.0])  # the least likely class's mass given to the others
    # the squared per-row scores: Brier / 3 and (1 - p_y)^2
    assert _expected(rmse, q, moved) > _expected(rmse, q, q)
    assert _expected(rmse_true_class, q, moved) < _expected(rmse_true_class, q, q)
    # and q minimises the expected Brier score over a grid of the simplex
    best = min(((a, b, 1 - a - b) for a in np.linspace(0, 1, 51) for b in np.linspace(0, 1, 51)
                if a + b <= 1 + 1e-12), key=lambda p: _expected(rmse, q, np.array(p)))
    np.testing.assert_allclose(best, q, atol=1e-12)


def test_the_issue_s_glass_sized_example_differs_by_the_number_of_classes():
    # a confident wrong prediction over 6 classes: the true class's RMSE is 1, the paper's
    # counts the two classes that are wrong out of six
    proba = np.array([[0.0, 1.0, 0.0, 0.0, 0.0, 0.0]])
    y = np.array([0])
    assert rmse_true_class(y, proba) == 1.0
    assert rmse(y, proba) == pytest.approx(math.sqrt(2 / 6))
    assert brier_score(y, proba) == 2.0


def test_log_loss_clips_impossible_classes_at_1e_15():
    y = np.array([0, 1])
    proba = np.array([[1.0, 0.0], [1.0, 0.0]])
    assert log_loss(y, proba) == pytest.approx(-math.log(1e-15) / 2)
    assert zero_one_loss(y, proba) == 0.5
    assert rmse(y, proba) == pytest.approx(math.sqrt(0.5))


def test_zero_one_loss_breaks_ties_to_the_first_class():
    proba = np.full((2, 3), 1 / 3)
    assert zero_one_loss(np.array([0, 0]), proba) == 0.0
    assert zero_one_loss(np.array([1, 2]), proba) == 1.0


def test_score_refuses_mismatched_shapes():
    with pytest.raises(ValueError, match="n_rows = 2"):
        score(np.array([0, 1]), np.full((3, 2), 0.5))
