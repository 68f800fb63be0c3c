"""HDP estimates of conditional probability tables: the Python API of the collapsed Gibbs sampler.

The model and the sampler are the paper's (section 4, Algorithms 1-5); the kernels live in
:mod:`fastpath.sampler`. Typical use::

    from fastpath.hdp import HDPOptions, estimate_tree
    res = estimate_tree(tree, HDPOptions(n_iter=5000, n_chains=2), seed=1)
    res.probabilities          # (n_nodes, K) posterior means, read-only
    res.query([[0, 3, 1]])     # deepest existing node along each path (back-off)
    res.diagnostics()          # R-hat / ESS of the concentrations and the log joint
    res.to_arviz()             # an ArviZ DataTree (arviz imported lazily)

:func:`estimate_trees` samples many trees (sharing one Stirling table) and their chains in
parallel threads; every (tree, chain) pair owns a random stream derived from the seed, so results
are bit-identical whatever the number of threads.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import numbers
import os
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from . import sampler as _s
from .context_tree import TYING_STRATEGIES, ContextTree, tying_groups
from .stirling import LogStirlingTable

__all__ = [
    "ROOT_TREATMENTS",
    "UPDATES",
    "HDPOptions",
    "HDPResult",
    "HDPTrace",
    "effective_sample_size",
    "estimate_tree",
    "estimate_trees",
    "split_rhat",
]

UPDATES: tuple[str, ...] = ("exact", "window")
ROOT_TREATMENTS: tuple[str, ...] = ("exact", "reference")


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.array(a, copy=True)
    a.flags.writeable = False
    return a


def _check_int(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def _check_float(name: str, value, *, positive: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number, got {value!r}")
    v = float(value)
    if not math.isfinite(v) or v < 0 or (positive and v == 0):
        kind = "> 0" if positive else ">= 0"
        raise ValueError(f"{name} must be finite and {kind}, got {value!r}")
    return v


@dataclass(frozen=True)
class HDPOptions:
    """Options of the HDP sampler; defaults follow the reference implementation.

    Attributes
    ----------
    n_iter : int
        Gibbs iterations per chain (reference default 5,000; the paper's experiments 50,000).
    burn_in : int or None
        Iterations discarded before averaging; ``None`` means ``min(1000, n_iter // 10)``.
    tying : {"level", "same-parent", "single", "none"}
        Which nodes share a concentration (paper, "Sampling and tying concentrations").
    update : {"exact", "window"}
        Table-count update: ``exact`` is a valid Gibbs step (full conditional when the feasible
        range holds at most ``2 window + 1`` values, else the cell of size ``2 window + 1`` of a
        randomly shifted partition); ``window`` is the reference's +-``window`` around the current
        value (not an exact Gibbs step; reproduces the reference).
    root : {"exact", "reference"}
        ``exact`` integrates the root probability against its Dirichlet(alpha0 / K) prior (paper,
        "Sampling pseudo-counts"); ``reference`` treats the root as an ordinary node whose table
        counts are fixed at min(1, n), as the reference code does.
    concentration_shape, concentration_rate : float
        Gamma(shape, rate) prior of the sampled concentrations (reference: 2, 1).
    concentration_init : float or sequence of float
        Start value of the concentrations (reference: 2), one value or one per tying group.
    fix_concentrations : bool
        Keep the concentrations at ``concentration_init`` (no sampling).
    concentration_max : float
        Cap applied to every concentration draw (reference: 4,000).
    concentration_every : int
        Concentrations are re-sampled after the sweep of iterations ``it`` (1-based) with
        ``it % every == 3 % every`` -- 3, 8, 13, ... for the default 5 (the reference schedule).
    alpha0 : float
        Root concentration, fixed, with the uniform base measure 1/K.
    overrelax : bool
        Overrelaxed updates (``update="exact"`` only): nine in ten table-count updates reflect the
        current value's position in its conditional's cdf instead of drawing afresh, and the
        concentrations take Adler's overrelaxed step (Metropolis-corrected) instead of their Gamma
        draw. Still exact (every step leaves the posterior invariant); 2-5x the ESS per iteration
        of the concentrations and leaves for about 8 % more time per iteration
        (docs/validation.md, "Efficiency").
        Not in the paper or the reference code, hence off by default. ``concentration_max`` then
        truncates the concentrations' posterior (proposals above it are rejected) instead of
        clipping draws.
    window : int
        Half-width of the table-count window (``update="window"``); ``exact`` uses cells of
        ``2 window + 1`` values.
    n_chains : int
        Independent chains per tree; estimates are averaged over chains.
    thin : int
        Traces (concentrations, log joint, chosen node probabilities) and posterior draws are
        kept every ``thin`` iterations.
    n_batches : int
        Batches per chain for the batch-means Monte-Carlo standard errors.
    trace_nodes : sequence of int
        Nodes whose Rao-Blackwellised probability vectors are traced.
    record_draws : bool or sequence of int
        Keep thinned posterior draws of node probability vectors after burn-in (``True``: every
        node; a sequence: those nodes). Draws are phi_root ~ Dir(n + alpha0/K), then
        phi_j ~ Dir(n_j + alpha_j phi_parent) given the current table counts and concentrations.
    """

    n_iter: int = 5000
    burn_in: int | None = None
    tying: str = "level"
    update: str = "exact"
    root: str = "exact"
    concentration_shape: float = 2.0
    concentration_rate: float = 1.0
    concentration_init: float | tuple[float, ...] = 2.0
    fix_concentrations: bool = False
    concentration_max: float = 4000.0
    concentration_every: int = 5
    alpha0: float = 2.0
    overrelax: bool = False
    window: int = 10
    n_chains: int = 1
    thin: int = 10
    n_batches: int = 25
    trace_nodes: tuple[int, ...] = ()
    record_draws: bool | tuple[int, ...] = False

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "n_iter", _check_int("n_iter", self.n_iter, 1))
        if self.burn_in is not None:
            b = _check_int("burn_in", self.burn_in, 0)
            if b >= self.n_iter:
                raise ValueError(f"burn_in must be < n_iter ({self.n_iter}), got {b}")
            set_(self, "burn_in", b)
        if self.tying not in TYING_STRATEGIES:
            raise ValueError(f"tying must be one of {TYING_STRATEGIES}, got {self.tying!r}")
        if self.update not in UPDATES:
            raise ValueError(f"update must be one of {UPDATES}, got {self.update!r}")
        if self.root not in ROOT_TREATMENTS:
            raise ValueError(f"root must be one of {ROOT_TREATMENTS}, got {self.root!r}")
        for name in ("concentration_shape", "concentration_rate"):
            set_(self, name, _check_float(name, getattr(self, name), positive=False))
        init = self.concentration_init
        if isinstance(init, (str, bytes)):
            raise ValueError(f"concentration_init must be a number or numbers, got {init!r}")
        if isinstance(init, Sequence) or isinstance(init, np.ndarray):
            vals = tuple(
                _check_float("concentration_init", v, positive=True) for v in np.ravel(init)
            )
            if not vals:
                raise ValueError("concentration_init must not be empty")
            set_(self, "concentration_init", vals)
        else:
            set_(self, "concentration_init",
                 _check_float("concentration_init", init, positive=True))
        if not isinstance(self.fix_concentrations, (bool, np.bool_)):
            raise ValueError(f"fix_concentrations must be a bool, got {self.fix_concentrations!r}")
        set_(self, "fix_concentrations", bool(self.fix_concentrations))
        set_(self, "concentration_max",
             _check_float("concentration_max", self.concentration_max, positive=True))
        set_(self, "concentration_every",
             _check_int("concentration_every", self.concentration_every, 1))
        set_(self, "alpha0", _check_float("alpha0", self.alpha0, positive=True))
        if not isinstance(self.overrelax, (bool, np.bool_)):
            raise ValueError(f"overrelax must be a bool, got {self.overrelax!r}")
        set_(self, "overrelax", bool(self.overrelax))
        if self.overrelax and self.update != "exact":
            raise ValueError("overrelax=True needs update='exact' (the window update is not a "
                             f"Gibbs step to overrelax), got update={self.update!r}")
        set_(self, "window", _check_int("window", self.window, 1))
        set_(self, "n_chains", _check_int("n_chains", self.n_chains, 1))
        set_(self, "thin", _check_int("thin", self.thin, 1))
        set_(self, "n_batches", _check_int("n_batches", self.n_batches, 2))
        set_(self, "trace_nodes",
             tuple(_check_int("trace_nodes", v, 0) for v in np.ravel(self.trace_nodes)))
        rd = self.record_draws
        if isinstance(rd, (bool, np.bool_)):
            set_(self, "record_draws", bool(rd))
        else:
            set_(self, "record_draws",
                 tuple(_check_int("record_draws", v, 0) for v in np.ravel(rd)))

    @property
    def burn_in_iterations(self) -> int:
        """The burn-in actually used (``min(1000, n_iter // 10)`` when ``burn_in`` is None)."""
        if self.burn_in is None:
            return min(1000, self.n_iter // 10)
        return self.burn_in

    def replace(self, **changes) -> HDPOptions:
        return dataclasses.replace(self, **changes)


# ---------------------------------------------------------------------------- diagnostics
def _normal_ppf(p: np.ndarray) -> np.ndarray:
    from scipy.special import ndtri

    return ndtri(p)


def _split(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if x.ndim == 1:
        x = x[None, :]
    n = x.shape[1]
    half = n // 2
    return np.concatenate([x[:, :half], x[:, n - half:]], axis=0)


def _z_scale(x: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    r = rankdata(x, method="average").reshape(x.shape)
    return _normal_ppf((r - 0.375) / (x.size + 0.25))


def _rhat_basic(x: np.ndarray) -> float:
    m, n = x.shape
    if n < 2 or m < 2:
        return math.nan
    w = x.var(axis=1, ddof=1).mean()
    b = n * x.mean(axis=1).var(ddof=1)
    if w <= 0:
        return math.nan
    var_hat = (n - 1) / n * w + b / n
    return float(math.sqrt(var_hat / w))


def split_rhat(x: np.ndarray) -> float:
    """Rank-normalised split R-hat (Vehtari et al. 2021) of draws shaped (chains, draws)."""
    x = np.asarray(x, dtype=float)
    if x.ndim == 1:
        x = x[None, :]
    if x.shape[1] < 4 or not np.all(np.isfinite(x)) or np.ptp(x) == 0:
        return math.nan
    s = _split(x)
    bulk = _rhat_basic(_z_scale(s))
    folded = np.abs(s - np.median(s))
    tail = _rhat_basic(_z_scale(folded)) if np.ptp(folded) > 0 else math.nan
    return float(np.nanmax([bulk, tail]))


def _ess_raw(x: np.ndarray) -> float:
    m, n = x.shape
    if n < 4:
        return math.nan
    xc = x - x.mean(axis=1, keepdims=True)
    size = 1 << (2 * n - 1).bit_length()
    f = np.fft.rfft(xc, size, axis=1)
    acov = np.fft.irfft(f * np.conjugate(f), size, axis=1)[:, :n] / n
    chain_var = acov[:, 0] * n / (n - 1.0)
    mean_var = chain_var.mean()
    var_plus = mean_var * (n - 1.0) / n
    if m > 1:
        var_plus += x.mean(axis=1).var(ddof=1)
    if var_plus <= 0:
        return math.nan
    rho = np.zeros(n)
    rho_even = 1.0
    rho[0] = rho_even
    rho_odd = 1.0 - (mean_var - acov[:, 1].mean()) / var_plus
    rho[1] = rho_odd
    t = 1
    while t < n - 3 and rho_even + rho_odd > 0.0:
        rho_even = 1.0 - (mean_var - acov[:, t + 1].mean()) / var_plus
        rho_odd = 1.0 - (mean_var - acov[:, t + 2].mean()) / var_plus
        if rho_even + rho_odd >= 0:
            rho[t + 1] = rho_even
            rho[t + 2] = rho_odd
        t += 2
    max_t = t - 2
    if rho_even > 0:
        rho[max_t + 1] = rho_even
    t = 1
    while t <= max_t - 2:
        if rho[t + 1] + rho[t + 2] > rho[t - 1] + rho[t]:
            rho[t + 1] = (rho[t - 1] + rho[t]) / 2.0
            rho[t + 2] = rho[t + 1]
        t += 2
    total = m * n
    tau = -1.0 + 2.0 * rho[: max_t + 1].sum() + rho[max_t + 1: max_t + 2].sum()
    tau = max(tau, 1.0 / math.log10(total))
    return float(total / tau)


def effective_sample_size(x: np.ndarray) -> float:
    """Rank-normalised bulk ESS (Vehtari et al. 2021) of draws shaped (chains, draws)."""
    x = np.asarray(x, dtype=float)
    if x.ndim == 1:
        x = x[None, :]
    if x.shape[1] < 8 or not np.all(np.isfinite(x)) or np.ptp(x) == 0:
        return math.nan
    return _ess_raw(_z_scale(_split(x)))


# ---------------------------------------------------------------------------- results
@dataclass(frozen=True, eq=False)
class HDPTrace:
    """Thinned traces of every chain (arrays read-only).

    Attributes
    ----------
    iterations : (n_trace,) int64
        1-based iteration of each trace point (every ``thin``-th, burn-in included).
    burn_in : int
    concentrations : (n_chains, n_trace, n_groups)
    log_joint : (n_chains, n_trace)
        log P(data, t, alpha) of the augmented model (eq-dm, root treatment included, up to the
        data's multinomial coefficient; the concentrations' Gamma prior when they are sampled).
    node_ids : (n_traced,) int64
    node_probabilities : (n_chains, n_trace, n_traced, K)
        Rao-Blackwellised estimates of the traced nodes at each trace point.
    """

    iterations: np.ndarray
    burn_in: int
    concentrations: np.ndarray
    log_joint: np.ndarray
    node_ids: np.ndarray
    node_probabilities: np.ndarray

    @property
    def kept(self) -> np.ndarray:
        """Boolean mask of the post-burn-in trace points."""
        return self.iterations > self.burn_in


@dataclass(frozen=True, eq=False)
class HDPResult:
    """HDP estimate of one context tree (all arrays are read-only copies).

    Attributes
    ----------
    tree : ContextTree
    options : HDPOptions
    probabilities : (n_nodes, K)
        Posterior mean of every node's probability vector (Rao-Blackwellised, averaged over the
        post-burn-in iterations of all chains).
    mcse : (n_nodes, K)
        Monte-Carlo standard error of ``probabilities`` by batch means pooled over chains.
    chain_probabilities : (n_chains, n_nodes, K)
    groups : (n_nodes,) int64
        Tying group of every node (``-1`` for the root).
    concentration_mean : (n_groups,)
        Posterior mean of each group's concentration (post-burn-in, all chains).
    trace : HDPTrace
    draws : (n_chains, n_draws, n_draw_nodes, K) or None
        Thinned posterior draws of the node probability vectors (``options.record_draws``).
    draw_node_ids : (n_draw_nodes,) int64 or None
    table_counts : (n_chains, n_nodes, K)
        Final table counts t of each chain.
    node_counts : (n_chains, n_nodes, K)
        Final n of each chain (data at the leaves, sums of children's t inside).
    seconds : float
        Wall time spent sampling this tree's chains (summed over chains).
    seed_entropy : int
        Entropy of the root ``SeedSequence`` (pass it as ``seed`` to reproduce the run).
    tree_index : int
        Position of the tree in the ``estimate_trees`` call (part of its random-stream key).
    """

    tree: ContextTree
    options: HDPOptions
    probabilities: np.ndarray
    mcse: np.ndarray
    chain_probabilities: np.ndarray
    groups: np.ndarray
    concentration_mean: np.ndarray
    trace: HDPTrace
    draws: np.ndarray | None
    draw_node_ids: np.ndarray | None
    table_counts: np.ndarray
    node_counts: np.ndarray
    seconds: float
    seed_entropy: int
    tree_index: int = 0
    group_names: tuple[str, ...] = field(default=())

    @property
    def n_groups(self) -> int:
        return int(self.concentration_mean.shape[0])

    def query(self, paths) -> np.ndarray:
        """Probability vectors for conditioning paths, backing off to the deepest existing node.

        ``paths`` has shape (m, depth) or (depth,); a negative value means unknown (the descent
        stops there). Returns a new (m, K) array.
        """
        nodes = self.tree.find(paths)
        return np.array(self.probabilities[nodes], copy=True)

    def diagnostics(self):
        """R-hat and bulk ESS of the concentrations and the log joint (post-burn-in trace).

        Returns a pandas DataFrame indexed by variable with columns mean, sd, rhat, ess_bulk.
        """
        import pandas as pd

        kept = self.trace.kept
        rows = {}
        series = {}
        if not self.options.fix_concentrations:
            for g in range(self.n_groups):
                series[f"alpha[{self.group_names[g]}]"] = self.trace.concentrations[:, kept, g]
        series["log_joint"] = self.trace.log_joint[:, kept]
        for name, x in series.items():
            rows[name] = {
                "mean": float(np.mean(x)) if x.size else math.nan,
                "sd": float(np.std(x, ddof=1)) if x.size > 1 else math.nan,
                "rhat": split_rhat(x),
                "ess_bulk": effective_sample_size(x),
            }
        return pd.DataFrame.from_dict(rows, orient="index")

    def to_arviz(self, value_labels: Sequence | None = None):
        """An ArviZ DataTree of the traces (arviz / arviz_base imported lazily).

        Groups: ``posterior`` (post-burn-in: ``concentration`` [group], ``log_joint``,
        ``node_probability`` [traced_node, value] when nodes were traced, ``phi`` [draw_node,
        value] when draws were recorded), ``warmup_posterior`` (burn-in trace points) and
        ``sample_stats`` (``lp`` = log joint).
        """
        try:
            from arviz_base import from_dict
        except ImportError:  # pragma: no cover - depends on the installed extra
            try:
                from arviz import from_dict
            except ImportError as exc:
                raise ImportError(
                    "to_arviz needs ArviZ 1.x: pip install 'hdpbn[ppl]' (or arviz)"
                ) from exc
        tr = self.trace
        kept = tr.kept
        K = self.tree.n_values
        values = list(value_labels) if value_labels is not None else list(range(K))
        coords = {
            "group": list(self.group_names),
            "value": values,
            "traced_node": [int(i) for i in tr.node_ids],
        }
        dims = {
            "concentration": ["group"],
            "node_probability": ["traced_node", "value"],
            "phi": ["draw_node", "value"],
        }

        def pick(mask):
            d = {"concentration": tr.concentrations[:, mask], "log_joint": tr.log_joint[:, mask]}
            if tr.node_ids.size:
                d["node_probability"] = tr.node_probabilities[:, mask]
            return d

        post = pick(kept)
        if self.draws is not None:
            post["phi"] = self.draws
            coords["draw_node"] = [int(i) for i in self.draw_node_ids]
        data = {"posterior": post, "sample_stats": {"lp": tr.log_joint[:, kept]}}
        save_warmup = bool((~kept).any())
        if save_warmup:
            data["warmup_posterior"] = pick(~kept)
        return from_dict(data, coords=coords, dims=dims, save_warmup=save_warmup)

    def __repr__(self) -> str:
        return (
            f"HDPResult({self.tree!r}, n_iter={self.options.n_iter}, "
            f"chains={self.options.n_chains}, seconds={self.seconds:.3f})"
        )


# ---------------------------------------------------------------------------- running
#: Largest n of the linear-space Stirling ratio tables (2 x 16.8 MB when full).
RATIO_N_MAX = 2047
_RATIOS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_RATIOS_LOCK = threading.Lock()
#: The table used when none is passed: shared by every call in the process, so that its rows
#: and ratio tables (up to 16.8 + 2 x 16.8 MB) are built once, not on every call (about 0.1 s
#: for counts in the thousands, most of a small tree's run).
_SHARED_STIRLING = LogStirlingTable()
_SHARED_STIRLING_LOCK = threading.Lock()


def _ratio_tables(table: LogStirlingTable, max_count: int) -> tuple[int, np.ndarray, np.ndarray]:
    """Stirling ratio tables up to ``min(RATIO_N_MAX, max_count - 1)``, cached per table.

    A cached table built for larger counts is returned with this call's ``nr``: the kernels
    choose between the ratio tables and log space by ``nr``, so a chain must not depend on what
    earlier calls needed (the rows themselves do not depend on the table's size).
    """
    nr = max(0, min(RATIO_N_MAX, max_count - 1))
    with _RATIOS_LOCK:
        have = _RATIOS.get(table)
        if have is not None and have[0] >= nr:
            return nr, have[1], have[2]
        size = (nr + 1) * (nr + 2) // 2
        r1 = np.zeros(size)
        r2 = np.zeros(size)
        table.ensure(nr + 1)
        _s.build_ratio_tables(nr, table.kernel_args, r1, r2)
        r1.flags.writeable = False
        r2.flags.writeable = False
        _RATIOS[table] = (nr, r1, r2)
        return nr, r1, r2


def _group_names(tree: ContextTree, tying: str, groups: np.ndarray) -> tuple[str, ...]:
    n_groups = int(groups.max()) + 1 if groups.size else 0
    if tying == "level":
        return tuple(f"depth{d + 1}" for d in range(n_groups))
    if tying == "single":
        return ("all",) * n_groups
    if tying == "none":
        return tuple(f"node{j}" for j in range(1, tree.n_nodes))
    # same-parent: named by the parent node
    names = [""] * n_groups
    for j in range(1, tree.n_nodes):
        names[groups[j]] = f"children_of{int(tree.parent[j])}"
    return tuple(names)


@dataclass
class _Prepared:
    index: int
    tree: ContextTree
    groups: np.ndarray
    group_names: tuple[str, ...]
    alpha_init: np.ndarray
    trace_ids: np.ndarray
    draw_ids: np.ndarray
    n_trace: int
    n_draws: int
    batch_size: int
    n_batches: int
    leaf_start: int
    pairs: tuple[np.ndarray, np.ndarray]


@dataclass
class _ChainOut:
    acc_sum: np.ndarray
    s1: np.ndarray
    s2: np.ndarray
    alpha_sum: np.ndarray
    conc_tr: np.ndarray
    lj_tr: np.ndarray
    node_tr: np.ndarray
    draws: np.ndarray
    t: np.ndarray
    n: np.ndarray
    seconds: float


def _prepare(index: int, tree: ContextTree, opt: HDPOptions) -> _Prepared:
    if not isinstance(tree, ContextTree):
        raise TypeError(f"expected a ContextTree, got {type(tree).__name__}")
    groups = tying_groups(tree, opt.tying)
    n_groups = int(groups.max()) + 1 if tree.n_nodes > 1 else 0
    init = opt.concentration_init
    if isinstance(init, tuple):
        if len(init) == 1:
            alpha_init = np.full(n_groups, init[0])
        elif len(init) != n_groups:
            raise ValueError(
                f"concentration_init has {len(init)} values but tying {opt.tying!r} gives "
                f"{n_groups} groups for this tree"
            )
        else:
            alpha_init = np.array(init, dtype=float)
    else:
        alpha_init = np.full(n_groups, float(init))
    for name, ids in (("trace_nodes", opt.trace_nodes),
                      ("record_draws", opt.record_draws if isinstance(opt.record_draws, tuple)
                       else ())):
        bad = [i for i in ids if i >= tree.n_nodes]
        if bad:
            raise ValueError(f"{name} has node ids beyond the tree's {tree.n_nodes} nodes: {bad}")
    trace_ids = np.asarray(opt.trace_nodes, dtype=np.int64)
    if opt.record_draws is True:
        draw_ids = np.arange(tree.n_nodes, dtype=np.int64)
    elif opt.record_draws is False:
        draw_ids = np.zeros(0, dtype=np.int64)
    else:
        draw_ids = np.asarray(opt.record_draws, dtype=np.int64)
    burn = opt.burn_in_iterations
    n_keep = opt.n_iter - burn
    n_batches = min(opt.n_batches, n_keep)
    batch_size = max(1, n_keep // max(n_batches, 1))
    n_trace = opt.n_iter // opt.thin
    n_draws = n_trace - burn // opt.thin if draw_ids.size else 0
    # (node, value) pairs whose table count may need sampling (subtree count >= 2), in sweep
    # order: nodes deepest first (descending index), values ascending
    sub = tree.counts[1:][::-1]
    jj, kk = np.nonzero(sub >= 2)
    pairs = (np.ascontiguousarray(tree.n_nodes - 1 - jj, dtype=np.int64),
             np.ascontiguousarray(kk, dtype=np.int64))
    return _Prepared(
        index=index,
        tree=tree,
        groups=groups,
        group_names=_group_names(tree, opt.tying, groups),
        alpha_init=alpha_init,
        trace_ids=trace_ids,
        draw_ids=draw_ids,
        n_trace=n_trace,
        n_draws=n_draws,
        batch_size=batch_size,
        n_batches=n_batches,
        leaf_start=int(tree.level_offsets[-2]),
        pairs=pairs,
    )


def _seed_state(entropy: int, key: tuple[int, ...]) -> np.ndarray:
    st = np.random.SeedSequence(entropy, spawn_key=key).generate_state(4, np.uint64)
    if not st.any():  # xoshiro's forbidden all-zero state
        st[0] = np.uint64(0x9E3779B97F4A7C15)
    return st


def _ipar_fpar(opt: HDPOptions, prep: _Prepared) -> tuple[np.ndarray, np.ndarray]:
    ipar = np.zeros(_s.IPAR_SIZE, dtype=np.int64)
    ipar[_s.I_N_ITER] = opt.n_iter
    ipar[_s.I_BURN_IN] = opt.burn_in_iterations
    ipar[_s.I_UPDATE] = _s.UPDATE_EXACT if opt.update == "exact" else _s.UPDATE_WINDOW
    ipar[_s.I_ROOT] = _s.ROOT_EXACT if opt.root == "exact" else _s.ROOT_REFERENCE
    ipar[_s.I_CONC_EVERY] = opt.concentration_every
    ipar[_s.I_WINDOW] = opt.window
    ipar[_s.I_FIX_CONC] = int(opt.fix_concentrations)
    ipar[_s.I_THIN] = opt.thin
    ipar[_s.I_BATCH_SIZE] = prep.batch_size
    ipar[_s.I_N_BATCHES] = prep.n_batches
    fpar = np.zeros(_s.FPAR_SIZE, dtype=np.float64)
    fpar[_s.F_SHAPE] = opt.concentration_shape
    fpar[_s.F_RATE] = opt.concentration_rate
    fpar[_s.F_CAP] = opt.concentration_max
    if opt.overrelax:
        fpar[_s.F_OVERRELAX_TABLES] = _s.OVERRELAX_TABLES
        fpar[_s.F_OVERRELAX_CONC] = _s.OVERRELAX_CONC
    fpar[_s.F_ALPHA0] = opt.alpha0
    return ipar, fpar


def _run_chain(
    prep: _Prepared,
    chain: int,
    opt: HDPOptions,
    entropy: int,
    stir: tuple,
    ratios: tuple[int, np.ndarray, np.ndarray],
    chunk: int,
    on_chunk: Callable[[int], None] | None,
) -> _ChainOut:
    tree = prep.tree
    nn, K = tree.n_nodes, tree.n_values
    G = prep.alpha_init.shape[0]
    ipar, fpar = _ipar_fpar(opt, prep)
    rng = _seed_state(entropy, (prep.index, chain, 0))
    rng_draw = _seed_state(entropy, (prep.index, chain, 1))
    n = np.zeros((nn, K), dtype=np.int64)
    t = np.zeros((nn, K), dtype=np.int64)
    N = np.zeros(nn, dtype=np.int64)
    T = np.zeros(nn, dtype=np.int64)
    alpha = prep.alpha_init.copy()
    parent = np.ascontiguousarray(tree.parent)
    groups = prep.groups
    start = time.perf_counter()
    _s.init_state(parent, prep.leaf_start, tree.counts, groups, alpha, int(ipar[_s.I_ROOT]),
                  n, t, N, T)
    buf = np.empty(2 * opt.window + 1, dtype=np.float64)
    phat = np.zeros((nn, K))
    acc_sum = np.zeros((nn, K))
    acc_batch = np.zeros((nn, K))
    s1 = np.zeros((nn, K))
    s2 = np.zeros((nn, K))
    alpha_sum = np.zeros(G)
    sh = np.zeros(G)
    rt = np.zeros(G)
    conc_tr = np.zeros((prep.n_trace, G))
    lj_tr = np.zeros(prep.n_trace)
    node_tr = np.zeros((prep.n_trace, prep.trace_ids.size, K))
    draws = np.zeros((prep.n_draws, prep.draw_ids.size, K))
    phi = np.zeros((nn, K))
    conc = np.zeros(K)
    nr, r1, r2 = ratios
    # band caches of log S(n, .) for leaf values whose fixed count is beyond the ratio tables
    band_slot = np.full((nn, K), -1, dtype=np.int64)
    leaf_counts = tree.counts[prep.leaf_start:]
    big = np.argwhere(leaf_counts > nr)
    band_slot[big[:, 0] + prep.leaf_start, big[:, 1]] = np.arange(big.shape[0])
    band_b0 = np.zeros(big.shape[0], dtype=np.int64)
    band_vals = np.zeros((big.shape[0], _s.BAND))
    it = 1
    pair_node, pair_value = prep.pairs
    while it <= opt.n_iter:
        stop = min(opt.n_iter + 1, it + chunk)
        _s.run_iterations(
            it, stop, ipar, fpar, parent, groups, pair_node, pair_value, n, t, N, T, alpha, stir,
            r1, r2, nr,
            band_slot, band_b0, band_vals, rng, buf, phat,
            acc_sum, acc_batch, s1, s2, alpha_sum, sh, rt, conc_tr, lj_tr, prep.trace_ids,
            node_tr, prep.draw_ids, draws, phi, conc, rng_draw,
        )
        if on_chunk is not None:
            on_chunk(stop - it)
        it = stop
    seconds = time.perf_counter() - start
    return _ChainOut(acc_sum, s1, s2, alpha_sum, conc_tr, lj_tr, node_tr, draws, t, n, seconds)


def _assemble(prep: _Prepared, opt: HDPOptions, outs: list[_ChainOut], entropy: int) -> HDPResult:
    burn = opt.burn_in_iterations
    n_keep = opt.n_iter - burn
    C = len(outs)
    chain_p = np.stack([o.acc_sum / n_keep for o in outs])
    probs = chain_p.mean(axis=0)
    m = C * prep.n_batches
    s1 = np.sum([o.s1 for o in outs], axis=0)
    s2 = np.sum([o.s2 for o in outs], axis=0)
    var = np.maximum(s2 - s1 * s1 / m, 0.0) / max(m - 1, 1)
    mcse = np.sqrt(var / m)
    conc_mean = np.mean([o.alpha_sum / n_keep for o in outs], axis=0) if outs else np.zeros(0)
    iters = (np.arange(prep.n_trace, dtype=np.int64) + 1) * opt.thin
    trace = HDPTrace(
        iterations=_readonly(iters),
        burn_in=burn,
        concentrations=_readonly(np.stack([o.conc_tr for o in outs])),
        log_joint=_readonly(np.stack([o.lj_tr for o in outs])),
        node_ids=_readonly(prep.trace_ids),
        node_probabilities=_readonly(np.stack([o.node_tr for o in outs])),
    )
    has_draws = prep.draw_ids.size > 0
    return HDPResult(
        tree=prep.tree,
        options=opt,
        probabilities=_readonly(probs),
        mcse=_readonly(mcse),
        chain_probabilities=_readonly(chain_p),
        groups=_readonly(prep.groups),
        concentration_mean=_readonly(conc_mean),
        trace=trace,
        draws=_readonly(np.stack([o.draws for o in outs])) if has_draws else None,
        draw_node_ids=_readonly(prep.draw_ids) if has_draws else None,
        table_counts=_readonly(np.stack([o.t for o in outs])),
        node_counts=_readonly(np.stack([o.n for o in outs])),
        seconds=float(sum(o.seconds for o in outs)),
        seed_entropy=int(entropy),
        tree_index=prep.index,
        group_names=prep.group_names,
    )


class _Cancelled(Exception):
    """Raised inside workers when the caller gave up (e.g. on KeyboardInterrupt)."""


def _chunk(prep: _Prepared, opt: HDPOptions) -> int:
    """Iterations per kernel call: about 2e5 (node, value) updates, at least 250 iterations, so
    progress can be reported and a run interrupted between calls at negligible cost."""
    work = prep.pairs[0].size + prep.tree.n_nodes
    return int(min(opt.n_iter, max(250, 200_000 // max(work, 1))))


def _entropy(seed) -> int:
    if isinstance(seed, np.random.SeedSequence):
        ent = seed.entropy
    else:
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, numbers.Integral)
                                 or seed < 0):
            raise ValueError(f"seed must be a non-negative integer or None, got {seed!r}")
        ent = np.random.SeedSequence(seed).entropy
    if not isinstance(ent, numbers.Integral):
        raise ValueError("seed must carry integer entropy")
    return int(ent)


def estimate_trees(
    trees: Sequence[ContextTree],
    options: HDPOptions | None = None,
    *,
    seed=None,
    n_threads: int | None = None,
    stirling: LogStirlingTable | None = None,
    progress: Callable[[int, int], None] | None = None,
    **overrides,
) -> list[HDPResult]:
    """HDP estimates of many context trees, trees x chains sampled in parallel threads.

    Parameters
    ----------
    trees : sequence of ContextTree
    options : HDPOptions, optional
        Defaults to ``HDPOptions()``; keyword ``overrides`` replace individual fields.
    seed : int, SeedSequence or None
        Chain ``c`` of tree ``i`` draws from ``SeedSequence(entropy, spawn_key=(i, c, 0))``
        (its posterior draws from ``(i, c, 1)``), so results are bit-identical for the same seed
        whatever ``n_threads`` is. ``None`` takes fresh entropy (kept in ``seed_entropy``).
    n_threads : int, optional
        Worker threads (the kernels release the GIL). Default: ``os.cpu_count()``.
    stirling : LogStirlingTable, optional
        Table of log Stirling numbers, grown here to the largest count needed. Default: one
        table shared by all calls in this process (built once, kept for the process).
    progress : callable(done, total), optional
        Called with iterations done (summed over chains and trees) as sampling proceeds.
    """
    opt = options if options is not None else HDPOptions()
    if overrides:
        opt = opt.replace(**overrides)
    trees = list(trees)
    if n_threads is not None:
        n_threads = _check_int("n_threads", n_threads, 1)
    else:
        n_threads = os.cpu_count() or 1
    entropy = _entropy(seed)
    preps = [_prepare(i, tr, opt) for i, tr in enumerate(trees)]
    # Every n the sampler can reach is bounded by its node's subtree count (t <= n below it).
    max_count = max((int(tr.counts.max()) if tr.counts.size else 0 for tr in trees), default=0)
    table = stirling if stirling is not None else _SHARED_STIRLING
    # calls from several threads grow the shared table one at a time
    with _SHARED_STIRLING_LOCK if stirling is None else contextlib.nullcontext():
        table.ensure(max_count)
        ratios = _ratio_tables(table, max_count)
        stir = table.kernel_args

    total = len(trees) * opt.n_chains * opt.n_iter
    lock = threading.Lock()
    cancel = threading.Event()
    done = [0]

    def on_chunk(k: int) -> None:
        if cancel.is_set():
            raise _Cancelled
        if progress is not None:
            with lock:
                done[0] += k
                progress(done[0], total)

    # largest trees first for load balance; results keyed by (tree, chain)
    tasks = sorted(
        ((p, c) for p in preps for c in range(opt.n_chains)),
        key=lambda pc: -(pc[0].tree.n_nodes * pc[0].tree.n_values),
    )
    outs: dict[tuple[int, int], _ChainOut] = {}
    if n_threads == 1 or len(tasks) <= 1:
        for p, c in tasks:
            outs[(p.index, c)] = _run_chain(p, c, opt, entropy, stir, ratios,
                                            _chunk(p, opt), on_chunk)
    else:
        ex = ThreadPoolExecutor(max_workers=min(n_threads, len(tasks)))
        try:
            futs = {
                (p.index, c): ex.submit(
                    _run_chain, p, c, opt, entropy, stir, ratios, _chunk(p, opt), on_chunk
                )
                for p, c in tasks
            }
            for key, f in futs.items():
                outs[key] = f.result()
        except BaseException:  # e.g. KeyboardInterrupt: stop the workers at their next chunk
            cancel.set()
            ex.shutdown(wait=True, cancel_futures=True)
            raise
        ex.shutdown(wait=True)
    return [
        _assemble(p, opt, [outs[(p.index, c)] for c in range(opt.n_chains)], entropy)
        for p in preps
    ]


def estimate_tree(
    tree: ContextTree,
    options: HDPOptions | None = None,
    *,
    seed=None,
    n_threads: int | None = None,
    stirling: LogStirlingTable | None = None,
    progress: Callable[[int, int], None] | None = None,
    **overrides,
) -> HDPResult:
    """HDP estimate of one context tree (chains in parallel threads); see :func:`estimate_trees`."""
    return estimate_trees(
        [tree], options, seed=seed, n_threads=n_threads, stirling=stirling, progress=progress,
        **overrides,
    )[0]
