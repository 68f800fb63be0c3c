"""Numba kernels of the collapsed Gibbs sampler for HDP estimates over a context tree.

Paper, section 4 ("Posterior inference", "Gibbs sampling", Algorithms 1-5). Everything here works
on the flat struct-of-arrays layout of :class:`fastpath.counts.ContextTree` (nodes level by
level, ``parent[j] < j``), with no per-node Python object. The Python API is
:mod:`fastpath.estimate.hdp._api`.

The kernels take a handful of records (``typing.NamedTuple``, typed by numba as tuples; built
by :mod:`fastpath.estimate.hdp._api`):

* :class:`SamplerConfig` -- the options as typed scalars (fixed for a run);
* :class:`TreeModel` -- arrays fixed during a chain: the tree, its sweep order and the Stirling
  tables (shared read-only by the chains of a tree);
* :class:`ChainState` -- what a chain updates in place (below);
* :class:`Accumulators` -- running sums of the estimates (posterior mean, batch means, alpha);
* :class:`Traces` -- the thinned traces and posterior draws;
* :class:`Scratch` -- per-chain work buffers, allocated once per chain by :func:`new_chain` (no
  information carried between iterations except the band caches of ``log S``, which only save
  work; nothing is allocated in the iteration loop).

The steps, one small function each, named after what they compute in the paper (equation
numbers of Petitjean et al. 2018; "the full conditional" is the unnumbered equation of section
4.4, "Sampling pseudo-counts", derived from eq. 11):

* :func:`run_iterations` (Algorithm 1's loop) -- per iteration :func:`sweep`,
  :func:`sample_concentrations` on its schedule, :func:`rb_estimate` (eqs. 12-14), then
  :func:`record_kept` (the concentrations' sum, :func:`rows_probability`, the batch means:
  :func:`close_batch`, :func:`close_last_batch`), :func:`record_trace` (with
  :func:`log_joint`) and :func:`record_draw` (:func:`posterior_draw`);
* :func:`sweep` (Algorithms 3-4) -- per (node, value) pair: :func:`feasible_range` (eq. 7's
  ``1 <= t <= n`` and the parent's ``n >= t`` of eq. 10), :func:`window_range` or
  :func:`random_cell` (the update modes below), the candidates' weights from the full
  conditional, for a generic parent or the root's Dirichlet-integrated base case, by
  :func:`ratio_weights` or :func:`log_weights` (counts beyond the ratio tables),
  :func:`draw_candidate` (inverse cdf, or the overrelaxed reflection) and
  :func:`move_table_count` (eq. 10);
* :func:`sample_concentrations` (Algorithm 5) -- :func:`start_gamma_conditionals`, per tied
  node :func:`add_neg_log_q_uniforms` or two Marsaglia-Tsang variates (``q_j ~ Beta(alpha,
  N_j)``), per group :func:`fold_products` then :func:`gibbs_concentration` or
  :func:`overrelaxed_concentration`;
* :func:`log_joint` (eq. 11) -- :func:`log_joint_root`, :func:`log_joint_nodes`,
  :func:`log_concentration_prior`;
* :func:`init_state` (Algorithm 2, eqs. 10 and 15, :func:`_init_t`).

The steps of an iteration are inlined into :func:`run_iterations` (``inline="always"``, numba
IR): a call boundary increfs and decrefs every array of the records passed, which made small
trees' iterations markedly slower than with positional arguments; inlined, they are as fast
(docs/sampler.md, "Implementation", has the measurement). The steps called once per iteration
take the records; those called inside a loop over pairs or nodes take plain arrays and scalars,
unpacked from the records before the loop: a record passed inside the loop would have every one
of its arrays reference-counted at each pass (a sweep 2.5 times slower). Two exceptions, both
measured: :func:`log_weights` (counts beyond the ratio tables) is called, not inlined, and the
concentration step's Gamma auxiliaries are written in its node loop; inlined into the loops, each
made the sampling of an ensemble's small trees 1.16-1.4x slower.

State of one chain (:class:`ChainState`, all arrays owned by the caller and updated in place):

* ``n[j, k]`` -- for a leaf: its data counts; for an internal node: the sum of its children's
  table counts ``t`` (paper, eq. 10). ``N[j] = sum_k n[j, k]``.
* ``t[j, k]`` -- the table counts (pseudo-counts) of node ``j``; ``T[j] = sum_k t[j, k]``. The root
  has none under the exact root treatment; under the reference treatment ``t[0, k] = min(1, n)``.
* ``alpha[g]`` -- the concentration of tying group ``g`` (``group[j]``, ``-1`` for the root, whose
  concentration ``alpha0`` is fixed).
* ``rng`` -- the 4 x uint64 state of this chain's xoshiro256** generator; ``rng_draw`` that of
  the stream of its posterior draws.

Random numbers: every (tree, chain) task owns a xoshiro256** stream seeded from
``numpy.random.SeedSequence`` (see :func:`fastpath.estimate.hdp.estimate_trees`); uniform, normal,
gamma
(Marsaglia-Tsang with the ``alpha < 1`` boost, in log space), beta and Dirichlet variates are built
on it here. numba's global ``np.random`` is never used, so results do not depend on threads.

Table-count updates (one ``t[j, k]`` at a time, leaves to root; the full conditional is the paper's
equation under "Sampling pseudo-counts" and, for children of the root under the exact treatment,
its Dirichlet-integrated base case):

* ``UPDATE_EXACT`` -- the feasible range ``[lo, hi]`` of ``t[j, k]`` given everything else is
  ``lo = max(1, t[p, k] - (n[p, k] - t[j, k]))``, ``hi = n[j, k]``. When it holds at most
  ``width`` values the full conditional is sampled. Otherwise a shift ``u`` is drawn uniformly
  from ``{0..width-1}``, the range is cut into the cells
  ``[lo - u + b width, lo - u + (b + 1) width - 1]`` and ``t`` is drawn from the full
  conditional restricted to the cell holding the current value.
  Given ``u`` the cell is a deterministic block of a partition that does not depend on ``t``, so
  this is an exact Gibbs step on the augmented pair ``(t, u)`` (docs/sampler.md has the proof).
  With ``overrelax`` (:data:`OVERRELAX_TABLES`), most of these draws are replaced by
  reflections of the current value's position in the conditional's cdf
  (:func:`draw_candidate`), and
  the concentrations' Gamma draw by an overrelaxed Metropolis-Hastings step
  (:func:`sample_concentrations`): both leave the posterior invariant and let the strongly
  coupled concentrations and table counts move together faster.
* ``UPDATE_WINDOW`` -- the reference's +-``window`` around the current value, clipped to
  ``[1, min(n, 10000)]`` and to the parent constraint. The window moves with the current value,
  so this is not an exact Gibbs step; kept to reproduce the reference.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from ...utils._numba_cache import flush_stale_cache
from . import _stirling as _stirling
from ._stirling import log_stirling

UPDATE_EXACT = 0
UPDATE_WINDOW = 1
ROOT_EXACT = 0
ROOT_REFERENCE = 1

#: reference's cap on a table count in window mode
WINDOW_T_CAP = 10000

#: ``overrelax=True``: probability that a table-count update is the reflection of its current
#: value's position in the conditional's cdf (otherwise a plain Gibbs draw, which keeps the chain
#: irreducible whatever the conditionals; Neal 1998 recommends such a mixture)
OVERRELAX_TABLES = 0.9
#: ``overrelax=True``: Adler's coefficient of the concentration step (-1: full reflection)
OVERRELAX_CONC = -0.9

#: the largest N_j whose Beta(alpha, N_j) auxiliary the concentration step may draw as a product
#: of N_j uniforms (``SamplerConfig.beta_uniforms``): up to here they cost less than two Gamma
#: variates
SMALL_SHAPE = 8


# ---------------------------------------------------------------------------- records
# numba types a NamedTuple instance field by field (heterogeneous tuple), so the scalars below
# must always be built with the same Python types (int, float, bool): another type would compile
# (and cache) another specialisation of every kernel. The builders in api.py convert explicitly.
class SamplerConfig(NamedTuple):
    """The sampler's options as typed scalars, fixed for a run.

    Attributes
    ----------
    n_iter : int
        Number of iterations (1-based; the last partial batch is closed at ``n_iter``).
    burn_in : int
        Iterations ``<= burn_in`` are not averaged.
    update : int
        :data:`UPDATE_EXACT` or :data:`UPDATE_WINDOW`.
    root : int
        :data:`ROOT_EXACT` or :data:`ROOT_REFERENCE`.
    conc_every : int
        Concentrations are sampled at iterations ``it % conc_every == 3 % conc_every``.
    window : int
        Half-width of the candidate range (window update) or of the cells (exact update).
    fix_conc : bool
        Keep the concentrations at their initial values.
    thin : int
        Traces (and draws) every ``thin`` iterations.
    batch_size, n_batches : int
        Batch means for the MCSE: ``n_batches`` batches of ``batch_size`` kept iterations.
    alpha0 : float
        Concentration of the root (fixed).
    shape0, rate0 : float
        Gamma prior of the concentrations.
    cap : float
        Largest concentration.
    reflect : float
        Probability that a table-count update is overrelaxed (:data:`OVERRELAX_TABLES` or 0).
    adler : float
        Adler's coefficient of the concentration step (:data:`OVERRELAX_CONC` or 0: Gibbs).
    beta_uniforms : bool
        The concentration step draws ``q_j`` of a node with ``N_j <= SMALL_SHAPE`` as a product
        of uniforms (:func:`sample_concentrations`).
    """

    n_iter: int
    burn_in: int
    update: int
    root: int
    conc_every: int
    window: int
    fix_conc: bool
    thin: int
    batch_size: int
    n_batches: int
    alpha0: float
    shape0: float
    rate0: float
    cap: float
    reflect: float
    adler: float
    beta_uniforms: bool


class TreeModel(NamedTuple):
    """Arrays fixed during a chain (read-only; shared by the chains of a tree).

    Attributes
    ----------
    parent, group : ndarray of int64, (n_nodes,)
        Parent of each node (``parent[j] < j``) and its tying group (``-1`` for the root).
    leaf_start : int
        First leaf node.
    counts : ndarray of int64, (n_nodes, K)
        The tree's counts (only the leaf rows are read, by :func:`init_state`).
    pair_node, pair_value : ndarray of int64
        The (node, value) pairs a sweep visits, in sweep order (:func:`sweep`).
    band_slot : ndarray of int64, (n_nodes, K)
        Row of the band cache (:class:`Scratch`) of leaf values whose count exceeds ``nr``;
        ``-1`` elsewhere.
    stir : tuple
        ``LogStirlingTable.kernel_args`` (for :func:`log_stirling`).
    r1, r2 : ndarray of float64
        Stirling ratio tables (:func:`build_ratio_tables`).
    nr : int
        Largest ``n`` the ratio tables are used for.
    """

    parent: np.ndarray
    group: np.ndarray
    leaf_start: int
    counts: np.ndarray
    pair_node: np.ndarray
    pair_value: np.ndarray
    band_slot: np.ndarray
    stir: tuple
    r1: np.ndarray
    r2: np.ndarray
    nr: int


class ChainState(NamedTuple):
    """What one chain updates in place (see the module docstring).

    Attributes
    ----------
    n, t : ndarray of int64, (n_nodes, K)
        Counts and table counts.
    N, T : ndarray of int64, (n_nodes,)
        Their sums over values.
    alpha : ndarray of float64, (n_groups,)
        Concentrations of the tying groups.
    rng, rng_draw : ndarray of uint64, (4,)
        xoshiro256** states of the chain and of its posterior draws.
    """

    n: np.ndarray
    t: np.ndarray
    N: np.ndarray
    T: np.ndarray
    alpha: np.ndarray
    rng: np.ndarray
    rng_draw: np.ndarray


class Accumulators(NamedTuple):
    """Running sums over the kept iterations of one chain.

    Attributes
    ----------
    phat : ndarray of float64, (n_nodes, K)
        The current iteration's Rao-Blackwellised estimate.
    acc_sum : ndarray of float64, (n_nodes, K)
        Sum of the estimates over the closed batches (and the last partial one at ``n_iter``).
    acc_batch : ndarray of float64, (n_nodes, K)
        Sum of the estimates in the open batch.
    bm_s1, bm_s2 : ndarray of float64, (n_nodes, K)
        Sums of the batch means and of their squares (MCSE).
    alpha_sum : ndarray of float64, (n_groups,)
        Sum of the concentrations.
    """

    phat: np.ndarray
    acc_sum: np.ndarray
    acc_batch: np.ndarray
    bm_s1: np.ndarray
    bm_s2: np.ndarray
    alpha_sum: np.ndarray


class Traces(NamedTuple):
    """The thinned traces (burn-in included) and posterior draws (after burn-in) of one chain.

    Attributes
    ----------
    conc_tr : ndarray of float64, (n_trace, n_groups)
        Concentrations.
    lj_tr : ndarray of float64, (n_trace,)
        Log joint (:func:`log_joint`).
    trace_ids : ndarray of int64, (n_traced,)
        Nodes whose estimates are traced.
    node_tr : ndarray of float64, (n_trace, n_traced, K)
        Their estimates.
    draw_ids : ndarray of int64, (n_drawn,)
        Nodes whose posterior draws are kept (empty: no draws).
    draws : ndarray of float64, (n_draws, n_drawn, K)
        The draws (:func:`posterior_draw`).
    rows_tr : ndarray of float64, (n_kept,)
        At every post-burn-in iteration (not thinned), the mean over the training rows of the
        Rao-Blackwellised probability each row reads at its leaf, ``sum_{leaf, k} n_leaf,k
        phat_leaf,k / N``: the scalar whose R-hat says whether the chains agree on what
        predictions read.
    """

    conc_tr: np.ndarray
    lj_tr: np.ndarray
    trace_ids: np.ndarray
    node_tr: np.ndarray
    draw_ids: np.ndarray
    draws: np.ndarray
    rows_tr: np.ndarray


class Scratch(NamedTuple):
    """Work buffers of one chain.

    Attributes
    ----------
    buf : ndarray of float64, (2 window + 1,)
        Cumulative weights of a table-count update's candidates.
    sh, rt : ndarray of float64, (n_groups,)
        Shape and rate of each concentration's Gamma conditional.
    phi : ndarray of float64, (n_nodes, K)
        A posterior draw of every node.
    conc : ndarray of float64, (K,)
        Dirichlet parameters of one node's draw.
    band_b0 : ndarray of int64, (n_bands,)
        First ``t`` of each band cache (``< 1``: empty).
    band_vals : ndarray of float64, (n_bands, BAND)
        ``log S(n, band_b0 + i)`` of each band (:func:`_band_lookup`).
    conc_work : ndarray of float64, (n_groups, 3 + SMALL_SHAPE)
        The concentration step's per-group constants and running products
        (:func:`start_gamma_conditionals`).
    log_alpha, lgamma_alpha : ndarray of float64, (n_groups,)
        ``log`` and ``lgamma`` of the concentrations (:func:`log_joint`).

    The last three default to empty arrays, which the kernels replace by arrays allocated at
    each call (:func:`new_chain` allocates them once per chain).
    """

    buf: np.ndarray
    sh: np.ndarray
    rt: np.ndarray
    phi: np.ndarray
    conc: np.ndarray
    band_b0: np.ndarray
    band_vals: np.ndarray
    conc_work: np.ndarray = np.ones((0, 3 + SMALL_SHAPE))
    log_alpha: np.ndarray = np.zeros(0)
    lgamma_alpha: np.ndarray = np.zeros(0)


_INV_2_53 = 1.0 / 9007199254740992.0


# ---------------------------------------------------------------------------- random numbers
@njit(cache=True, nogil=True, inline="always")
def _rotl(x, k):
    return (x << k) | (x >> (np.uint64(64) - k))


@njit(cache=True, nogil=True, inline="always")
def next_u64(s):
    """xoshiro256** (Blackman & Vigna): next 64-bit output, state ``s`` (4 x uint64) in place."""
    s0 = s[0]
    s1 = s[1]
    s2 = s[2]
    s3 = s[3]
    result = _rotl(s1 * np.uint64(5), np.uint64(7)) * np.uint64(9)
    tt = s1 << np.uint64(17)
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= tt
    s3 = _rotl(s3, np.uint64(45))
    s[0] = s0
    s[1] = s1
    s[2] = s2
    s[3] = s3
    return result


@njit(cache=True, nogil=True, inline="always")
def uniform(s):
    """Uniform double in the open interval (0, 1) (53 random bits, offset by half a step)."""
    return (float(next_u64(s) >> np.uint64(11)) + 0.5) * _INV_2_53


def _ziggurat_tables(c: int = 128, r: float = 3.442619855899, v: float = 9.91256303526217e-3):
    """Layer tables of Doornik's (2005) ZIGNOR variant of the Marsaglia-Tsang ziggurat."""
    x = np.zeros(c + 1)
    f = math.exp(-0.5 * r * r)
    x[0] = v / f
    x[1] = r
    for i in range(2, c):
        x[i] = math.sqrt(-2.0 * math.log(v / x[i - 1] + f))
        f = math.exp(-0.5 * x[i] * x[i])
    x[c] = 0.0
    ratio = x[1:] / x[:-1]
    return x, ratio


