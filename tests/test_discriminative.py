"""The discriminative layer's objective and its minimiser (fastpath.estimate._discriminative)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastpath.estimate import _discriminative
from fastpath.estimate._discriminative import (
    _finite,
    _fit,
    _hessian,
    _minimize,
    _newton,
    _objective,
    choose_penalty,
    fit_term_weights,
    mean_log_loss,
    weight_index,
)


def _problem(seed: int, n_rows: int = 60, n_terms: int = 4, n_classes: int = 3):
    rng = np.random.default_rng(seed)
    terms = np.log(rng.dirichlet(np.ones(n_classes), size=(n_rows, n_terms)))
    y = rng.integers(0, n_classes, n_rows)
    return terms, y


def _f(w, terms, y, index, lam):
    """The objective written from its definition: mean log loss plus the ridge / n."""
    z = np.einsum("rac,ac->rc", terms, w[index])
    log_z = np.log(np.exp(z).sum(axis=1))
    n = terms.shape[0]
    return np.mean(log_z - z[np.arange(n), y]) + 0.5 * lam / n * np.sum((w - 1) ** 2)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), granularity=st.sampled_from(["attribute", "attribute_class"]),
       lam=st.sampled_from([0.1, 1.0, 30.0]))
def test_the_objective_and_its_gradient_are_the_definitions(seed, granularity, lam):
    terms, y = _problem(seed)
    index = weight_index(terms.shape[1], terms.shape[2], granularity)
    w = np.random.default_rng(seed + 1).uniform(0.2, 2.0, int(index.max()) + 1)
    f, g = _objective(w, terms, y, index, lam)
    assert f == pytest.approx(_f(w, terms, y, index, lam), rel=1e-12)
    h = 1e-6
    numeric = [(_f(w + h * e, terms, y, index, lam) - _f(w - h * e, terms, y, index, lam))
               / (2 * h) for e in np.eye(w.size)]
    np.testing.assert_allclose(g, numeric, rtol=1e-6, atol=1e-9)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), granularity=st.sampled_from(["attribute", "attribute_class"]),
       lam=st.sampled_from([0.1, 1.0, 30.0]), n_rows=st.integers(1, 13))
def test_the_hessian_is_the_gradients_derivative(seed, granularity, lam, n_rows):
    # any number of rows: the Hessian adds the rows four at a time
    terms, y = _problem(seed, n_rows=n_rows)
    index = weight_index(terms.shape[1], terms.shape[2], granularity)
    w = np.random.default_rng(seed + 1).uniform(0.2, 2.0, int(index.max()) + 1)
    h = _hessian(w, terms, index, lam, w.size)
    step = 1e-6
    numeric = np.array([(_objective(w + step * e, terms, y, index, lam)[1]
                         - _objective(w - step * e, terms, y, index, lam)[1]) / (2 * step)
                        for e in np.eye(w.size)])
    np.testing.assert_allclose(h, numeric, rtol=1e-5, atol=1e-8)
    np.testing.assert_array_equal(h, h.T)


@pytest.mark.parametrize("granularity", ["attribute", "attribute_class"])
@pytest.mark.parametrize("lam", [1e-3, 1.0, 100.0])
def test_newton_and_lbfgs_reach_the_same_minimum(granularity, lam):
    # a weak ridge on informative terms: some weights grow far from 1, some go to their bound 0
    terms, _ = _problem(21, n_rows=300)
    y = _drawn_from(terms, np.array([1.0, 3.0, 0.0, 1.0]), 22)
    index = weight_index(terms.shape[1], terms.shape[2], granularity)
    start = np.ones(int(index.max()) + 1)
    by_newton, f_newton, _ = _newton(start, terms, y, index, lam, 100, 1e-9, 0.0)
    bounds = np.zeros(start.size), np.full(start.size, np.inf)
    by_lbfgs, f_lbfgs, _ = _minimize(start, (terms, y, index, lam), *bounds, 5000, 1e-9, 0.0, 10)
    assert f_newton == pytest.approx(f_lbfgs, abs=1e-10)
    np.testing.assert_allclose(by_newton, by_lbfgs, atol=1e-4)
    assert (by_newton >= 0).all()


def test_the_fit_solves_small_problems_by_newton_and_large_ones_by_lbfgs(monkeypatch):
    terms, y = _problem(23, n_rows=100)
    index = weight_index(terms.shape[1], terms.shape[2], "attribute_class")
    calls = []
    for name in ("_newton", "_minimize"):
        solver = getattr(_discriminative, name)
        monkeypatch.setattr(_discriminative, name, lambda *a, s=solver, n=name: (
            calls.append(n), s(*a))[1])
    _fit(terms, y, index, 1.0)
    monkeypatch.setattr(_discriminative, "NEWTON_MAX_WEIGHTS", index.size - 1)
    _fit(terms, y, index, 1.0)
    assert calls == ["_newton", "_minimize"]


def test_ties_follow_the_granularity():
    index = weight_index(3, 2, "attribute")
    assert (index == [[0, 0], [1, 1], [2, 2]]).all()
    assert (weight_index(3, 2, "attribute_class") == [[0, 1], [2, 3], [4, 5]]).all()
    with pytest.raises(ValueError, match="granularity"):
        weight_index(3, 2, "parameter")


def test_a_strong_ridge_keeps_the_generative_model():
    terms, y = _problem(3)
    w = fit_term_weights(terms, y, "attribute_class", 1e12)
    np.testing.assert_allclose(w, 1.0, atol=1e-9)


def test_the_weights_minimise_the_objective_and_stay_non_negative():
    terms, y = _problem(5, n_rows=200)
    for granularity in ("attribute", "attribute_class"):
        w = fit_term_weights(terms, y, granularity, 1.0)
        index = weight_index(terms.shape[1], terms.shape[2], granularity)
        flat = np.zeros(int(index.max()) + 1)
        flat[index.ravel()] = w.ravel()
        best = _f(flat, terms, y, index, 1.0)
        assert (w >= 0).all()
        # no feasible neighbour is lower (the problem is convex: a local minimum is global)
        rng = np.random.default_rng(0)
        for _ in range(50):
            other = np.maximum(flat + rng.normal(0, 0.05, flat.size), 0)
            assert _f(other, terms, y, index, 1.0) >= best - 1e-9
        assert best <= _f(np.ones_like(flat), terms, y, index, 1.0)


def test_an_informative_term_gains_weight_and_noise_loses_it():
    rng = np.random.default_rng(2)
    n = 2000
    y = rng.integers(0, 2, n)
    informative = np.where(np.eye(2)[y] > 0, np.log(0.6), np.log(0.4))  # says y, too weakly
    noise = np.log(rng.dirichlet([1, 1], size=n))  # says nothing
    terms = np.stack([np.zeros((n, 2)), informative, noise], axis=1)
    w = fit_term_weights(terms, y, "attribute", 1.0)
    assert w[1, 0] > 2.0 and w[2, 0] < 0.5


def _drawn_from(terms: np.ndarray, scale: np.ndarray, seed: int) -> np.ndarray:
    """Classes drawn from the weighted posterior with every weight of term ``a`` ``scale[a]``."""
    z = np.einsum("rac,a->rc", terms, scale)
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    u = np.random.default_rng(seed).random(terms.shape[0])[:, None]
    return (u > np.cumsum(p, axis=1)).sum(axis=1)


def test_the_penalty_is_chosen_by_held_out_loss_and_reproducibly():
    terms, _ = _problem(7, n_rows=300)
    # the generative model is the truth: a strong ridge predicts held-out rows best
    y = _drawn_from(terms, np.ones(terms.shape[1]), 1)
    assert choose_penalty(terms, y, "attribute_class") >= 100.0
    # the truth weighs one term three times: the data must be let move the weights
    y = _drawn_from(terms, np.array([1.0, 3.0, 1.0, 1.0]), 2)
    assert choose_penalty(terms, y, "attribute_class") <= 10.0
    assert choose_penalty(terms, y, "attribute_class") == choose_penalty(terms.copy(), y,
                                                                          "attribute_class")


def test_mean_log_loss_is_the_posteriors_log_loss():
    terms, y = _problem(9)
    w = np.ones((terms.shape[1], terms.shape[2]))
    z = terms.sum(axis=1)
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    assert mean_log_loss(terms, y, w) == pytest.approx(-np.mean(np.log(p[np.arange(y.size), y])))


def _cv_losses(terms: np.ndarray, y: np.ndarray, grid: tuple[float, ...]) -> list[float]:
    """Every ridge's 3-fold held-out loss, each fold's weights fitted from w = 1."""
    fold = np.arange(y.size) % 3
    losses = []
    for lam in grid:
        loss = 0.0
        for k in range(3):
            held = fold == k
            w = fit_term_weights(terms[~held], y[~held], "attribute_class", lam)
            loss += mean_log_loss(terms[held], y[held], w) * held.sum()
        losses.append(loss / y.size)
    return losses


@pytest.mark.parametrize("truth", [(1.0, 1.0, 1.0, 1.0), (1.0, 3.0, 1.0, 1.0),
                                   (1.0, 1.5, 0.5, 1.0)])
def test_the_ridge_path_finds_the_grids_best_ridge(truth):
    # the path starts each fit from the last ridge's weights and stops at the first rise: on
    # a held-out loss that falls then rises it picks the ridge a search of the whole grid picks
    terms, _ = _problem(11, n_rows=300)
    y = _drawn_from(terms, np.array(truth), 3)
    grid = (0.1, 1.0, 10.0, 100.0, 1000.0)
    losses = _cv_losses(terms, y, grid)
    best = int(np.argmin(losses))
    assert all(np.diff(losses[: best + 1]) <= 1e-9) and all(np.diff(losses[best:]) >= -1e-9)
    assert choose_penalty(terms, y, "attribute_class", grid) == grid[best]


def test_the_minimum_does_not_depend_on_the_start():
    terms, y = _problem(12, n_rows=400)
    index = weight_index(terms.shape[1], terms.shape[2], "attribute_class")
    finite = _finite(terms)
    cold = _fit(finite, y, index, 5.0)
    warm = _fit(finite, y, index, 5.0, np.full(cold.size, 2.5))
    f = [float(_objective(w, finite, y, index, 5.0)[0]) for w in (cold, warm)]
    assert f[0] == pytest.approx(f[1], abs=1e-7)
    np.testing.assert_allclose(cold, warm, atol=2e-3)
