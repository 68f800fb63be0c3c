"""HDP estimates of conditional probability tables: the Python API of the collapsed Gibbs sampler.

The model and the sampler are the paper's (section 4, Algorithms 1-5); the kernels live in
:mod:`fastpath.estimate.hdp._kernels`. Typical use::

    from fastpath.estimate.hdp import HDPOptions, estimate_tree
    res = estimate_tree(tree, HDPOptions(n_iter=5000, n_chains=2), seed=1)
    res.probabilities          # (n_nodes, K) posterior means, read-only
    res.query([[0, 3, 1]])     # deepest existing node along each path (back-off)
    res.diagnostics()          # R-hat / ESS of the concentrations and the log joint
    res.to_arviz()             # an ArviZ DataTree (arviz imported lazily)

:func:`estimate_trees` samples many trees (sharing one Stirling table) and their chains in
parallel threads; every (tree, chain) pair owns a random stream derived from the seed, so results
are bit-identical whatever the number of threads. With ``n_iter="auto"`` (the classifiers'
default preset, ``HDPOptions.preset("adaptive")``) a tree's chains run in blocks and meet at each
block's end, where
the stopping rule of :mod:`fastpath.estimate.hdp._stopping` decides from them alone whether the
tree is done (``res.n_iterations``, ``res.stop_reason``).
"""

from __future__ import annotations

import contextlib
import functools
import numbers
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ...counts._context_tree import ContextTree, tying_groups
from ...utils._seeds import seed_states
from ...utils._threads import numba_threads
from ...utils._validation import check_int
from .._convergence import ESS_PER_CHAIN_MIN
from . import _kernels as _s
from ._options import HDPOptions
from ._results import HDPResult, HDPTrace
from ._stirling import LogStirlingTable
from ._stopping import StopCheck, batch_means_mcse, check_stop, next_length, rows_mcse

# ---------------------------------------------------------------------------- running
#: Largest n of the linear-space Stirling ratio tables (2 x 16.8 MB when full).
RATIO_N_MAX = 2047
_RATIOS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_RATIOS_LOCK = threading.Lock()
#: The table used when none is passed: shared by every call in the process, so that its rows
#: and ratio tables (up to 16.8 + 2 x 16.8 MB) are built once, not on every call (building them
#: is most of a small tree's run: docs/sampler.md, "Implementation").
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


@functools.cache
def _level_names(n_groups: int) -> tuple[str, ...]:
    return tuple(f"depth{d + 1}" for d in range(n_groups))


def _group_names(tree: ContextTree, tying: str, groups: np.ndarray) -> tuple[str, ...]:
    n_groups = int(groups.max()) + 1 if groups.size else 0
    if tying == "level":
        return _level_names(n_groups)
    if tying == "single":
        return ("all",) * n_groups
    if tying == "none":
        return tuple(f"node{j}" for j in range(1, tree.n_nodes))
    # same-parent: named by the parent node
    names = [""] * n_groups
    for j in range(1, tree.n_nodes):
        names[groups[j]] = f"children_of{int(tree.parent[j])}"
    return tuple(names)


class _Layout(NamedTuple):
    """What every tree of one :func:`estimate_trees` call shares: the options' derived lengths
    (properties of :class:`HDPOptions`, computed once rather than at every use) and the
    read-only id arrays the trees' records point at."""

    burn: int
    thin: int
    n_max: int
    n_batches: int
    batch_size: int
    n_trace: int
    trace_ids: np.ndarray
    draw_ids: np.ndarray | None  # None: every node (record_draws=True), per tree


def _layout(opt: HDPOptions) -> _Layout:
    # adaptive: batches of a fixed size, as many as the longest run holds; the MCSE at a block
    # boundary uses the batches closed so far
    n_batches, batch_size = opt.batch_layout
    if opt.record_draws is True:
        draw_ids = None
    else:
        draw_ids = _frozen(np.asarray(opt.record_draws or (), dtype=np.int64))
    return _Layout(burn=opt.burn_in_iterations, thin=opt.thin, n_max=opt.iterations_max,
                   n_batches=n_batches, batch_size=batch_size,
                   n_trace=opt.iterations_max // opt.thin,
                   trace_ids=_frozen(np.asarray(opt.trace_nodes, dtype=np.int64)),
                   draw_ids=draw_ids)