_ZIG_X, _ZIG_R = _ziggurat_tables()
_ZIG_TAIL = 3.442619855899


@njit(cache=True, nogil=True, inline="always")
def normal(s):
    """Standard normal by the ziggurat (Doornik's ZIGNOR, 128 layers): one 64-bit draw, one
    multiplication and one comparison in ~99% of calls."""
    zx = _ZIG_X
    zr = _ZIG_R
    while True:
        bits = next_u64(s)
        u = 2.0 * ((float(bits >> np.uint64(11)) + 0.5) * _INV_2_53) - 1.0
        i = int(bits & np.uint64(0x7F))
        if abs(u) < zr[i]:
            return u * zx[i]
        if i == 0:  # the tail beyond R (Marsaglia 1964)
            while True:
                xt = math.log(uniform(s)) / _ZIG_TAIL
                yt = math.log(uniform(s))
                if -2.0 * yt >= xt * xt:
                    break
            return xt - _ZIG_TAIL if u < 0.0 else _ZIG_TAIL - xt
        x = u * zx[i]
        f0 = math.exp(-0.5 * (zx[i] * zx[i] - x * x))
        f1 = math.exp(-0.5 * (zx[i + 1] * zx[i + 1] - x * x))
        if f1 + uniform(s) * (f0 - f1) < 1.0:
            return x


