"""Exact transformations of :func:`hdpbn_ppl.model.hdp_model` that NUTS can sample.

The readable model is the right *distribution* but the wrong *coordinates* for Hamiltonian Monte
Carlo on deep, sparse context trees. Two changes, each exact, are applied from the outside as
NumPyro effect handlers:

1. :class:`collapse_leaves` -- integrate every leaf's theta out analytically (paper, equation
   eq. 6): theta ~ Dir(c), n ~ Multinomial(theta) becomes n ~ DirichletMultinomial(c). The
   leaf site is kept as a deterministic site holding E[theta | c, n] = (n + c) / (N + sum c),
   whose average over the draws is the posterior mean of theta (Rao-Blackwellisation).

2. :class:`RatioDirichletReparam` -- every internal node's Dirichlet(a), a = alpha * phi_parent,
   is split by a static property of the tree: whether the node's subtree has data for a
   category ("observed", O) or not (U). With independent G_k ~ Gamma(a_k):

   * the observed shares w = G_O / sum G_O ~ Dir(a_O), in additive log-ratio coordinates
     (centred): each observed category carries at least one factor phi_k of likelihood, so
     these coordinates stay bounded however small alpha gets;
   * each unobserved category as its ratio R_k = G_k / sum G_O to the observed total, the total
     integrated out analytically (the R_k have an inverted-Dirichlet density). log R_k has an
     exponential left tail of rate a_k -- 1/a_k units long, and a_k reaches 1e-40 on deep trees
     -- and is capped on the right by the data (the node's rows make unobserved mass
     unlikely). A monotone bijection ell = b + eta - (1/a - 1) softplus(-eta) gives it a
     coordinate eta that is centred (slope 1) near the cap b, so the cap stays a soft
     exponential wall, and compressed by 1/a in the tail, so the tail has unit rate whatever a.

   Then phi = (w_O, R_U) / (1 + sum R): by the aggregation property of the Dirichlet this is
   Dir(a) exactly, with sum_i (K - 1) coordinates and no scale coordinate.

:func:`sampling_model` composes both with the readable model. The tests in
``tests/test_ppl_reparam.py`` check each against the readable model (pointwise for the
collapse; exact moments and two-sample tests of prior draws for the split).

:class:`SplitDirichletReparam` is the earlier formulation of issue 4 (observed shares in ALR form,
the observed total and each unobserved category as G = G1 * U^(1/a), G1 ~ Gamma(a + 1),
U ~ Uniform). It is exact too, and kept for comparison (``reparam="split"``): when a level's
concentration is small the data cap the non-centred coordinates with walls of slope 1/a, and
NUTS diverges (measured in ``docs/model.md``).

Numerical guard: a concentration below ``CONC_FLOOR`` (1e-100) is raised to it. A category
with such a concentration receives more than 1e-300 of its node's mass with probability below
about 1e-97, so the change is invisible in double precision; it keeps the log-densities finite
with finite gradients when a parent probability has underflowed to zero.
"""

from __future__ import annotations

from functools import partial
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax.scipy.special import gammaln
from numpyro.distributions import constraints
from numpyro.infer.reparam import Reparam
from numpyro.primitives import Messenger

from .model import OBSERVED, HDPTree, hdp_model

__all__ = [
    "CONC_FLOOR",
    "DirichletALR",
    "LogGamma",
    "RatioDirichletReparam",
    "SplitDirichletReparam",
    "UnobservedRatios",
    "collapse_leaves",
    "reparam_config",
    "sampling_model",
]

CONC_FLOOR = 1e-100


def _unwrap(fn):
    while isinstance(fn, (dist.Independent, dist.ExpandedDistribution)):
        fn = fn.base_dist
    return fn