def _frozen(a: np.ndarray) -> np.ndarray:
    """``a`` itself, made read-only: for arrays created here and owned by one record (a
    read-only copy of a fresh array would only copy it again)."""
    a.flags.writeable = False
    return a


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
    layout: _Layout


@dataclass
class _Chain:
    """One chain between kernel calls: its records and the next iteration to run (1-based)."""

    state: _s.ChainState
    accum: _s.Accumulators
    traces: _s.Traces
    scratch: _s.Scratch
    it: int = 1
    seconds: float = 0.0


def _prepare(index: int, tree: ContextTree, opt: HDPOptions, layout: _Layout | None = None
             ) -> _Prepared:
    """The fixed part of tree ``index``'s run; ``layout``: :func:`_layout` of ``opt``, when
    the caller prepares many trees."""
    if not isinstance(tree, ContextTree):
        raise TypeError(f"expected a ContextTree, got {type(tree).__name__}")
    layout = _layout(opt) if layout is None else layout
    groups = _frozen(tying_groups(tree, opt.tying))
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
    draw_ids = layout.draw_ids
    if draw_ids is None:  # record_draws=True: every node of this tree
        draw_ids = _frozen(np.arange(tree.n_nodes, dtype=np.int64))
    n_draws = layout.n_trace - layout.burn // layout.thin if draw_ids.size else 0
    return _Prepared(
        index=index,
        tree=tree,
        groups=groups,
        group_names=_group_names(tree, opt.tying, groups),
        alpha_init=alpha_init,
        trace_ids=layout.trace_ids,
        draw_ids=draw_ids,
        n_trace=layout.n_trace,
        n_draws=n_draws,
        batch_size=layout.batch_size,
        n_batches=layout.n_batches,
        leaf_start=int(tree.level_offsets[-2]),
        layout=layout,
    )


def _seed_states(entropy: int, n_trees: int, n_chains: int) -> np.ndarray:
    """Every stream's xoshiro256** state, shape (n_trees, n_chains, 2, 4): chain ``c`` of tree
    ``i`` samples from ``SeedSequence(entropy, spawn_key=(i, c, 0))`` and draws its posterior
    draws from ``(i, c, 1)`` (one compiled call for all: :func:`~fastpath.utils._seeds.
    seed_states`, numpy's states word for word)."""
    keys = np.stack(np.meshgrid(np.arange(n_trees), np.arange(n_chains), np.arange(2),
                                indexing="ij"), axis=-1).reshape(-1, 3)
    states = seed_states(entropy, keys).reshape(n_trees, n_chains, 2, 4)
    zero = ~states.any(axis=-1)  # xoshiro's forbidden all-zero state
    states[zero, 0] = np.uint64(0x9E3779B97F4A7C15)
    return states


def _config(opt: HDPOptions, prep: _Prepared | _Layout) -> _s.SamplerConfig:
    """The kernels' options record; every field converted to its Python type, since numba
    compiles (and caches) one specialisation per combination of field types."""
    return _s.SamplerConfig(
        n_iter=int(opt.iterations_max),
        burn_in=int(opt.burn_in_iterations),
        update=_s.UPDATE_EXACT if opt.update == "exact" else _s.UPDATE_WINDOW,
        root=_s.ROOT_EXACT if opt.root == "exact" else _s.ROOT_REFERENCE,
        conc_every=int(opt.concentration_every),
        window=int(opt.window),
        fix_conc=bool(opt.fix_concentrations),
        thin=int(opt.thin),
        batch_size=int(prep.batch_size),
        n_batches=int(prep.n_batches),
        alpha0=float(opt.alpha0),
        shape0=float(opt.concentration_shape),
        rate0=float(opt.concentration_rate),
        cap=float(opt.concentration_max),
        reflect=float(_s.OVERRELAX_TABLES) if opt.overrelax else 0.0,
        adler=float(_s.OVERRELAX_CONC) if opt.overrelax else 0.0,
        beta_uniforms=opt.concentration_draws == "uniforms",
    )