@njit(cache=True, nogil=True)
def _gamma_mt(a, s):
    """Gamma(a, 1) for a >= 1 (Marsaglia & Tsang 2000)."""
    d = a - 1.0 / 3.0
    return _gamma_mt_dc(d, 1.0 / math.sqrt(9.0 * d), s)


def _mt_c_table(n: int) -> np.ndarray:
    b = np.arange(n, dtype=np.float64)
    out = np.zeros(n)
    out[1:] = 1.0 / np.sqrt(9.0 * (b[1:] - 1.0 / 3.0))
    return out


#: 1 / sqrt(9 (b - 1/3)) of Marsaglia-Tsang for the integer shapes b < 4096 of Beta(alpha, N_j)
_MT_C = _mt_c_table(4096)


@njit(cache=True, nogil=True, inline="always")
def _gamma_mt_dc(d, c, s):
    """Marsaglia-Tsang core with ``d = a - 1/3``, ``c = 1 / sqrt(9 d)``."""
    while True:
        x = normal(s)
        v = 1.0 + c * x
        if v <= 0.0:
            continue
        v = v * v * v
        u = uniform(s)
        x2 = x * x
        if u < 1.0 - 0.0331 * x2 * x2:
            return d * v
        if math.log(u) < 0.5 * x2 + d * (1.0 - v + math.log(v)):
            return d * v


@njit(cache=True, nogil=True)
def log_gamma_variate(a, s):
    """``log X`` with ``X ~ Gamma(a, 1)``; ``-inf`` for ``a <= 0``.

    For ``a < 1`` uses ``X = Y U^(1/a)``, ``Y ~ Gamma(a + 1)``, kept in log space so tiny shapes
    do not underflow.
    """
    if a <= 0.0:
        return -np.inf
    if a >= 1.0:
        return math.log(_gamma_mt(a, s))
    return math.log(_gamma_mt(a + 1.0, s)) + math.log(uniform(s)) / a


@njit(cache=True, nogil=True)
def gamma_variate(a, s):
    """``X ~ Gamma(a, 1)`` (``0`` for ``a <= 0``)."""
    if a <= 0.0:
        return 0.0
    if a >= 1.0:
        return _gamma_mt(a, s)
    return math.exp(log_gamma_variate(a, s))


@njit(cache=True, nogil=True)
def neg_log_beta_variate(a, b, s):
    """``-log q`` with ``q ~ Beta(a, b)`` (``0`` when ``b <= 0``: ``q = 1``)."""
    if b <= 0.0:
        return 0.0
    if a >= 1.0 and b >= 1.0:
        return math.log1p(_gamma_mt(b, s) / _gamma_mt(a, s))
    lx = log_gamma_variate(a, s)
    ly = log_gamma_variate(b, s)
    # -log(x / (x + y)) = log(1 + y / x)
    d = ly - lx
    if d > 0.0:
        return d + math.log1p(math.exp(-d))
    return math.log1p(math.exp(d))


# ---------------------------------------------------------------------------- special functions
@njit(cache=True, nogil=True)
def digamma(x):
    """psi(x) for x > 0 (recurrence up to 6, then the asymptotic series)."""
    r = 0.0
    while x < 6.0:
        r -= 1.0 / x
        x += 1.0
    f = 1.0 / (x * x)
    return r + math.log(x) - 0.5 / x - f * (
        1.0 / 12.0 - f * (1.0 / 120.0 - f * (1.0 / 252.0 - f * (1.0 / 240.0 - f / 132.0)))
    )


@njit(cache=True, nogil=True)
def _init_t(nk, c):
    """Initial table count (paper, eq. 15).

    ``n`` if ``n <= 1``, else ``max(1, floor(c (psi(c + n) - psi(c))))``.
    """
    if nk <= 1:
        return nk
    v = math.floor(c * (digamma(c + nk) - digamma(c)))
    if v < 1.0:
        return 1
    iv = int(v)
    return iv if iv < nk else nk


# ---------------------------------------------------------------------------- initialisation
@njit(cache=True, nogil=True)
def init_state(model, cfg, state):
    """Bottom-up initialisation (Algorithm 2): leaf n = data, internal n = sum of children's t.

    Parameters
    ----------
    model : TreeModel
        Only ``model.counts``' leaf rows are read as data.
    cfg : SamplerConfig
        ``cfg.root`` decides the root's table counts.
    state : ChainState
        ``n, t, N, T`` are overwritten from ``state.alpha`` (the initial concentrations).
    """
    parent = model.parent
    leaf_start = model.leaf_start
    counts = model.counts
    group = model.group
    root_mode = cfg.root
    alpha = state.alpha
    n = state.n
    t = state.t
    N = state.N
    T = state.T
    n_nodes, K = n.shape
    for j in range(n_nodes):
        N[j] = 0
        T[j] = 0
        for k in range(K):
            t[j, k] = 0
            n[j, k] = counts[j, k] if j >= leaf_start else 0
    for j in range(n_nodes - 1, 0, -1):  # children before parents
        c = alpha[group[j]]
        p = parent[j]
        tot_n = 0
        tot_t = 0
        for k in range(K):
            nk = n[j, k]
            tk = _init_t(nk, c)
            t[j, k] = tk
            n[p, k] += tk
            tot_n += nk
            tot_t += tk
        N[j] = tot_n
        T[j] = tot_t
    tot_n = 0
    tot_t = 0
    for k in range(K):
        tot_n += n[0, k]
        if root_mode == ROOT_REFERENCE:
            t[0, k] = 1 if n[0, k] > 0 else 0
        tot_t += t[0, k]
    N[0] = tot_n
    T[0] = tot_t


# ---------------------------------------------------------------------------- Stirling ratios
#: Width of the band of log S(n, t) cached for leaf values whose n is beyond the ratio tables.
BAND = 256


@njit(cache=True, nogil=True)
def build_ratio_tables(nr, stir, r1, r2):
    """Linear-space ratios of Stirling numbers for ``n <= nr``: ``r1[n, t] = S(n, t + 1) /
    S(n, t)`` (1 <= t < n) and ``r2[n, t] = S(n + 1, t) / S(n, t)`` (1 <= t <= n); zero
    elsewhere. Needs the table up to ``nr + 1``. They turn each candidate of a table-count
    update into two loads and a few multiplications (no log, no exp).

    Both are triangular, in the order a sweep reads them: ``r1`` by rows (row ``n`` at
    ``n (n + 1) / 2``: the candidates ``t`` of one update are consecutive), ``r2`` by columns
    (column ``t``, ``n = t..nr``, at :func:`r2_column`: the candidates read the parent's
    ``n`` at consecutive values for one ``t``), so that an update's candidates read two
    contiguous runs rather than one cache line each of a table of up to 16 MB."""
    for n in range(nr + 1):
        row = n * (n + 1) // 2
        for t in range(n + 1):
            r1[row + t] = 0.0
            at = r2_column(t, nr) + n - t
            r2[at] = 0.0
            if t >= 1:
                a = log_stirling(n, t, stir)
                r2[at] = math.exp(log_stirling(n + 1, t, stir) - a)
                if t < n:
                    r1[row + t] = math.exp(log_stirling(n, t + 1, stir) - a)


@njit(cache=True, nogil=True, inline="always")
def r2_column(t, nr):
    """Where column ``t`` of the ratio table ``r2`` built for ``n <= nr`` (entries
    ``n = t..nr``) starts."""
    return t * (nr + 1) - t * (t - 1) // 2


