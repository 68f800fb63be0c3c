"""Each transformation NUTS runs on is the readable model's distribution (hdpbn_ppl.reparam).

* the split of a Dirichlet into observed shares and unobserved ratios (default, "ratio"; and the
  earlier G1 U^(1/a) form, "split"): exact moments (including E[log phi] at concentrations down
  to 1e-8) of one node, and two-sample tests of whole-tree prior draws against the centred
  model;
* the collapse of the leaves: a pointwise identity of log densities, and prior-predictive
  leaf counts against the centred model;
* the auxiliary distributions (LogGamma, DirichletALR): normalised densities, samplers that
  match them.
"""

import numpy as np
import pytest
from scipy import integrate, special, stats

pytest.importorskip("numpyro")
pytestmark = pytest.mark.ppl

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpyro.distributions as dist  # noqa: E402
from numpyro import handlers  # noqa: E402
from numpyro.infer.util import log_density  # noqa: E402

from fastpath.counts import ContextTree  # noqa: E402
from hdpbn_ppl.model import HDPTree, double_precision, hdp_model  # noqa: E402
from hdpbn_ppl.reparam import (  # noqa: E402
    DirichletALR,
    LogGamma,
    RatioDirichletReparam,
    SplitDirichletReparam,
    UnobservedRatios,
    collapse_leaves,
    sampling_model,
)


@pytest.fixture(autouse=True)
def _x64():
    # the model and its transformations are written for double precision (hdpbn_ppl.model)
    with double_precision():
        yield


def _sparse_tree() -> ContextTree:
    # depth 3, K = 4; categories 2 and 3 unobserved below some internal nodes, 3 nowhere
    paths = np.array([[0, 0, 0], [0, 0, 1], [0, 1, 0], [1, 0, 1], [1, 1, 1], [1, 1, 0]])
    counts = np.array([[3, 0, 1, 0], [0, 2, 0, 0], [1, 0, 0, 0],
                       [0, 0, 4, 0], [5, 1, 0, 0], [0, 1, 0, 0]])
    return ContextTree.from_leaf_counts(paths, counts, [2, 2, 2], 4)


def _draws(model, tree, n, seed, sites):
    def one(key):
        tr = handlers.trace(handlers.seed(model, key)).get_trace(tree, None)
        return {s: tr[s]["value"] for s in sites}

    out = jax.jit(jax.vmap(one))(jax.random.split(jax.random.PRNGKey(seed), n))
    return {k: np.asarray(v) for k, v in out.items()}


# ----------------------------------------------------------------------------- auxiliaries
def test_loggamma_density_is_normalised_and_matches_its_sampler():
    for c in (1.0001, 1.7, 40.0):
        d = LogGamma(c)
        z, _ = integrate.quad(lambda x, d=d: np.exp(float(d.log_prob(x))), -60, 10)
        assert z == pytest.approx(1.0, abs=1e-8)
        x = np.asarray(LogGamma(c).sample(jax.random.PRNGKey(1), (20000,)))
        # E[log G] = digamma(c), Var = trigamma(c)
        se = np.sqrt(special.polygamma(1, c) / x.size)
        assert abs(x.mean() - special.digamma(c)) < 4 * se


def test_dirichlet_alr_density_is_normalised():
    # trapezoid rule on a fine grid (the densities are smooth and decay exponentially)
    d = DirichletALR(jnp.array([[0.7, 3.0, 0.2]]), np.array([[True, True, False]]))
    y = np.linspace(-150, 60, 200001)
    lp = np.asarray(jax.jit(jax.vmap(lambda v: d.log_prob(v[None])))(jnp.asarray(y)))
    assert np.trapezoid(np.exp(lp), y) == pytest.approx(1.0, abs=1e-6)
    # three observed categories, reference the second one: two coordinates
    d3 = DirichletALR(jnp.array([[1.5, 0.6, 2.0]]), np.array([[True, True, True]]),
                      reference=[1])
    assert _integral_2d(d3.log_prob, np.linspace(-30, 40, 1401)) == pytest.approx(1.0, abs=1e-4)


def _integral_2d(log_prob, grid):
    """Trapezoid integral of exp(log_prob) over grid x grid (a 2-D density's normaliser)."""
    x1, x2 = np.meshgrid(grid, grid, indexing="ij")
    pts = jnp.asarray(np.stack([x1.ravel(), x2.ravel()], axis=1))
    lp = np.asarray(jax.jit(jax.vmap(log_prob))(pts)).reshape(x1.shape)
    return np.trapezoid(np.trapezoid(np.exp(lp), grid, axis=1), grid)