def _fixed(a: np.ndarray) -> np.ndarray:
    """``a`` as a C-contiguous int64 read-only array (a view, or a copy only when needed).

    numba types an array by its dtype, layout and writeable flag; pinning all three keeps the
    record's type, and so the compiled kernels, independent of where the array came from.
    """
    if a.dtype == np.int64 and a.flags.c_contiguous and not a.flags.writeable:
        return a
    out = np.ascontiguousarray(a, dtype=np.int64).view()
    out.flags.writeable = False
    return out


def _tree_model(prep: _Prepared, stir: tuple, ratios: tuple[int, np.ndarray, np.ndarray]
                ) -> _s.TreeModel:
    """The kernels' record of what stays fixed during the chains of ``prep``'s tree (built once
    per tree and shared read-only by its chains): :func:`~fastpath.estimate.hdp._kernels.
    tree_model` of its read-only arrays."""
    nr, r1, r2 = ratios
    return _s.tree_model(_fixed(prep.tree.parent), _fixed(prep.groups), int(prep.leaf_start),
                         _fixed(prep.tree.counts), stir, r1, r2, int(nr))


def _init_chain(
    prep: _Prepared, model: _s.TreeModel, cfg: _s.SamplerConfig, seeds: np.ndarray,
    it_stop: int = 1,
) -> tuple[_s.ChainState, _s.Accumulators, _s.Traces, _s.Scratch]:
    """A chain's records: its state initialised (Algorithm 2), zeroed sums, traces and buffers,
    run up to (not including) iteration ``it_stop`` (:func:`~fastpath.estimate.hdp._kernels.
    new_chain`, then :func:`~fastpath.estimate.hdp._kernels.run_iterations`: two calls, so that
    the iterations compile once).

    ``seeds``: the chain's two stream states (:func:`_seed_states`), its sampler's and its
    posterior draws'.
    """
    records = _s.new_chain(model, cfg, prep.alpha_init, seeds, prep.trace_ids, prep.draw_ids,
                           int(prep.n_draws))
    if it_stop > 1:
        _s.run_iterations(1, int(it_stop), model, cfg, *records)
    return records


def _advance(
    chain: _Chain, stop: int, model: _s.TreeModel, cfg: _s.SamplerConfig, chunk: int,
    on_chunk: Callable[[int], None] | None,
) -> None:
    """Run ``chain`` up to (not including) iteration ``stop`` in calls of ``chunk`` iterations
    (``on_chunk`` is told the iterations done after each call, and may raise to stop)."""
    start = time.perf_counter()
    while chain.it < stop:
        nxt = min(stop, chain.it + chunk)
        _s.run_iterations(chain.it, nxt, model, cfg, chain.state, chain.accum, chain.traces,
                          chain.scratch)
        if on_chunk is not None:
            on_chunk(nxt - chain.it)
        chain.it = nxt
    chain.seconds += time.perf_counter() - start