@njit(cache=True, nogil=True)
def ratio_table_order(size):
    """The ``nr`` a triangular ratio table of ``size = (nr + 1) (nr + 2) / 2`` entries was built
    for: a table built for larger counts serves smaller ones (the kernels' ``nr`` is then the
    call's, below the table's), and ``r2``'s columns are placed by the table's own."""
    nb = int((math.sqrt(8.0 * size + 1.0) - 3.0) / 2.0)
    while (nb + 1) * (nb + 2) // 2 > size:
        nb -= 1
    while (nb + 2) * (nb + 3) // 2 <= size:
        nb += 1
    return nb


@njit(cache=True, nogil=True)
def _band_lookup(slot, t, lo, hi, nk, band_b0, band_vals, stir):
    """log S(nk, t) from the band cache of ``slot``, a window of :data:`BAND` values of t moved
    so that [lo, hi] is covered; an entry is computed when first read (NaN: not yet), since a
    chain reads only a few dozen of a band's values and filling a whole band each time it moves
    would cost far more than those reads (docs/performance.md, "The band cache of large leaf
    counts"). A range wider than the band is not cached: the value is computed."""
    if hi - lo + 1 > BAND:  # cells of more than BAND values (window >= BAND / 2)
        return log_stirling(nk, t, stir)
    b0 = band_b0[slot]
    if b0 < 1 or lo < b0 or hi >= b0 + BAND:
        b0 = lo - (BAND - (hi - lo + 1)) // 2
        if b0 < 1:
            b0 = 1
        band_b0[slot] = b0
        for i in range(BAND):
            band_vals[slot, i] = np.nan
    v = band_vals[slot, t - b0]
    if v != v:
        v = log_stirling(nk, t, stir)
        band_vals[slot, t - b0] = v
    return v


# ---------------------------------------------------------------------------- table-count sweep
# One update of t[j, k] (Algorithms 3-4), in the order the sweep runs its steps:
# feasible_range, then window_range or random_cell; the candidates' cumulative weights by
# ratio_weights (linear space) or log_weights (log space); draw_candidate; move_table_count.
# sweep strings them together over the pairs.
@njit(cache=True, nogil=True, inline="always")
def feasible_range(nj, m_rest, tpk, generic):
    """The values ``t[j, k]`` can take given every other table count, ``[lo, hi]``.

    ``1 <= t <= n[j, k]`` (``S(n, t) = 0`` outside, eq. 7), and under a parent whose table
    counts are sampled (``generic``: not the root of the exact treatment) the parent keeps
    ``n[p, k] = m_rest + t >= t[p, k]`` (its count is the sum of its children's table counts,
    eq. 10).
    """
    lo = 1
    if generic:
        need = tpk - m_rest
        if need > lo:
            lo = need
    return lo, nj


@njit(cache=True, nogil=True, inline="always")
def window_range(lo, hi, told, window):
    """``UPDATE_WINDOW``: ``[lo, hi]`` cut to the reference's ``told +- window`` and to
    :data:`WINDOW_T_CAP` (paper, "Sampling pseudo-counts": "a window of +-10")."""
    if told - window > lo:
        lo = told - window
    if told + window < hi:
        hi = told + window
    if WINDOW_T_CAP < hi:
        hi = WINDOW_T_CAP
    return lo, hi