def test_dirichlet_alr_sampler_gives_dirichlet_shares():
    a = np.array([[2.0, 0.5, 9.0, 1.0], [0.3, 0.3, 7.0, 1.0]])
    obs = np.array([[True, True, True, False], [True, False, True, True]])
    d = DirichletALR(jnp.asarray(a), obs)
    y = d.sample(jax.random.PRNGKey(3), (40000,))
    w = np.exp(np.asarray(jax.vmap(d.log_shares)(y)))
    for i in range(2):
        ao = np.where(obs[i], a[i], 0.0)
        mean = ao / ao.sum()
        var = mean * (1 - mean) / (ao.sum() + 1)
        np.testing.assert_allclose(w[:, i].mean(0), mean, atol=5 * np.sqrt(var.max() / 40000))


# ----------------------------------------------------------------------------- the split
@pytest.mark.study  # make study: a numerical integration, make test's ten minutes
def test_unobserved_ratios_density_is_normalised_and_inverts_its_sampler():
    # one node, one observed and two unobserved categories (one of them tiny): 2-D density of eta
    a = jnp.array([[1.5, 0.4, 1e-3]])
    d = UnobservedRatios(a, np.array([[True, False, False]]), np.array([12.0]))
    assert _integral_2d(d.log_prob, np.linspace(-40, 60, 1601)) == pytest.approx(1.0, abs=1e-4)
    # the sampler draws log-ratios of Gammas and inverts the bijection: round trip
    eta = d.sample(jax.random.PRNGKey(0), (2000,))
    ell, _ = jax.vmap(d.log_ratios)(eta)
    assert np.isfinite(np.asarray(eta)).all()
    assert (np.asarray(ell)[:, 1] < -100).mean() > 0.5  # the tiny category's ratio


def _node_draws(kind, a, observed, n, seed):
    a = np.asarray(a)
    obs = np.asarray([observed])
    if kind == "ratio":
        reparam = RatioDirichletReparam(obs, obs.argmax(axis=1), np.array([10.0]))
    else:
        reparam = SplitDirichletReparam(obs)

    def one(key):
        with handlers.seed(rng_seed=key):
            return reparam("phi", dist.Dirichlet(jnp.asarray(a)[None]), None)[1][0]

    return np.asarray(jax.jit(jax.vmap(one))(jax.random.split(jax.random.PRNGKey(seed), n)))


@pytest.mark.study  # 20,000 draws x 6 cases: about a minute of CPU (make study)
@pytest.mark.parametrize("kind", ["ratio", "split"])
@pytest.mark.parametrize(
    "a, observed",
    [
        ([5.0, 0.3, 1e-3, 1e-8], [True, True, False, False]),
        ([0.05, 2.0, 0.5], [False, True, False]),
        ([0.2, 0.7, 30.0, 4.0, 1e-5, 1.0], [True, True, True, True, False, False]),
    ],
)
def test_split_dirichlet_has_the_dirichlet_moments(kind, a, observed):
    """phi from either split equals Dirichlet(a) in its means, variances and log-moments."""
    a = np.asarray(a)
    n = 20000
    phi = _node_draws(kind, a, observed, n, seed=7)
    total = a.sum()
    mean = a / total
    var = mean * (1 - mean) / (total + 1)
    np.testing.assert_allclose(phi.mean(0), mean, atol=5 * np.sqrt(var.max() / n) + 1e-12)
    # (variances only where a draw is not a rare event: for a_k << 1 phi_k is ~0 except with
    # probability ~a_k, and the sample variance of such a variable says nothing)
    big = a > 0.05
    np.testing.assert_allclose(phi.var(0)[big], var[big], rtol=0.1)
    # log-moments reach the left tail: E[log phi_k] = psi(a_k) - psi(A)
    with np.errstate(divide="ignore"):
        log_phi = np.log(phi)
    finite = np.isfinite(log_phi).all(axis=0)
    exp_log = special.digamma(a) - special.digamma(total)
    sd_log = np.sqrt(special.polygamma(1, a) - special.polygamma(1, total))
    for k in np.flatnonzero(finite):
        assert abs(log_phi[:, k].mean() - exp_log[k]) < 5 * sd_log[k] / np.sqrt(n)
    # categories too small for double precision are the ones with a tiny concentration
    assert np.all(a[~finite] < 1e-2)


def _ks_all(centred, split, sites, n):
    pvals = []
    for s in sites:
        # numpyro's Dirichlet sampler clips to [tiny, 1 - eps]; compare on a common clip
        x = np.clip(centred[s].reshape(n, -1), 1e-300, 1 - 1e-15)
        y = np.clip(split[s].reshape(n, -1), 1e-300, 1 - 1e-15)
        for j in range(x.shape[1]):
            pvals.append(stats.ks_2samp(x[:, j], y[:, j]).pvalue)
    return np.asarray(pvals)