# --------------------------------------------------------------------------- distributions
class LogGamma(dist.Distribution):
    """log G for G ~ Gamma(concentration, 1), on the real line.

    Density: exp(c x - e^x) / Gamma(c). Sampled with :func:`jax.random.loggamma`, so draws with a
    tiny concentration do not underflow.
    """

    arg_constraints: ClassVar[dict] = {"concentration": constraints.positive}
    support = constraints.real
    pytree_data_fields = ("concentration",)

    def __init__(self, concentration, *, validate_args=None):
        self.concentration = jnp.asarray(concentration)
        super().__init__(jnp.shape(self.concentration), validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        shape = sample_shape + self.batch_shape
        return jax.random.loggamma(key, jnp.broadcast_to(self.concentration, shape), shape=shape)

    def log_prob(self, value):
        return _loggamma_log_prob(self.concentration, value)


class DirichletALR(dist.Distribution):
    """A batch of Dirichlets over each node's observed categories, in additive log-ratio form.

    Node ``i`` with observed categories O_i and reference category r_i has shares
    w ~ Dir(a_{i, O_i}); its coordinates are y_k = log(w_k / w_{r_i}) for k in O_i \\ {r_i}.
    All coordinates of all nodes form one flat vector (length sum_i |O_i| - 1), so nodes with
    different numbers of observed categories share one site.

    The reference should be a category whose share is never extremely small: y_k holds
    log w_k - log w_r in double precision, so when w_r < exp(-1e10) (possible only for a
    concentration a_r below ~1e-9) the small part of y_k is lost. :func:`reparam_config` uses
    each node's most frequent category, which its data keep far from that regime.

    Density of y: Gamma(sum a_O) / prod Gamma(a_k) * prod_{k in O} w_k^{a_k} (the Dirichlet
    density times the Jacobian prod_{k in O} w_k of the softmax).
    """

    support = constraints.real_vector
    pytree_data_fields = ("concentration",)
    pytree_aux_fields = ("observed", "reference", "free")

    def __init__(self, concentration, observed: np.ndarray, reference=None, *,
                 validate_args=None):
        observed = np.asarray(observed, dtype=bool)
        if observed.ndim != 2 or not observed.any(axis=1).all():
            raise ValueError("every node needs at least one observed category")
        ref = observed.argmax(axis=1) if reference is None else np.asarray(reference, np.int64)
        if not observed[np.arange(observed.shape[0]), ref].all():
            raise ValueError("the reference category of a node must be observed")
        free = observed.copy()
        free[np.arange(observed.shape[0]), ref] = False
        self.observed = observed
        self.reference = ref
        self.free = free
        self.concentration = jnp.broadcast_to(concentration, observed.shape)
        super().__init__((), (int(free.sum()),), validate_args=validate_args)

    def log_shares(self, value):
        """log w, shape (n, K), with -inf at unobserved categories."""
        rows, cols = np.nonzero(self.free)
        return _alr_log_shares(jnp.asarray(self.observed), rows, cols, value)

    def log_prob(self, value):
        rows, cols = np.nonzero(self.free)
        return _alr_log_prob(self.concentration, jnp.asarray(self.observed), rows, cols, value)

    def sample(self, key, sample_shape=()):
        a = jnp.where(self.observed, self.concentration, 1.0)
        lg = jax.random.loggamma(key, a, shape=sample_shape + a.shape)
        rows, cols = np.nonzero(self.free)
        return lg[..., rows, cols] - lg[..., rows, self.reference[rows]]


# The arithmetic lives in jitted functions of arrays: inside NUTS they are inlined, but while
# NumPyro initialises a model it runs it eagerly, op by op, and every distinct small op would
# otherwise cost an XLA compilation of its own.
@jax.jit
def _alr_log_shares(observed, rows, cols, value):
    logits = jnp.where(observed, 0.0, -jnp.inf).at[rows, cols].set(value)
    return logits - jax.nn.logsumexp(logits, axis=-1, keepdims=True)


@jax.jit
def _alr_log_prob(a, observed, rows, cols, value):
    logw = jnp.where(observed, _alr_log_shares(observed, rows, cols, value), 0.0)
    a_o = jnp.where(observed, a, 0.0)
    lg_a = jnp.where(observed, gammaln(jnp.where(observed, a, 1.0)), 0.0)
    return (gammaln(a_o.sum(-1)) - lg_a.sum(-1) + (a_o * logw).sum(-1)).sum()


@jax.jit
def _loggamma_log_prob(c, value):
    return c * value - jnp.exp(value) - gammaln(c)


@jax.jit
def _slot_concentrations(a, observed, urows, ucols):
    a_total = jnp.where(observed, a, 0.0).sum(-1)
    return jnp.concatenate([a_total, a[urows, ucols]])


@jax.jit
def _assemble_phi(observed, urows, ucols, logw, a_slot, lg1, z):
    n = observed.shape[0]
    log_g = lg1 + jax.nn.log_sigmoid(z) / a_slot
    log_phi = jnp.where(observed, log_g[:n, None] + jnp.where(observed, logw, 0.0), -jnp.inf)
    log_phi = log_phi.at[urows, ucols].set(log_g[n:])
    return jnp.exp(log_phi - jax.nn.logsumexp(log_phi, axis=-1, keepdims=True))


# --------------------------------------------------------------------------- the ratio split
class UnobservedRatios(dist.Distribution):
    """The unobserved categories of a batch of nodes, as log-ratios to the observed total.

    For node i with observed categories O and unobserved U, R_k = G_k / G_O (k in U) with
    G ~ Gamma(a) independent and G_O = sum_{O} G: the total is integrated out, so R has the
    inverted-Dirichlet density

        Gamma(A) / (Gamma(A_O) prod_U Gamma(a_k)) prod_U R_k^(a_k - 1) (1 + sum_U R_k)^(-A)

    (A = sum a, A_O = sum_O a), and phi = (w_O, R_U) / (1 + sum R) ~ Dir(a) with w_O the
    observed shares. Each ell_k = log R_k is written through a monotone bijection of a real
    coordinate eta_k,

        ell = b + eta - (1/a - 1) softplus(-eta),

    of slope ~1 for eta >> 0 and ~1/a for eta << 0: the exponential left tail of ell (rate a,
    i.e. 1/a units long when a is tiny) becomes a unit-rate tail in eta, while near the knee b --
    placed where the data cap the ratio, b = log(1 + a) - log(1 + N_node) -- the coordinate is
    centred (slope 1), so the data's cap stays a soft exponential wall. The value is the flat
    vector eta over all unobserved (node, category) pairs.
    """

    support = constraints.real_vector
    pytree_data_fields = ("concentration",)
    pytree_aux_fields = ("observed", "node_total")

    def __init__(self, concentration, observed: np.ndarray, node_total: np.ndarray, *,
                 validate_args=None):
        observed = np.asarray(observed, dtype=bool)
        self.observed = observed
        self.node_total = np.asarray(node_total, dtype=float)
        self.concentration = jnp.broadcast_to(concentration, observed.shape)
        super().__init__((), (int((~observed).sum()),), validate_args=validate_args)

    def _knee(self, au, rows):
        return jnp.log1p(au) - np.log1p(self.node_total[rows])

    def log_ratios(self, eta):
        """ell = log R for every unobserved pair (flat), and a * ell computed stably."""
        rows, cols = np.nonzero(~self.observed)
        au = self.concentration[rows, cols]
        return _ratio_forward(au, self._knee(au, rows), eta)

    def log_prob(self, eta):
        rows, cols = np.nonzero(~self.observed)
        au = self.concentration[rows, cols]
        return _ratio_log_prob(self.concentration, jnp.asarray(self.observed), rows, cols,
                               self._knee(au, rows), eta)

    def sample(self, key, sample_shape=()):
        rows, cols = np.nonzero(~self.observed)
        a = self.concentration
        obs = jnp.asarray(self.observed)
        k1, k2 = jax.random.split(key)
        a_o = jnp.where(obs, a, 0.0).sum(-1)
        lg_total = jax.random.loggamma(k1, a_o, shape=sample_shape + a_o.shape)
        au = a[rows, cols]
        lg = jax.random.loggamma(k2, au, shape=sample_shape + au.shape)
        ell = lg - lg_total[..., rows]
        return _ratio_inverse(au, self._knee(au, rows), ell)


@jax.jit
def _ratio_forward(au, knee, eta):
    sp = jax.nn.softplus(-eta)
    ell = knee + eta - (1.0 / au - 1.0) * sp
    a_ell = au * knee + au * eta - (1.0 - au) * sp
    return ell, a_ell


@jax.jit
def _ratio_inverse(au, knee, ell):
    """eta with _ratio_forward(au, knee, eta)[0] == ell, by bisection (the map is monotone).

    With d = ell - knee and c = 1/a - 1, the map lies between eta/a - |c| log 2 and eta/a for
    eta <= 0 and between eta - |c| log 2 and eta for eta >= 0, so the root lies above a d
    (a < 1, d < 0), a d - a log 2 (a > 1, d < 0) or min(a d, d) (d >= 0), and below
    max(d, 0) + log(1 + |c|): a bracket a few hundred units wide even when a = 1e-100 and
    d = -1e100; 200 halvings reach double precision.
    """
    d = ell - knee
    lo = jnp.where(d < 0, jnp.where(au < 1, au * d, au * d - au * jnp.log(2.0)),
                   jnp.minimum(au * d, d)) - 5.0
    hi = jnp.maximum(d, 0.0) + jnp.log1p(jnp.abs(1.0 / au - 1.0)) + 5.0

    def body(_, bounds):
        lo, hi = bounds
        mid = 0.5 * (lo + hi)
        above = _ratio_forward(au, knee, mid)[0] > ell
        return jnp.where(above, lo, mid), jnp.where(above, mid, hi)

    lo, hi = jax.lax.fori_loop(0, 200, body, (lo, hi))
    return 0.5 * (lo + hi)


@jax.jit
def _ratio_log_prob(a, observed, rows, cols, knee, eta):
    au = a[rows, cols]
    ell, a_ell = _ratio_forward(au, knee, eta)
    log_jac = jnp.log(au + (1.0 - au) * jax.nn.sigmoid(-eta)) - jnp.log(au)
    n, k = observed.shape
    big_a = a.sum(-1)
    a_o = jnp.where(observed, a, 0.0).sum(-1)
    ell_full = jnp.full((n, k), -jnp.inf).at[rows, cols].set(ell)
    log1p_sum = jax.nn.logsumexp(jnp.concatenate([jnp.zeros((n, 1)), ell_full], axis=1), axis=1)
    has_u = (~observed).any(-1)
    node = jnp.where(has_u, gammaln(big_a) - gammaln(a_o) - big_a * log1p_sum, 0.0).sum()
    return node - gammaln(au).sum() + (a_ell + log_jac).sum()


class _ObservedSplit(Reparam):
    """What both reparameterisations of a batch of Dirichlets share: the static observed /
    unobserved split of each node's categories, and the site's floored concentrations."""

    def __init__(self, observed: np.ndarray):
        observed = np.asarray(observed, dtype=bool)
        if observed.ndim != 2 or not observed.any(axis=1).all():
            raise ValueError("observed must be (n_nodes, K) with an observed category per node")
        self.observed = observed

    def _concentrations(self, name, fn, obs):
        """The (n_nodes, K) Dirichlet concentrations of site ``name``, floored at CONC_FLOOR."""
        if obs is not None:
            raise ValueError(f"{type(self).__name__} reparameterises latent sites only")
        base = _unwrap(fn)
        if not isinstance(base, dist.Dirichlet):
            raise TypeError(f"site {name!r}: expected a Dirichlet, got {type(base).__name__}")
        return jnp.maximum(jnp.broadcast_to(base.concentration, self.observed.shape), CONC_FLOOR)


class RatioDirichletReparam(_ObservedSplit):
    """Dirichlet rows as observed shares (ALR) and unobserved ratios (:class:`UnobservedRatios`).

    No scale coordinate at all: the site ``name_alr`` (observed shares, omitted when every node
    has one observed category) and ``name_eta`` (unobserved ratios, omitted when every category
    is observed) have exactly sum_i (K - 1) coordinates between them.
    """

    def __init__(self, observed: np.ndarray, reference, node_total):
        super().__init__(observed)
        self.reference = np.asarray(reference)
        self.node_total = np.asarray(node_total, dtype=float)

    def __call__(self, name, fn, obs):
        a = self._concentrations(name, fn, obs)
        o = self.observed
        n = o.shape[0]
        obs_j = jnp.asarray(o)
        if int(o.sum()) > n:
            alr = DirichletALR(a, o, self.reference)
            logw = alr.log_shares(numpyro.sample(f"{name}_alr", alr))
        else:
            logw = jnp.where(obs_j, 0.0, -jnp.inf)
        if o.all():
            return None, jnp.exp(logw)
        ratios = UnobservedRatios(a, o, self.node_total)
        ell, _ = ratios.log_ratios(numpyro.sample(f"{name}_eta", ratios))
        rows, cols = np.nonzero(~o)
        return None, _assemble_ratio_phi(obs_j, rows, cols, logw, ell)


@jax.jit
def _assemble_ratio_phi(observed, rows, cols, logw, ell):
    n = observed.shape[0]
    log_phi = jnp.where(observed, logw, -jnp.inf).at[rows, cols].set(ell)
    # the observed shares sum to 1: phi = (w_O, R) / (1 + sum R)
    log1p_sum = jax.nn.logsumexp(
        jnp.concatenate([jnp.zeros((n, 1)), jnp.where(observed, -jnp.inf, log_phi)], axis=1),
        axis=1, keepdims=True)
    return jnp.exp(log_phi - log1p_sum)


# --------------------------------------------------------------------------- the G1 U^(1/a) split
class SplitDirichletReparam(_ObservedSplit):
    """The issue's formulation: observed shares (ALR), and the observed total and each
    unobserved category as G = G1 U^(1/a). Exact, kept for comparison (``reparam="split"``): where
    a level's concentration is small, the data's cap on the unobserved mass becomes a wall of
    slope 1/a in the U coordinates and NUTS diverges; :class:`RatioDirichletReparam` does not.

    Parameters
    ----------
    observed : ndarray of bool, shape (n_nodes, K)
        Static: whether each node's subtree has data for each category.
    reference : ndarray of int, shape (n_nodes,), optional
        Reference category of each node's ALR coordinates (default: its first observed one;
        :func:`reparam_config` passes the most frequent one).

    The site ``name`` becomes deterministic and three auxiliary sites are sampled:

    * ``name_alr``  -- :class:`DirichletALR` shares of the observed categories (omitted when
      every node has a single observed category);
    * ``name_lg1``  -- log G1, G1 ~ Gamma(a + 1), one per slot;
    * ``name_z``    -- logit U, U ~ Uniform(0, 1), i.e. z ~ Logistic(0, 1), one per slot;

    where the slots are: one per node (the total of its observed categories) followed by one
    per unobserved (node, category) pair, and log G = log G1 + log(U) / a.
    """

    def __init__(self, observed: np.ndarray, reference=None):
        super().__init__(observed)
        observed = self.observed
        self.reference = observed.argmax(axis=1) if reference is None else np.asarray(reference)
        self.unobserved = np.nonzero(~observed)
        self.n_free = int(observed.sum() - observed.shape[0])

    def __call__(self, name, fn, obs):
        a = self._concentrations(name, fn, obs)
        return None, split_dirichlet(
            name, a, self.observed, self.unobserved, self.n_free, self.reference
        )


def split_dirichlet(name, a, observed, unobserved, n_free, reference=None):
    """Sample Dirichlet(a) rows through the observed / unobserved split; returns phi (n, K)."""
    obs = jnp.asarray(observed)
    if n_free:
        alr = DirichletALR(a, observed, reference)
        logw = alr.log_shares(numpyro.sample(f"{name}_alr", alr))
    else:
        logw = jnp.where(obs, 0.0, -jnp.inf)
    urows, ucols = unobserved
    a_slot = _slot_concentrations(a, obs, urows, ucols)
    lg1 = numpyro.sample(f"{name}_lg1", LogGamma(a_slot + 1.0))
    z = numpyro.sample(f"{name}_z", dist.Logistic(jnp.zeros_like(a_slot), 1.0))
    return _assemble_phi(obs, urows, ucols, logw, a_slot, lg1, z)


# --------------------------------------------------------------------------- the collapse
class collapse_leaves(Messenger):
    """Integrate a Dirichlet latent out of a Multinomial observation.

    In the wrapped model, the latent site ``latent`` (theta ~ Dir(c)) becomes a deterministic
    site and the observed site ``observed`` (n ~ Multinomial(N, theta)) becomes
    n ~ DirichletMultinomial(c, N): the exact marginal, paper, eq. 6.

    ``counts`` are the observed counts; theta is then recorded as E[theta | c, n] =
    (n + c) / (N + sum c), the conditional posterior mean (average it over draws for the
    posterior mean). With ``counts=None`` (prior predictive) theta is recorded as its prior
    mean c / sum c.
    """

    def __init__(self, fn=None, *, counts=None, latent="theta", observed="n"):
        self.counts = None if counts is None else jnp.asarray(counts)
        self.latent = latent
        self.observed_name = observed
        self._conc = None
        super().__init__(fn)

    def process_message(self, msg):
        if msg["type"] != "sample":
            return
        if msg["name"] == self.latent:
            base = _unwrap(msg["fn"])
            if not isinstance(base, dist.Dirichlet):
                raise TypeError(f"site {self.latent!r} must be a Dirichlet")
            conc = jnp.maximum(base.concentration, CONC_FLOOR)
            self._conc = conc
            total = conc.sum(-1, keepdims=True)
            if self.counts is None:
                value = conc / total
            else:
                value = (self.counts + conc) / (self.counts.sum(-1, keepdims=True) + total)
            msg["type"] = "deterministic"
            msg["value"] = value
            for key in list(msg.keys()):
                if key not in ("type", "name", "value", "cond_indep_stack"):
                    del msg[key]
        elif msg["name"] == self.observed_name:
            if self._conc is None:
                raise RuntimeError(f"site {self.observed_name!r} seen before {self.latent!r}")
            base = _unwrap(msg["fn"])
            if not isinstance(base, (dist.MultinomialProbs, dist.MultinomialLogits)):
                raise TypeError(f"site {self.observed_name!r} must be a Multinomial")
            msg["fn"] = dist.DirichletMultinomial(
                self._conc,
                total_count=base.total_count,
                total_count_max=getattr(base, "total_count_max", None),
            )
            self._conc = None


def reparam_config(tree: HDPTree, kind: str = "ratio") -> dict[str, Reparam]:
    """One reparameterisation per internal depth (root included): ``ratio`` (default,
    :class:`RatioDirichletReparam`) or ``split`` (:class:`SplitDirichletReparam`). The ALR
    reference of a node is its most frequent category."""
    if kind == "ratio":
        return {
            f"phi_{d}": RatioDirichletReparam(
                tree.observed[d], tree.reference[d], tree.node_total[d]
            )
            for d in range(tree.depth)
        }
    if kind == "split":
        return {
            f"phi_{d}": SplitDirichletReparam(tree.observed[d], tree.reference[d])
            for d in range(tree.depth)
        }
    raise ValueError(f"reparameterisation must be 'ratio' or 'split', got {kind!r}")


def sampling_model(tree: HDPTree, counts="observed", kind: str = "ratio"):
    """The model NUTS runs: :func:`hdp_model` with the leaves collapsed and the split applied."""
    if isinstance(counts, str) and counts == OBSERVED:
        counts = tree.leaf_counts
    model = partial(hdp_model, tree, counts)
    model = collapse_leaves(model, counts=counts)
    model = numpyro.handlers.reparam(model, config=reparam_config(tree, kind))
    # The readable model builds Dirichlet(alpha * phi_parent) from parent probabilities that may
    # have underflowed to 0 (their log is below -745); the handlers floor these concentrations
    # at CONC_FLOOR before using them, so the eager argument check would only raise spuriously.
    with numpyro.validation_enabled(False):
        return model()