@njit(cache=True, nogil=True, inline="always")
def random_cell(lo, hi, told, width, rng):
    """``UPDATE_EXACT``: ``[lo, hi]`` when it holds at most ``width`` values, else the cell
    holding ``told`` of its partition into blocks of ``width`` shifted by ``u`` uniform on
    ``{0..width-1}`` (one uniform drawn from ``rng``; an exact Gibbs step on ``(t, u)``, see the
    module docstring)."""
    if hi - lo + 1 <= width:
        return lo, hi
    u = int(uniform(rng) * width)
    if u >= width:
        u = width - 1
    a = lo - u + ((told - lo + u) // width) * width
    if a > lo:
        lo = a
    if a + width - 1 < hi:
        hi = a + width - 1
    return lo, hi


@njit(cache=True, nogil=True, inline="always")
def ratio_weights(buf, lo, m, nj, m_rest, big_rest, tpk, aj, ap, generic, a0k, r1, r2,
                  r2_order):
    """Cumulative weights of the candidates ``lo..lo+m-1`` of ``t[j, k]``, relative to
    ``w(lo) = 1``, into ``buf[:m]``; returns their total. Every ``n`` involved must be within
    the ratio tables ``r1``, ``r2`` (:func:`build_ratio_tables`).

    The full conditional (paper, "Sampling pseudo-counts", from eq. 11) under a generic parent
    is ``w(t) = alpha_j^t S(n_j, t) S(m_rest + t, t_p) / (alpha_p)_(M_rest + t)``: the rising
    factorial runs over the parent's *total* (eq. 11), not over its count of value k as
    Algorithm 4 writes (a typo of the paper, docs/theory.md section 12), so
    ``w(t+1) / w(t) = r1[n_j, t] r2[m_rest + t, t_p] alpha_j / (alpha_p + M_rest + t)``.

    Under the root of the exact treatment (``generic`` false, ``ap = alpha0``, ``a0k = alpha0 /
    K``) the root's probability is integrated against its Dirichlet(alpha0 / K) prior (the
    paper's base case), ``w(t) = alpha_j^t S(n_j, t) Gamma(m_rest + t + alpha0/K) / Gamma(M_rest
    + t + alpha0)`` with the *root's* counts, where the paper writes the child's (a typo, ibid.),
    so ``w(t+1) / w(t) = r1[n_j, t] alpha_j (m_rest + t + alpha0/K) / (M_rest + t + alpha0)``.

    Either way a candidate costs two loads and a few multiplications (no log, no exp). One call
    of :func:`cumulative_weights` serves both cases, the case tested at each candidate: two calls
    with the case a constant (one loop per case) made the sweeps of an ensemble's small trees
    1.4x slower (docs/sampler.md, "Implementation").
    """
    row1 = nj * (nj + 1) // 2
    if generic:
        # r2[parent's n at candidate t, tpk]: consecutive entries of column tpk
        at2 = r2_column(tpk, r2_order) + m_rest + lo - tpk
        num = 0.0
        den = ap + big_rest + lo
    else:
        at2 = 0
        num = m_rest + lo + a0k
        den = big_rest + lo + ap
    return cumulative_weights(generic, buf, m, r1, row1 + lo, r2, at2, aj, num, den)


@njit(cache=True, nogil=True, inline="always")
def cumulative_weights(generic, buf, m, r1, at1, r2, at2, aj, num, den):
    """The running sums of ``w(lo + i)``, ``w(lo) = 1``, into ``buf[:m]``; returns their total.
    ``w(t+1) / w(t)`` is ``r1[at1 + i] r2[at2 + i] aj / (den + i)`` under a generic parent,
    ``r1[at1 + i] aj (num + i) / (den + i)`` under the root's base case
    (:func:`ratio_weights`)."""
    w = 1.0
    tot = 0.0
    for i in range(m):
        tot += w
        buf[i] = tot
        if i == m - 1:
            break
        if generic:
            w *= r1[at1 + i] * r2[at2 + i] * aj / den
        else:
            w *= r1[at1 + i] * aj * num / den
        num += 1.0
        den += 1.0
        if w > 1e200:  # rescale what we have so far (only the ratios matter)
            for i2 in range(i + 1):
                buf[i2] *= 1e-200
            tot *= 1e-200
            w *= 1e-200
    return tot


# compiled on its own and called, not inlined: inlined into the pair loop, this path (counts
# beyond the ratio tables) made the sweeps of an ensemble's small trees 1.4x slower
# (docs/sampler.md, "Implementation")
@njit(cache=True, nogil=True)
def log_weights(buf, lo, hi, nj, slot, generic, m_rest, big_rest, tpk, aj, ap, alpha0, a0k,
                band_b0, band_vals, stir):
    """The weights of :func:`ratio_weights` in log space, for counts beyond the ratio tables:
    log-scores relative to ``t = lo`` from :func:`log_stirling` (a leaf's, ``slot >= 0``, from
    its band cache), then cumulative weights relative to their maximum into
    ``buf[:hi - lo + 1]``; returns their total. ``generic`` and ``ap``: as for
    :func:`ratio_weights` (``alpha0`` and ``a0k = alpha0 / K`` for the root's base case)."""
    m = hi - lo + 1
    cum = 0.0
    mx = -np.inf
    for i in range(m):
        tt = lo + i
        if slot >= 0:
            sc = _band_lookup(slot, tt, lo, hi, nj, band_b0, band_vals, stir)
        else:
            sc = log_stirling(nj, tt, stir)
        sc += cum
        if generic:
            sc += log_stirling(m_rest + tt, tpk, stir)
            cum += math.log(aj / (ap + big_rest + tt))
        else:
            cum += math.log(aj * (m_rest + tt + a0k) / (big_rest + tt + alpha0))
        buf[i] = sc
        if sc > mx:
            mx = sc
    tot = 0.0
    for i in range(m):
        tot += math.exp(buf[i] - mx)
        buf[i] = tot
    return tot


@njit(cache=True, nogil=True, inline="always")
def draw_candidate(buf, m, c, tot, reflect, rng):
    """Index of the new value among ``m`` candidates of cumulative weights ``buf[:m]`` (total
    ``tot``; the current value is candidate ``c``): the inverse cdf at one uniform from
    ``rng``, or with probability ``reflect`` the overrelaxed move.

    Overrelaxed (Neal 1998): ``v`` uniform on the current value's interval ``[F(c-), F(c))``
    of the cdf, the new value is the one whose interval holds ``tot - v``. One uniform ``u``
    serves both the choice and the point: ``u / reflect`` is uniform given ``u < reflect``, as
    ``(u - reflect) / (1 - reflect)`` is given ``u >= reflect``. Since ``v -> tot - v``
    preserves length, ``p(c) P(c -> c') = |I_c cap (tot - I_c')|`` is symmetric: the move is
    reversible for the conditional, as a Gibbs draw is, and goes to the other side of it,
    which suppresses the random walk of strongly coupled variables.
    """
    u = uniform(rng)
    if u < reflect:
        f_lo = buf[c - 1] if c > 0 else 0.0
        u = tot - (f_lo + (u / reflect) * (buf[c] - f_lo))
    else:
        if reflect > 0.0:
            u = (u - reflect) / (1.0 - reflect)
        u *= tot
    # branch-free: the number of cumulative weights <= u
    i = 0
    for i2 in range(m - 1):
        i += buf[i2] <= u
    return i


@njit(cache=True, nogil=True, inline="always")
def move_table_count(j, k, p, d, t, T, n, N):
    """``t[j, k] += d`` and the sums holding it: ``T[j]`` and the parent's ``n[p, k]``,
    ``N[p]`` (eq. 10: a parent's count is the sum of its children's table counts)."""
    t[j, k] += d
    T[j] += d
    n[p, k] += d
    N[p] += d


@njit(cache=True, nogil=True, inline="always")
def sweep(model, cfg, state, scratch):
    """One sweep of the table counts, leaves to root, each value in turn (Algorithms 3-4):
    every pair ``(j, k)`` of ``model.pair_node`` / ``model.pair_value`` draws ``t[j, k]`` from
    its full conditional given everything else: the candidates (:func:`feasible_range`, then
    :func:`window_range` or :func:`random_cell`), their weights (:func:`ratio_weights`, or
    :func:`log_weights` when a count is beyond the ratio tables), the draw
    (:func:`draw_candidate`) and the counts it moves (:func:`move_table_count`).

    Parameters
    ----------
    model : TreeModel
        The pairs are those that can ever need sampling (subtree count >= 2), nodes deepest
        first; a pair whose current ``n <= 1`` has ``t = n`` forced.
    cfg : SamplerConfig
        ``alpha0``, ``root``, ``update``, ``window`` and ``reflect`` are read.
    state : ChainState
        ``t``, ``T`` and the parents' ``n``, ``N`` are updated in place; draws from ``state.rng``.
    scratch : Scratch
        ``buf`` (at least ``2 window + 1`` values) and the band caches.
    """
    # the arrays as locals: the pair loop indexes plain arrays (a record passed to a step in
    # the loop would have every array of it reference-counted at each pair: 2.5x slower)
    parent, group, band_slot, stir, r1, r2 = (model.parent, model.group, model.band_slot,
                                              model.stir, model.r1, model.r2)
    n, t, N, T, alpha, rng = state.n, state.t, state.N, state.T, state.alpha, state.rng
    buf, band_b0, band_vals = scratch.buf, scratch.band_b0, scratch.band_vals
    pair_node, pair_value = model.pair_node, model.pair_value
    nr = model.nr
    alpha0 = cfg.alpha0
    generic_root = cfg.root == ROOT_REFERENCE  # else the root's Dirichlet base case
    update = cfg.update
    window = cfg.window
    reflect = cfg.reflect  # 0: never overrelax
    a0k = alpha0 / n.shape[1]
    width = 2 * window + 1
    r2_order = ratio_table_order(r2.shape[0])
    for q in range(pair_node.shape[0]):
        j = pair_node[q]
        k = pair_value[q]
        nj = n[j, k]
        if nj < 2:
            continue  # t = n is forced
        p = parent[j]
        aj = alpha[group[j]]
        if p == 0:
            ap = alpha0
            generic = generic_root
        else:
            ap = alpha[group[p]]
            generic = True
        told = t[j, k]
        m_rest = n[p, k] - told  # the parent's n and N without this t
        big_rest = N[p] - told
        tpk = t[p, k]
        lo, hi = feasible_range(nj, m_rest, tpk, generic)
        if update == UPDATE_WINDOW:
            lo, hi = window_range(lo, hi, told, window)
        else:
            lo, hi = random_cell(lo, hi, told, width, rng)
        m = hi - lo + 1
        if m <= 1:
            continue
        if nj <= nr and (not generic or m_rest + hi <= nr):
            tot = ratio_weights(buf, lo, m, nj, m_rest, big_rest, tpk, aj, ap, generic, a0k, r1,
                                r2, r2_order)
        else:
            tot = log_weights(buf, lo, hi, nj, band_slot[j, k], generic, m_rest, big_rest, tpk,
                              aj, ap, alpha0, a0k, band_b0, band_vals, stir)
        d = lo + draw_candidate(buf, m, told - lo, tot, reflect, rng) - told
        move_table_count(j, k, p, d, t, T, n, N)


# ---------------------------------------------------------------------------- concentrations
# One concentration step (Algorithm 5), in the order it runs: start_gamma_conditionals; per
# tied node, its T_j into the shape and -log q_j, q_j ~ Beta(alpha, N_j), into the rate
# (add_neg_log_q_uniforms, or two Marsaglia-Tsang variates); fold_products; then per group
# gibbs_concentration or overrelaxed_concentration. sample_concentrations strings them together.
@njit(cache=True, nogil=True, inline="always")
def start_gamma_conditionals(alpha, shape0, rate0, sh, rt, work):
    """Each group's Gamma conditional started at its prior, ``sh = shape0``, ``rt = rate0``
    (Algorithm 5's Gamma(nu0, mu0)), with, in ``work`` (rows: groups), the Marsaglia-Tsang
    constants ``d, c`` of ``Gamma(alpha)`` (``alpha + 1`` when ``alpha < 1``) in columns 0-1
    and the running products of the Gamma auxiliaries and of :func:`add_neg_log_q_uniforms`
    (columns 2 and 3..) reset to 1."""
    for g in range(alpha.shape[0]):
        sh[g] = shape0
        rt[g] = rate0
        a = alpha[g]
        d = (a if a >= 1.0 else a + 1.0) - 1.0 / 3.0
        work[g, 0] = d
        work[g, 1] = 1.0 / math.sqrt(9.0 * d)
        for i in range(2, work.shape[1]):
            work[g, i] = 1.0


@njit(cache=True, nogil=True, inline="always")
def add_neg_log_q_uniforms(g, b, a, rt, prod_u, rng):
    """``-log q_j`` of a node with ``N_j = b <= SMALL_SHAPE`` added to ``rt[g]``, with
    ``q_j ~ Beta(a, b)`` drawn as ``prod_{i < b} U_i^(1 / (a + i))`` (see
    :func:`sample_concentrations`): each ``U_i`` multiplied into ``prod_u[g, i]``, which is
    folded into ``rt[g]`` (one log per ``i`` for the whole group) before it underflows."""
    for i in range(b):
        pu = prod_u[g, i] * uniform(rng)
        if pu < 1e-250:
            rt[g] -= math.log(pu) / (a + i)
            pu = 1.0
        prod_u[g, i] = pu


@njit(cache=True, nogil=True, inline="always")
def fold_products(g, a, small, rt, prod, prod_u):
    """The running products of group ``g`` folded into its rate: ``rt[g] += log prod[g] -
    sum_i log(prod_u[g, i]) / (a + i)``."""
    if prod[g] != 1.0:
        rt[g] += math.log(prod[g])
    for i in range(small):
        if prod_u[g, i] != 1.0:
            rt[g] -= math.log(prod_u[g, i]) / (a + i)


@njit(cache=True, nogil=True, inline="always")
def gibbs_concentration(shape, rate, cap, rng):
    """``alpha ~ Gamma(shape, rate)`` (Algorithm 5's last step), clipped to ``[1e-300, cap]``."""
    a = gamma_variate(shape, rng) / rate
    if a > cap:
        a = cap
    if a < 1e-300:
        a = 1e-300
    return a


@njit(cache=True, nogil=True, inline="always")
def overrelaxed_concentration(alpha_g, shape, rate, cap, adler, rng):
    """Adler's overrelaxed step for ``alpha ~ Gamma(shape, rate)``, Metropolis-corrected (see
    :func:`sample_concentrations`); returns the new value (``alpha_g`` if rejected, or if the
    proposal is not positive or above ``cap``)."""
    mu = 1.0 - 1.0 / (9.0 * shape)
    sd = math.sqrt(1.0 / (9.0 * shape))
    y0 = alpha_g * rate
    w0 = (y0 / shape) ** (1.0 / 3.0)
    z0 = (w0 - mu) / sd
    z1 = adler * z0 + math.sqrt(1.0 - adler * adler) * normal(rng)
    w1 = mu + sd * z1
    if not w1 > 0.0:
        return alpha_g
    y1 = shape * w1 * w1 * w1
    a1 = y1 / rate
    if not a1 <= cap:
        return alpha_g
    # log [Gamma(y1) dy1/dz1 / Gamma(y0) dy0/dz0] - log [phi(z1) / phi(z0)]
    la = ((shape - 1.0) * (math.log(y1) - math.log(y0)) - (y1 - y0)
          + 2.0 * (math.log(w1) - math.log(w0)) + 0.5 * (z1 * z1 - z0 * z0))
    if la >= 0.0 or math.log(uniform(rng)) < la:
        return a1
    return alpha_g


@njit(cache=True, nogil=True, inline="always")
def sample_concentrations(model, cfg, state, scratch):
    """Beta/Gamma augmentation (Algorithm 5): q_j ~ Beta(alpha, N_j) over the tied nodes, then
    alpha ~ Gamma(shape0 + sum T_j, rate0 + sum -log q_j), capped at ``cap``.

    Parameters
    ----------
    model : TreeModel
        ``model.group`` ties the nodes.
    cfg : SamplerConfig
        ``shape0``, ``rate0``, ``cap``, ``adler`` and ``beta_uniforms`` are read.
    state : ChainState
        ``state.alpha`` is updated in place from ``N``, ``T``; draws from ``state.rng``.
    scratch : Scratch
        ``sh``, ``rt`` receive each group's Gamma shape and rate; ``conc_work`` is work space
        (allocated here if it has fewer rows than groups).

    Notes
    -----
    ``-log q = log(1 + Y / X)`` with ``X ~ Gamma(alpha)``, ``Y ~ Gamma(N_j)``; for ``alpha < 1``,
    ``X = X' U^(1/alpha)`` with ``X' ~ Gamma(alpha + 1)``, kept in log space. With
    ``beta_uniforms`` a node with ``N_j <= SMALL_SHAPE`` (most nodes of sparse trees) draws
    ``q`` as a product instead: ``Beta(a, 1)`` is ``U^(1/a)`` and ``Beta(a, b) Beta(a + b, 1)``
    is ``Beta(a, b + 1)`` in distribution, so ``q = prod_{i < N_j} U_i^(1 / (alpha + i))`` and
    ``-log q = sum_i -log(U_i) / (alpha + i)``: ``N_j`` uniforms instead of two Marsaglia-Tsang
    variates, the uniforms of all the group's nodes multiplied per ``i`` so that one log per
    ``i`` serves them all (the same law for the rate; other random numbers).

    ``adler`` in (-1, 0) overrelaxes the last step: with ``z`` the Wilson-Hilferty coordinate of
    alpha under Gamma(shape, rate) (``(rate alpha / shape)^(1/3)`` standardised, about N(0, 1)),
    Adler's (1981) ``z' = adler z + sqrt(1 - adler^2) e``, ``e ~ N(0, 1)``, is proposed and
    accepted by Metropolis-Hastings against the exact Gamma density (the proposal is reversible
    for N(0, 1), so the ratio is that of the target over N(0, 1) in ``z``; acceptance is near 1
    since the coordinate is nearly normal). Proposals above ``cap`` are rejected.
    """
    group = model.group
    adler = cfg.adler  # 0: plain Gibbs draw
    N = state.N
    T = state.T
    alpha = state.alpha
    rng = state.rng
    sh = scratch.sh
    rt = scratch.rt
    small = SMALL_SHAPE if cfg.beta_uniforms else 0
    G = alpha.shape[0]
    work = scratch.conc_work
    if work.shape[0] < G:  # a Scratch built without it
        work = np.ones((G, 3 + SMALL_SHAPE))
    prod = work[:, 2]
    prod_u = work[:, 3:]
    start_gamma_conditionals(alpha, cfg.shape0, cfg.rate0, sh, rt, work)
    for j in range(1, N.shape[0]):
        g = group[j]
        sh[g] += T[j]
        b = N[j]
        if b <= 0:
            continue  # q = 1
        if b <= small:
            add_neg_log_q_uniforms(g, b, alpha[g], rt, prod_u, rng)
        else:
            # -log q_j = log(1 + Y / X), q_j = X / (X + Y): Y ~ Gamma(N_j), X ~ Gamma(alpha)
            # (alpha + 1 when alpha < 1, then X U^(1/alpha) in log space), Marsaglia-Tsang from
            # one inlined code site; for alpha >= 1 the factor 1 + Y / X multiplies prod[g],
            # folded into the rate by one log when large (written here, not as a step of its
            # own: inlined as one, it made an ensemble's small trees' sampling 1.16x slower)
            a = alpha[g]
            db = b - 1.0 / 3.0
            cb = _MT_C[b] if b < _MT_C.shape[0] else 1.0 / math.sqrt(9.0 * db)
            y = 0.0
            x = 0.0
            for r in range(2):
                v = _gamma_mt_dc(db if r == 0 else work[g, 0], cb if r == 0 else work[g, 1], rng)
                if r == 0:
                    y = v
                else:
                    x = v
            if a >= 1.0:
                pr = prod[g] * (1.0 + y / x)
                if pr > 1e250:  # folded in before it overflows
                    rt[g] += math.log(pr)
                    pr = 1.0
                prod[g] = pr
            else:
                dd = math.log(y) - math.log(x) - math.log(uniform(rng)) / a
                rt[g] += dd + math.log1p(math.exp(-dd)) if dd > 0.0 else math.log1p(math.exp(dd))
    for g in range(G):
        fold_products(g, alpha[g], small, rt, prod, prod_u)
        if rt[g] <= 0.0 or sh[g] <= 0.0:
            continue  # improper prior and no information: keep the current value
        if adler != 0.0:
            alpha[g] = overrelaxed_concentration(alpha[g], sh[g], rt[g], cfg.cap, adler, rng)
        else:
            alpha[g] = gibbs_concentration(sh[g], rt[g], cfg.cap, rng)


# ---------------------------------------------------------------------------- estimates
@njit(cache=True, nogil=True, inline="always")
def rb_estimate(model, cfg, state, accum, add):
    """Rao-Blackwellised estimates (paper, eqs. 12-14), top-down, into ``accum.phat`` (n_nodes, K);
    also added to ``accum.acc_batch`` when ``add``.

    Parameters
    ----------
    model : TreeModel
    cfg : SamplerConfig
        ``cfg.alpha0`` is read.
    state : ChainState
    accum : Accumulators
    add : bool
    """
    parent = model.parent
    group = model.group
    alpha0 = cfg.alpha0
    n = state.n
    N = state.N
    alpha = state.alpha
    phat = accum.phat
    acc = accum.acc_batch
    n_nodes, K = n.shape
    inv = 1.0 / (N[0] + alpha0)
    base = alpha0 / K
    for k in range(K):
        v = (n[0, k] + base) * inv
        phat[0, k] = v
        if add:
            acc[0, k] += v
    for j in range(1, n_nodes):
        p = parent[j]
        a = alpha[group[j]]
        inv = 1.0 / (N[j] + a)
        if add:
            for k in range(K):
                v = (n[j, k] + a * phat[p, k]) * inv
                phat[j, k] = v
                acc[j, k] += v
        else:
            for k in range(K):
                phat[j, k] = (n[j, k] + a * phat[p, k]) * inv


@njit(cache=True, nogil=True)
def _dirichlet_row(conc, out_row, rng):
    K = conc.shape[0]
    mx = -np.inf
    for k in range(K):
        v = log_gamma_variate(conc[k], rng)
        out_row[k] = v
        if v > mx:
            mx = v
    tot = 0.0
    for k in range(K):
        e = math.exp(out_row[k] - mx) if out_row[k] > -np.inf else 0.0
        out_row[k] = e
        tot += e
    for k in range(K):
        out_row[k] /= tot


@njit(cache=True, nogil=True, inline="always")
def posterior_draw(model, cfg, state, scratch):
    """One draw of every node's probability vector given the table counts and concentrations:
    phi_root ~ Dir(n_root + alpha0/K), phi_j ~ Dir(n_j + alpha_j phi_parent), top-down.

    Parameters
    ----------
    model : TreeModel
    cfg : SamplerConfig
        ``cfg.alpha0`` is read.
    state : ChainState
        Draws from ``state.rng_draw`` (its own stream, so draws leave the chain unchanged).
    scratch : Scratch
        The draw goes to ``scratch.phi``; ``scratch.conc`` is work space.
    """
    parent = model.parent
    group = model.group
    alpha0 = cfg.alpha0
    n = state.n
    alpha = state.alpha
    rng = state.rng_draw
    phi = scratch.phi
    conc = scratch.conc
    n_nodes, K = n.shape
    base = alpha0 / K
    for k in range(K):
        conc[k] = n[0, k] + base
    _dirichlet_row(conc, phi[0], rng)
    for j in range(1, n_nodes):
        p = parent[j]
        a = alpha[group[j]]
        for k in range(K):
            conc[k] = n[j, k] + a * phi[p, k]
        _dirichlet_row(conc, phi[j], rng)


@njit(cache=True, nogil=True, inline="always")
def log_joint_root(lj, n, t, N, T, alpha0, root_mode, stir):
    """``lj`` plus the root's factor of eq. (11). Exact treatment: the root's probability
    integrated against its Dirichlet(alpha0 / K) prior, ``Gamma(alpha0) / Gamma(N_0 + alpha0)
    prod_k Gamma(n_0k + alpha0/K) / Gamma(alpha0/K)``; reference treatment: a node of
    concentration ``alpha0`` over the uniform base ``1/K``, ``(alpha0/K)^T_0 / (alpha0)_(N_0)
    prod_k S(n_0k, t_0k)``."""
    K = n.shape[1]
    if root_mode == ROOT_EXACT:
        base = alpha0 / K
        lj += math.lgamma(alpha0) - math.lgamma(N[0] + alpha0)
        for k in range(K):
            if n[0, k] > 0:
                lj += math.lgamma(n[0, k] + base) - math.lgamma(base)
    else:
        lj += T[0] * math.log(alpha0 / K) - (math.lgamma(alpha0 + N[0]) - math.lgamma(alpha0))
        for k in range(K):
            lj += log_stirling(n[0, k], t[0, k], stir)
    return lj


@njit(cache=True, nogil=True, inline="always")
def log_joint_nodes(lj, group, n, t, N, T, alpha, log_a, lg_a, stir):
    """``lj`` plus the factors of eq. (11) of the other nodes, ``alpha_j^T_j / (alpha_j)_(N_j)
    prod_k S(n_jk, t_jk)``, with ``log_a``, ``lg_a`` the log and log-Gamma of each group's
    concentration (``(a)_(N) = Gamma(a + N) / Gamma(a)``; ``log S(n, n) = 0``)."""
    for j in range(1, n.shape[0]):
        g = group[j]
        lj += T[j] * log_a[g] + lg_a[g] - math.lgamma(alpha[g] + N[j])
        for k in range(n.shape[1]):
            nk = n[j, k]
            if nk > 1:
                tk = t[j, k]
                if tk < nk:
                    lj += log_stirling(nk, tk, stir)
    return lj


@njit(cache=True, nogil=True, inline="always")
def log_concentration_prior(lj, alpha, log_a, shape0, rate0):
    """``lj`` plus the log density of every group's concentration under the Gamma(shape0,
    rate0) prior (Algorithm 5's ``Gamma(nu0, mu0)``)."""
    for g in range(alpha.shape[0]):
        lj += (shape0 * math.log(rate0) - math.lgamma(shape0) + (shape0 - 1.0) * log_a[g]
               - rate0 * alpha[g])
    return lj


@njit(cache=True, nogil=True, inline="always")
def log_joint(model, cfg, state, scratch):
    """log P(data, t, alpha) of the augmented model (paper, eq. 11), up to the data's multinomial
    coefficient, with the chosen root treatment (:func:`log_joint_root`,
    :func:`log_joint_nodes`); the Gamma prior of the concentrations is included when they are
    sampled (:func:`log_concentration_prior`).

    Parameters
    ----------
    model : TreeModel
    cfg : SamplerConfig
        ``alpha0``, ``root``, ``shape0``, ``rate0`` and ``fix_conc`` are read.
    state : ChainState
    scratch : Scratch
        ``log_alpha``, ``lgamma_alpha`` are work space (allocated here if shorter than the
        groups).

    Returns
    -------
    float
    """
    alpha = state.alpha
    G = alpha.shape[0]
    log_a = scratch.log_alpha
    lg_a = scratch.lgamma_alpha
    if log_a.shape[0] < G or lg_a.shape[0] < G:  # a Scratch built without them
        log_a = np.empty(G)
        lg_a = np.empty(G)
    for g in range(G):
        log_a[g] = math.log(alpha[g])
        lg_a[g] = math.lgamma(alpha[g])
    lj = log_joint_root(0.0, state.n, state.t, state.N, state.T, cfg.alpha0, cfg.root,
                        model.stir)
    lj = log_joint_nodes(lj, model.group, state.n, state.t, state.N, state.T, alpha, log_a, lg_a,
                         model.stir)
    if not cfg.fix_conc and cfg.shape0 > 0.0 and cfg.rate0 > 0.0:
        lj = log_concentration_prior(lj, alpha, log_a, cfg.shape0, cfg.rate0)
    return lj


# ---------------------------------------------------------------------------- the chain
# One iteration (Algorithm 1's loop): sweep, sample_concentrations on their schedule,
# rb_estimate, then after burn-in record_kept (the concentrations' sum, the rows' probability,
# the batch means) and every thin-th iteration record_trace and record_draw.
@njit(cache=True, nogil=True, inline="always")
def rows_probability(counts, phat, leaf_start, inv_rows):
    """The mean over the training rows of the estimate each reads at its leaf,
    ``sum_{leaf, k} n_leaf,k phat_leaf,k / N`` (``inv_rows = 1 / N``)."""
    rows_p = 0.0
    for j in range(leaf_start, counts.shape[0]):
        for k in range(counts.shape[1]):
            rows_p += counts[j, k] * phat[j, k]
    return rows_p * inv_rows


@njit(cache=True, nogil=True, inline="always")
def close_batch(acc_batch, acc_sum, bm_s1, bm_s2, bsize):
    """The open batch of ``bsize`` estimates closed: its sum into ``acc_sum``, its mean and the
    mean's square into ``bm_s1``, ``bm_s2`` (batch means, for the MCSE); emptied."""
    inv_b = 1.0 / bsize
    for j in range(acc_batch.shape[0]):
        for k in range(acc_batch.shape[1]):
            s = acc_batch[j, k]
            bm = s * inv_b
            acc_sum[j, k] += s
            bm_s1[j, k] += bm
            bm_s2[j, k] += bm * bm
            acc_batch[j, k] = 0.0


@njit(cache=True, nogil=True, inline="always")
def close_last_batch(acc_batch, acc_sum):
    """The last, partial batch's sum into ``acc_sum`` (not a batch mean); emptied."""
    for j in range(acc_batch.shape[0]):
        for k in range(acc_batch.shape[1]):
            acc_sum[j, k] += acc_batch[j, k]
            acc_batch[j, k] = 0.0


@njit(cache=True, nogil=True, inline="always")
def record_kept(r, last, model, cfg, state, accum, traces, inv_rows):
    """After burn-in, kept iteration ``r`` (0-based; ``last``: the run's last iteration), whose
    estimate :func:`rb_estimate` has added to the open batch: the concentrations' sum, the
    rows' probability (:func:`rows_probability`), and the batch closed when full
    (:func:`close_batch`) or at the last iteration (:func:`close_last_batch`)."""
    alpha = state.alpha
    alpha_sum = accum.alpha_sum
    bsize = cfg.batch_size
    for g in range(alpha.shape[0]):
        alpha_sum[g] += alpha[g]
    traces.rows_tr[r] = rows_probability(model.counts, accum.phat, model.leaf_start, inv_rows)
    if r < cfg.n_batches * bsize and (r + 1) % bsize == 0:
        close_batch(accum.acc_batch, accum.acc_sum, accum.bm_s1, accum.bm_s2, bsize)
    elif last:
        close_last_batch(accum.acc_batch, accum.acc_sum)


@njit(cache=True, nogil=True, inline="always")
def record_trace(idx, model, cfg, state, accum, traces, scratch):
    """Trace point ``idx``: the concentrations, the log joint (:func:`log_joint`) and the
    traced nodes' estimates (``accum.phat``)."""
    alpha = state.alpha
    phat = accum.phat
    trace_ids = traces.trace_ids
    node_tr = traces.node_tr
    for g in range(alpha.shape[0]):
        traces.conc_tr[idx, g] = alpha[g]
    traces.lj_tr[idx] = log_joint(model, cfg, state, scratch)
    for i in range(trace_ids.shape[0]):
        for k in range(phat.shape[1]):
            node_tr[idx, i, k] = phat[trace_ids[i], k]


@njit(cache=True, nogil=True, inline="always")
def record_draw(di, model, cfg, state, traces, scratch):
    """Posterior draw ``di`` (:func:`posterior_draw`) of the nodes ``traces.draw_ids``."""
    posterior_draw(model, cfg, state, scratch)
    phi = scratch.phi
    draw_ids = traces.draw_ids
    draws = traces.draws
    for i in range(draw_ids.shape[0]):
        for k in range(phi.shape[1]):
            draws[di, i, k] = phi[draw_ids[i], k]


@njit(cache=True, nogil=True)
def run_iterations(it_start, it_stop, model, cfg, state, accum, traces, scratch):
    """Advance one chain over the 1-based iterations ``it_start <= it < it_stop``.

    Parameters
    ----------
    it_start, it_stop : int
        Iterations to run (a chain is run in chunks, so that the caller can report progress and
        stop between them).
    model : TreeModel
    cfg : SamplerConfig
    state : ChainState
        Updated in place.
    accum : Accumulators
        Updated in place.
    traces : Traces
        Rows of the iterations run are written.
    scratch : Scratch

    Notes
    -----
    Per iteration (Algorithm 1): the table-count sweep (:func:`sweep`); the concentrations
    (:func:`sample_concentrations`) when ``it % every == 3 % every`` (iterations 3, 8, 13, ...
    for every = 5; the reference schedule); then, after burn-in, the Rao-Blackwellised estimate
    (:func:`rb_estimate`, eqs. 12-14) is added to the current batch (batch means for the MCSE;
    a batch is added to ``acc_sum`` when it closes and the last partial batch at
    ``it == n_iter``: :func:`record_kept`). Every ``thin``-th iteration records the traces
    (:func:`record_trace`), and after burn-in the posterior draws (:func:`record_draw`, from
    their own stream ``rng_draw``, so asking for draws leaves the chain itself unchanged).
    """
    n_iter = cfg.n_iter
    burn_in = cfg.burn_in
    every = cfg.conc_every
    thin = cfg.thin
    counts = model.counts
    leaf_start = model.leaf_start
    n_traced = traces.trace_ids.shape[0]
    n_drawn = traces.draw_ids.shape[0]
    conc_step = state.alpha.shape[0] > 0 and not cfg.fix_conc
    phase = 3 % every
    n_trace_burn = burn_in // thin
    n_rows = 0
    for j in range(leaf_start, counts.shape[0]):
        for k in range(counts.shape[1]):
            n_rows += counts[j, k]
    inv_rows = 1.0 / n_rows if n_rows > 0 else 0.0
    for it in range(it_start, it_stop):
        sweep(model, cfg, state, scratch)
        if conc_step and it % every == phase:
            sample_concentrations(model, cfg, state, scratch)
        kept = it > burn_in
        traced = it % thin == 0
        if kept or (traced and n_traced > 0):
            rb_estimate(model, cfg, state, accum, kept)
        if kept:
            record_kept(it - burn_in - 1, it == n_iter, model, cfg, state, accum, traces,
                        inv_rows)
        if traced:
            record_trace(it // thin - 1, model, cfg, state, accum, traces, scratch)
            if kept and n_drawn > 0:
                record_draw(it // thin - n_trace_burn - 1, model, cfg, state, traces, scratch)


# ---------------------------------------------------------------------------- a chain's records
@njit(cache=True, nogil=True)
def sweep_pairs(counts):
    """The (node, value) pairs a sweep visits (:func:`sweep`): those whose subtree count is at
    least 2, nodes deepest first (descending index), values ascending."""
    n_nodes, K = counts.shape
    n_pairs = 0
    for j in range(1, n_nodes):
        for k in range(K):
            if counts[j, k] >= 2:
                n_pairs += 1
    pair_node = np.empty(n_pairs, dtype=np.int64)
    pair_value = np.empty(n_pairs, dtype=np.int64)
    q = 0
    for j in range(n_nodes - 1, 0, -1):
        for k in range(K):
            if counts[j, k] >= 2:
                pair_node[q] = j
                pair_value[q] = k
                q += 1
    return pair_node, pair_value


@njit(cache=True, nogil=True)
def band_slots(counts, leaf_start, nr):
    """Each leaf value's row of the band caches of log S(n, .) when its count is beyond the
    ratio tables (``> nr``; in row-major order), -1 elsewhere, and the number of bands."""
    n_nodes, K = counts.shape
    band_slot = np.full((n_nodes, K), -1, dtype=np.int64)
    n_bands = 0
    for j in range(leaf_start, n_nodes):
        for k in range(K):
            if counts[j, k] > nr:
                band_slot[j, k] = n_bands
                n_bands += 1
    return band_slot, n_bands


@njit(cache=True, nogil=True)
def tree_model(parent, group, leaf_start, counts, stir, r1, r2, nr):
    """The :class:`TreeModel` of a tree: its arrays, the sweep's pairs (:func:`sweep_pairs`)
    and the band caches' rows (:func:`band_slots`), built in one compiled call."""
    pair_node, pair_value = sweep_pairs(counts)
    band_slot = band_slots(counts, leaf_start, nr)[0]
    return TreeModel(parent, group, leaf_start, counts, pair_node, pair_value, band_slot,
                     stir, r1, r2, nr)


@njit(cache=True, nogil=True)
def new_chain(model, cfg, alpha_init, seeds, trace_ids, draw_ids, n_draws):
    """A chain's records: its state initialised (:func:`init_state`, Algorithm 2) from
    ``alpha_init`` and its two streams ``seeds`` (the sampler's, the posterior draws'), zeroed
    sums, traces of ``cfg.n_iter // cfg.thin`` points (``trace_ids``' estimates, ``n_draws``
    draws of ``draw_ids``) and its work buffers. Returns ``(state, accum, traces, scratch)``,
    for :func:`run_iterations`.

    It does not call :func:`run_iterations` itself: numba links a called kernel's code into
    the caller's and optimises and compiles the whole again, so a kernel running the
    iterations would compile them a second time on first use (3.5 CPU-s of LLVM; docs/
    performance.md, "First use: the ensemble's kernels compiled"), for one Python call a chain
    saved."""
    n_nodes, K = model.counts.shape
    G = alpha_init.shape[0]
    state = ChainState(np.zeros((n_nodes, K), dtype=np.int64),
                       np.zeros((n_nodes, K), dtype=np.int64),
                       np.zeros(n_nodes, dtype=np.int64), np.zeros(n_nodes, dtype=np.int64),
                       alpha_init.copy(), seeds[0].copy(), seeds[1].copy())
    init_state(model, cfg, state)
    accum = Accumulators(np.zeros((n_nodes, K)), np.zeros((n_nodes, K)),
                         np.zeros((n_nodes, K)), np.zeros((n_nodes, K)),
                         np.zeros((n_nodes, K)), np.zeros(G))
    n_trace = cfg.n_iter // cfg.thin
    traces = Traces(np.zeros((n_trace, G)), np.zeros(n_trace), trace_ids,
                    np.zeros((n_trace, trace_ids.shape[0], K)), draw_ids,
                    np.zeros((n_draws, draw_ids.shape[0], K)),
                    np.zeros(cfg.n_iter - cfg.burn_in))
    n_bands = 0
    for j in range(n_nodes):
        for k in range(K):
            if model.band_slot[j, k] >= 0:
                n_bands += 1
    scratch = Scratch(np.empty(2 * cfg.window + 1), np.zeros(G), np.zeros(G),
                      np.zeros((n_nodes, K)), np.zeros(K), np.zeros(n_bands, dtype=np.int64),
                      np.zeros((n_bands, BAND)), np.ones((G, 3 + SMALL_SHAPE)), np.zeros(G),
                      np.zeros(G))
    return state, accum, traces, scratch


# ---------------------------------------------------------------------------- cache guard
# The kernels compile fastpath.estimate.hdp._stirling.log_stirling into themselves: a changed
# stirling.py must not leave them running its old code from numba's cache.
flush_stale_cache(globals(), [_stirling])