def _two_level_tree() -> ContextTree:
    paths = np.array([[0, 0], [0, 2], [1, 1], [2, 0], [2, 1], [2, 2]])
    counts = np.array([[3, 0, 1, 0], [0, 2, 5, 0], [1, 0, 0, 0],
                       [0, 0, 4, 1], [5, 1, 0, 0], [0, 1, 0, 0]])
    return ContextTree.from_leaf_counts(paths, counts, [3, 3], 4)


@pytest.mark.study  # two models' prior draws, jitted: about 50 CPU-s (make study)
def test_sampling_model_prior_equals_readable_model_prior():
    """Two-sample tests of every node probability, concentration and prior-predictive leaf
    count: the sampling model (split + collapse) against the readable model, depth 2 under
    the Gamma(2, 1) prior."""
    t = HDPTree.from_tree(_two_level_tree(), "none", alpha0=4.0)
    sites = ["phi_0", "phi_1", "alpha", "n"]
    n = 4000
    centred = _draws(hdp_model, t, n, 11, sites)
    split = _draws(sampling_model, t, n, 12, sites)
    pvals = _ks_all(centred, split, sites[:3], n)
    assert pvals.size == 4 + 12 + 9
    # leaf counts (discrete): KS is conservative with ties, still a valid level-alpha test
    counts_p = [stats.ks_2samp(centred["n"][:, i, k], split["n"][:, i, k]).pvalue
                for i in range(centred["n"].shape[1]) for k in range(centred["n"].shape[2])]
    pvals = np.concatenate([pvals, counts_p])
    assert pvals.min() > 0.01 / pvals.size, np.sort(pvals)[:5]  # Bonferroni, 1 % overall


@pytest.mark.study  # about 50 CPU-s (make study)
def test_split_prior_equals_centred_prior_on_a_deep_sparse_tree():
    """Same on a depth-3 tree with unobserved categories at every level; the concentrations are
    fixed (condition) so that the reference categories stay representable in double precision
    (see DirichletALR), while the unobserved ones still reach probabilities far below 1e-100."""
    t = HDPTree.from_tree(_sparse_tree(), "level", alpha0=8.0)
    alpha = {"alpha": jnp.array([5.0, 5.0, 5.0])}
    sites = [f"phi_{d}" for d in range(t.depth)]
    n = 4000
    centred = _draws(handlers.condition(hdp_model, alpha), t, n, 13, sites)
    split = _draws(handlers.condition(sampling_model, alpha), t, n, 14, sites)
    assert (split["phi_2"] < 1e-100).mean() > 0.02  # the non-centred tail is exercised
    pvals = _ks_all(centred, split, sites, n)
    assert pvals.min() > 0.01 / pvals.size, np.sort(pvals)[:5]


# about 17 s: outside make test
# (10 minutes on 2 cores); make study runs it
@pytest.mark.study
# ----------------------------------------------------------------------------- the collapse
def test_collapse_is_the_exact_marginal_pointwise():
    """log p(theta, n | c) - log Dir(theta | c + n) = log DirMult(n | c) for any theta."""
    t = HDPTree.from_tree(_sparse_tree(), "level", alpha0=8.0)
    # a prior draw whose leaf concentrations are above the handlers' floor (1e-100), where the
    # identity is exact
    model = handlers.condition(hdp_model, {"alpha": jnp.array([20.0, 20.0, 20.0])})
    tr = handlers.trace(handlers.seed(model, 5)).get_trace(t, None)
    values = {k: v["value"] for k, v in tr.items() if v["type"] == "sample" and k != "n"}
    counts = t.leaf_counts

    def collapsed(tree, c):
        return collapse_leaves(hdp_model, counts=counts)(tree, c)

    lp_centred, _ = log_density(hdp_model, (t, counts), {}, values)
    lp_collapsed, _ = log_density(collapsed, (t, counts), {},
                                  {k: v for k, v in values.items() if k != "theta"})
    phi_parent = np.asarray(values[f"phi_{t.depth - 1}"])[t.parent[t.depth]]
    conc = np.asarray(values["alpha"])[t.group[t.depth]][:, None] * phi_parent
    assert conc.min() > 1e-100
    theta = np.asarray(values["theta"])
    post = conc + counts
    log_dir_post = (special.gammaln(post.sum(1)) - special.gammaln(post).sum(1)
                    + ((post - 1) * np.log(theta)).sum(1)).sum()
    assert float(lp_centred) - log_dir_post == pytest.approx(float(lp_collapsed), rel=1e-9)