def _closed_batches(prep: _Prepared, opt: HDPOptions, n_run: int) -> int:
    """Batches of the batch means closed after ``n_run`` iterations (per chain)."""
    return min(prep.n_batches, max(0, n_run - prep.layout.burn) // prep.batch_size)


def _kept_trace(prep: _Prepared, opt: HDPOptions, chains: list[_Chain], n_run: int
                ) -> tuple[np.ndarray, np.ndarray]:
    """Post-burn-in trace points of ``n_run`` iterations: concentrations (C, draws, G) and
    log joint (C, draws)."""
    rows = n_run // prep.layout.thin
    first = prep.layout.burn // prep.layout.thin  # trace point r is iteration (r + 1) * thin
    conc = np.stack([ch.traces.conc_tr[first:rows] for ch in chains])
    lj = np.stack([ch.traces.lj_tr[first:rows] for ch in chains])
    return conc, lj


def _chain_sum(arrays: list[np.ndarray]) -> np.ndarray:
    """The chains' arrays summed, in chain order (one chain: its array itself, not a copy)."""
    return arrays[0] if len(arrays) == 1 else np.sum(arrays, axis=0)


def _chain_mean(stacked: np.ndarray) -> np.ndarray:
    """``stacked.mean(axis=0)``; of one chain, a copy of it (the same numbers: a sum of one
    term divided by 1), without the reduction's overhead."""
    return stacked[0].copy() if stacked.shape[0] == 1 else stacked.mean(axis=0)


def _stacked(arrays: list[np.ndarray]) -> np.ndarray:
    """The chains' arrays stacked into one new read-only array (copied once)."""
    out = arrays[0][None].copy() if len(arrays) == 1 else np.stack(arrays)
    out.flags.writeable = False
    return out


def _node_mcse(prep: _Prepared, opt: HDPOptions, chains: list[_Chain], n_run: int
               ) -> np.ndarray:
    """Every node's batch-means MCSE, the chains' batches pooled, after ``n_run``
    iterations."""
    return batch_means_mcse(_chain_sum([ch.accum.bm_s1 for ch in chains]),
                            _chain_sum([ch.accum.bm_s2 for ch in chains]),
                            len(chains) * _closed_batches(prep, opt, n_run))


def _rows_rule(rows_value: float, opt: HDPOptions, n_chains: int) -> StopCheck:
    """The stopping rule when it reads the rows' MCSE alone (no convergence checks): no trace
    to judge."""
    return check_stop(np.array([rows_value]), np.zeros((n_chains, 0, 0)),
                      np.zeros((n_chains, 0)), tolerance=opt.mcse_tolerance)


def _check(prep: _Prepared, opt: HDPOptions, chains: list[_Chain], n_run: int
           ) -> tuple[StopCheck, np.ndarray]:
    """The stopping rule (:func:`check_stop`) on a tree whose chains all ran ``n_run``
    iterations, and the nodes' MCSEs it read (:func:`_node_mcse`, for the result)."""
    node_mcse = mcse = _node_mcse(prep, opt, chains, n_run)
    n_kept = max(0, n_run - prep.layout.burn)
    if opt.mcse_weighting == "rows":  # RMS over the training rows of what each reads
        chain_p = (np.stack([(ch.accum.acc_sum + ch.accum.acc_batch) / n_kept for ch in chains])
                   if len(chains) >= 2 and n_kept > 0 else None)
        value = rows_mcse(prep.tree, mcse, chain_p)
        if not opt.convergence_checks:
            return _rows_rule(value, opt, len(chains)), node_mcse
        mcse = np.array([value])
    rows = None
    if opt.convergence_checks:  # the strict rule: the chains' state and rows' R-hat too
        conc, lj = _kept_trace(prep, opt, chains, n_run)
        if opt.fix_concentrations:
            conc = conc[:, :, :0]
        rows = np.stack([ch.traces.rows_tr[:n_kept] for ch in chains])
    else:  # what predictions read alone decides: no trace to judge
        conc, lj = np.zeros((len(chains), 0, 0)), np.zeros((len(chains), 0))
    return (check_stop(mcse, conc, lj, tolerance=opt.mcse_tolerance, rows_probability=rows),
            node_mcse)


def _assemble(prep: _Prepared, opt: HDPOptions, chains: list[_Chain], entropy: int,
              stop_reason: str, stop_check: StopCheck | None,
              node_mcse: np.ndarray | None = None) -> HDPResult:
    """The tree's result from its chains: every array a read-only copy (or a read-only array
    of ``prep``), so that the chains' working arrays can be released. ``node_mcse``: the
    nodes' MCSEs when the stopping rule has just computed them (:func:`_check`)."""
    layout = prep.layout
    n_run = chains[0].it - 1
    burn = layout.burn
    n_keep = n_run - burn
    for ch in chains:
        # an adaptive run stopped before the kernel's last iteration: close its open batch
        # into the sum (the kernel does so itself at the last iteration)
        if n_run < layout.n_max:
            ch.accum.acc_sum[...] += ch.accum.acc_batch
            ch.accum.acc_batch[:] = 0.0
    chain_p = _frozen(np.stack([ch.accum.acc_sum for ch in chains]) / n_keep)
    # one chain: its probabilities are the mean, kept once (a view; the same numbers)
    probs = chain_p[0] if len(chains) == 1 else _frozen(chain_p.mean(axis=0))
    mcse = _node_mcse(prep, opt, chains, n_run) if node_mcse is None else node_mcse
    if not np.isfinite(mcse).all():  # fewer than two batches: no estimate
        mcse = np.full(probs.shape, np.nan)
    conc_mean = _chain_mean(np.stack([ch.accum.alpha_sum / n_keep for ch in chains]))
    rows = n_run // layout.thin
    trace = HDPTrace(
        iterations=_trace_iterations(rows, layout.thin),
        burn_in=burn,
        concentrations=_stacked([ch.traces.conc_tr[:rows] for ch in chains]),
        log_joint=_stacked([ch.traces.lj_tr[:rows] for ch in chains]),
        node_ids=prep.trace_ids,  # read-only, shared by the call's trees
        node_probabilities=_stacked([ch.traces.node_tr[:rows] for ch in chains]),
        rows_probability=_stacked([ch.traces.rows_tr[:n_keep] for ch in chains]),
    )
    has_draws = prep.draw_ids.size > 0
    n_draws = rows - burn // layout.thin
    return HDPResult(
        tree=prep.tree,
        options=opt,
        probabilities=probs,
        mcse=_frozen(mcse),
        chain_probabilities=chain_p,
        groups=prep.groups,  # read-only, made for this tree
        concentration_mean=_frozen(conc_mean),
        trace=trace,
        draws=(_stacked([ch.traces.draws[:n_draws] for ch in chains]) if has_draws else None),
        draw_node_ids=prep.draw_ids if has_draws else None,
        table_counts=_stacked([ch.state.t for ch in chains]),
        node_counts=_stacked([ch.state.n for ch in chains]),
        seconds=float(sum(ch.seconds for ch in chains)),
        seed_entropy=int(entropy),
        tree_index=prep.index,
        group_names=prep.group_names,
        n_iterations=int(n_run),
        stop_reason=stop_reason,
        stop_check=stop_check,
    )


@functools.lru_cache(maxsize=256)
def _trace_iterations(n_points: int, thin: int) -> np.ndarray:
    """The iterations of ``n_points`` trace points (read-only, shared by the results; a few
    (length, thinning) pairs recur in a fit, so a bounded cache holds them)."""
    return _frozen((np.arange(n_points, dtype=np.int64) + 1) * thin)


class _Cancelled(Exception):
    """Raised inside workers when the caller gave up (e.g. on KeyboardInterrupt)."""


def _chunk(model: _s.TreeModel, opt: HDPOptions) -> int:
    """Iterations per kernel call: about 2e5 (node, value) updates, at least 250 iterations, so
    progress can be reported and a run interrupted between calls at negligible cost."""
    work = model.pair_node.size + model.parent.size
    return int(min(opt.iterations_max, max(250, 200_000 // max(work, 1))))


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


class _Scheduler:
    """One :func:`estimate_trees` call's run: a queue of (tree, chain, block) tasks.

    The state, all of it here: ``preps`` (every tree's prepared part, made, and the options
    checked against the trees, before any chain runs), ``models`` (each running tree's
    kernel record, built when its first block is queued, dropped when it is done),
    ``chains`` (each running chain between blocks), ``arrived`` (how many of a tree's chains
    have finished the current block), ``results``, and the progress counters
    ``done``/``total``/``trees_done`` (guarded by ``lock``: workers report their chunks); and,
    fixed for the run, the kernels' ``config``, the chains' ``seeds``, the Stirling tables
    (``stir``, ``ratios``), ``iterations_max`` and ``first_stop`` (where the stopping rule
    first looks), and ``cancel`` (set when a task fails).
    Tasks run :meth:`step` (in a worker, or in the calling thread with one thread); the
    calling thread alone runs :meth:`block_done`, where a tree's chains meet, the stopping
    rule decides and a finished tree's result is assembled.
    """

    def __init__(self, trees: list[ContextTree], opt: HDPOptions, layout: _Layout, entropy: int,
                 stirling: LogStirlingTable | None,
                 progress: Callable[[int, int], None] | None, by_tree: bool) -> None:
        self.trees, self.opt, self.layout, self.entropy = trees, opt, layout, entropy
        # every tree prepared (and its options checked against it) before any chain runs
        self.preps = [_prepare(i, tr, opt, layout) for i, tr in enumerate(trees)]
        # Every n the sampler can reach is bounded by its node's subtree count (t <= n below it).
        max_count = max((int(tr.counts.max()) if tr.counts.size else 0 for tr in trees),
                        default=0)
        table = stirling if stirling is not None else _SHARED_STIRLING
        # calls from several threads grow the shared table one at a time
        with _SHARED_STIRLING_LOCK if stirling is None else contextlib.nullcontext():
            table.ensure(max_count)
            self.ratios = _ratio_tables(table, max_count)
            self.stir = table.kernel_args
        self.config = _config(opt, layout)  # the same for every tree: it holds the options
        self.seeds = _seed_states(entropy, len(trees), opt.n_chains)
        self.models: dict[int, _s.TreeModel] = {}
        self.chains: dict[tuple[int, int], _Chain] = {}
        self.arrived = dict.fromkeys(range(len(trees)), 0)
        self.results: dict[int, HDPResult] = {}
        self.iterations_max = opt.iterations_max
        # a fixed length is one block per chain; an adaptive one starts with min_iter
        most = self.iterations_max
        self.first_stop = min(opt.min_iter, most) if opt.adaptive else most
        self.progress, self.by_tree = progress, by_tree
        # iterations run, and the most they can come to (less what trees stopped early left)
        self.done, self.total, self.trees_done = 0, len(trees) * opt.n_chains * most, 0
        self.lock = threading.Lock()
        self.cancel = threading.Event()
        if progress is not None and trees:  # the bar starts now, so its first rate is true
            progress(0, len(trees) if by_tree else self.total)

    def order(self) -> list[int]:
        """The trees, largest first (for load balance)."""
        return sorted(range(len(self.trees)),
                      key=lambda i: -(self.trees[i].n_nodes * self.trees[i].n_values))

    def on_chunk(self, k: int, unrun: int = 0) -> None:
        """``k`` more iterations run (``unrun``: iterations a finished tree leaves unrun)."""
        if self.cancel.is_set():
            raise _Cancelled
        if self.progress is not None and not self.by_tree:
            with self.lock:
                self.done += k
                self.total -= unrun
                self.progress(self.done, self.total)

    def start(self, i: int) -> None:
        """Tree ``i``'s kernel record, built before its first block is queued."""
        self.models[i] = _tree_model(self.preps[i], self.stir, self.ratios)

    def step(self, i: int, c: int, stop: int) -> None:
        """Run chain ``c`` of tree ``i`` up to iteration ``stop`` (its first block initialises
        the chain, in the thread that runs it)."""
        model = self.models[i]
        chunk = _chunk(model, self.opt)
        chain = self.chains.get((i, c))
        if chain is None:  # made and run through its first chunk
            first = min(stop, 1 + chunk)
            start = time.perf_counter()
            records = _init_chain(self.preps[i], model, self.config, self.seeds[i, c], first)
            chain = self.chains[(i, c)] = _Chain(*records, it=first,
                                                 seconds=time.perf_counter() - start)
            self.on_chunk(first - 1)
        _advance(chain, stop, model, self.config, chunk, self.on_chunk)

    def block_done(self, i: int) -> int | None:
        """A chain of tree ``i`` finished its block: None while its other chains run or once
        the tree is done, else where its chains run next (the tree's chains meet here)."""
        opt = self.opt
        self.arrived[i] += 1
        if self.arrived[i] < opt.n_chains:
            return None
        self.arrived[i] = 0
        tree_chains = [self.chains[(i, c)] for c in range(opt.n_chains)]
        n_run = tree_chains[0].it - 1
        if not opt.adaptive:
            self.finish(i, "n_iter", None)
            return None
        check, mcse = _check(self.preps[i], opt, tree_chains, n_run)
        if check.stop or n_run >= self.iterations_max:
            self.finish(i, "tolerance" if check.stop else "max_iter", check, mcse)
            # the bar's total loses the rest
            self.on_chunk(0, opt.n_chains * (self.iterations_max - n_run))
            return None
        return next_length(check, n_run, self.layout.burn, tolerance=opt.mcse_tolerance,
                           ess_min=ESS_PER_CHAIN_MIN * opt.n_chains, step=opt.check_every,
                           max_iter=self.iterations_max)

    def finish(self, i: int, reason: str, check: StopCheck | None,
               mcse: np.ndarray | None = None) -> None:
        """Tree ``i``'s result; its chains' working arrays and its record are released."""
        tree_chains = [self.chains.pop((i, c)) for c in range(self.opt.n_chains)]
        del self.models[i]
        self.results[i] = _assemble(self.preps[i], self.opt, tree_chains, self.entropy, reason,
                                    check, mcse)
        if self.progress is not None and self.by_tree:
            with self.lock:
                self.trees_done += 1
                self.progress(self.trees_done, len(self.trees))

    def run_serial(self) -> None:
        """Every task in the calling thread, with no future or pool per task (their bookkeeping
        would cost as much as a small tree's sampling): a tree's chains and blocks run one after
        another, so it is done (and its chains released) before the next starts."""
        for i in self.order():
            self.start(i)
            stop: int | None = self.first_stop
            while stop is not None:
                for c in range(self.opt.n_chains):
                    self.step(i, c, stop + 1)
                    nxt = self.block_done(i)  # None until the tree's last chain is there
                stop = nxt

    def run_pool(self, n_threads: int) -> None:
        """The tasks on a pool of ``n_threads`` workers; a tree's next block is queued when its
        last chain finishes the current one."""
        ex = ThreadPoolExecutor(max_workers=n_threads)
        pending: dict[Future, int] = {}
        try:
            for i in self.order():
                self.start(i)
                for c in range(self.opt.n_chains):
                    pending[ex.submit(self.step, i, c, self.first_stop + 1)] = i
            while pending:
                finished, _ = wait(list(pending), return_when=FIRST_COMPLETED)
                for f in finished:
                    i = pending.pop(f)
                    f.result()
                    nxt = self.block_done(i)
                    if nxt is not None:
                        for c in range(self.opt.n_chains):
                            pending[ex.submit(self.step, i, c, nxt + 1)] = i
        except BaseException:  # e.g. KeyboardInterrupt: stop the workers at their next chunk
            self.cancel.set()
            ex.shutdown(wait=True, cancel_futures=True)
            raise
        ex.shutdown(wait=True)

    def run(self, n_threads: int) -> list[HDPResult]:
        """Every tree's result, in the trees' order."""
        n_tasks = len(self.trees) * self.opt.n_chains
        if n_threads == 1 or n_tasks <= 1:
            self.run_serial()
        else:
            self.run_pool(min(n_threads, n_tasks))
        return [self.results[i] for i in range(len(self.trees))]


def estimate_trees(
    trees: Sequence[ContextTree],
    options: HDPOptions | None = None,
    *,
    seed=None,
    n_threads: int | None = None,
    stirling: LogStirlingTable | None = None,
    progress: Callable[[int, int], None] | None = None,
    progress_unit: str = "iterations",
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
        Worker threads (the kernels release the GIL). Default: the calling thread's
        :func:`~fastpath.utils._threads.numba_threads` (all cores, or what an enclosing
        :func:`~fastpath.utils._threads.limit_threads` allows: the classifiers' ``n_jobs``).
    stirling : LogStirlingTable, optional
        Table of log Stirling numbers, grown here to the largest count needed. Default: one
        table shared by all calls in this process (built once, kept for the process).
    progress : callable(done, total), optional
        Called with the iterations run (summed over chains and trees) as sampling proceeds,
        and the most they can come to: with ``n_iter="auto"`` the total starts at ``max_iter``
        per chain and shrinks by what a tree that stops early leaves unrun (a bar over what
        is really done, at the rate it is done).
    progress_unit : {"iterations", "trees"}
        What ``progress`` counts: iterations (above), or the trees done out of all trees (what
        a classifier's bar shows: many trees, most of them stopping early).

    Notes
    -----
    The work is a queue of (tree, chain, block) tasks on the thread pool, largest trees first.
    A fixed length is one block per chain. With ``n_iter="auto"`` the first block ends at
    ``min_iter``; when all chains of a tree have finished a block, the stopping rule is
    evaluated on their accumulators and traces and either the tree's result is assembled (its
    chains' arrays released) or the next block is queued, up to the length the rule predicts.
    """
    opt = options if options is not None else HDPOptions()
    if overrides:
        opt = opt.replace(**overrides)
    if progress_unit not in ("iterations", "trees"):
        raise ValueError(f"progress_unit must be 'iterations' or 'trees', got {progress_unit!r}")
    if n_threads is not None:
        n_threads = check_int("n_threads", n_threads, 1)
    else:
        n_threads = numba_threads()
    scheduler = _Scheduler(list(trees), opt, _layout(opt), _entropy(seed), stirling, progress,
                           by_tree=progress_unit == "trees")
    return scheduler.run(n_threads)


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
