"""Options of the HDP sampler, checked once: :class:`HDPOptions`."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...counts._context_tree import TYING_STRATEGIES
from ...utils._validation import check_float, check_int

UPDATES: tuple[str, ...] = ("exact", "window")
ROOT_TREATMENTS: tuple[str, ...] = ("exact", "reference")
#: iterations per batch of the batch-means MCSE with ``n_iter="auto"``: a few times the
#: integrated autocorrelation time of the worst node estimates under the overrelaxed moves
#: (measured in docs/sampler.md, "Adaptive length")
AUTO_BATCH = 25
#: what the adaptive length's MCSE tolerance applies to (``HDPOptions.mcse_weighting``)
MCSE_WEIGHTINGS: tuple[str, ...] = ("max", "rows")
#: how the concentration steps draw their auxiliary variables (``HDPOptions.concentration_draws``)
CONCENTRATION_DRAWS: tuple[str, ...] = ("gamma", "uniforms")
#: the reference implementation's run length and concentration schedule: Gibbs iterations per
#: chain, and every how many iterations the concentrations are re-sampled (the ``"paper"``
#: preset)
PAPER_ITERATIONS = 5000
PAPER_CONCENTRATION_EVERY = 5
#: the most iterations a default burn-in discards (``HDPOptions.burn_in_iterations``)
BURN_IN_CAP = 1000

#: Named sampler settings (``HDPOptions.preset``, ``BayesNetClassifier(sampler=...)``): each
#: preset is the fields it changes from ``HDPOptions()``, which is ``"adaptive"``.
#:
#: ``"adaptive"`` (the classifiers' default, and :class:`HDPOptions`' own defaults): exact
#: overrelaxed moves with the concentrations re-sampled every iteration, each tree sampled
#: until the Monte-Carlo error of what the training rows read is small (``n_iter="auto"``,
#: ``mcse_weighting="rows"``, no R-hat/ESS condition; with two or more chains the error
#: includes how far the chains disagree).
#: ``"adaptive-plain"``: the same rule with the paper's moves (plain Gibbs, concentrations
#: every 5th iteration): less time per tree, since nearly every tree stops at ``min_iter``
#: under both, but a larger error against long reference runs and a measurable loss of log
#: loss on kDB-3 -- hence not the default (measurements: docs/performance.md, "The default
#: sampler").
#: ``"strict"``: the overrelaxed moves, every probability of every node within the tolerance
#: and the concentrations and log joint past R-hat <= 1.01 and bulk ESS >= 100 per chain
#: (slower than ``"paper"``).
#: ``"ensemble"`` (``ESKDBClassifier``'s default): the paper's plain table-count moves with the
#: concentrations re-sampled at every iteration, chains of at least 60 iterations (burn-in 10)
#: instead of 500: an ensemble averages its members' estimates, whose Monte-Carlo errors then
#: divide (an ensemble scales any sampler's tolerance to its members:
#: :func:`ensemble_tolerance`); the concentrations' every-iteration steps are what lets the
#: chains be that short (their drift, shared by all the members, is a bias the average does
#: not divide) (docs/performance.md, "The ensemble's sampler").
#: ``"paper"``: the paper's and the reference's sampler, 5,000 plain Gibbs iterations with the
#: concentrations re-sampled every 5th (the experiments' runner and ``hdpbn estimate``).
SAMPLER_PRESETS: dict[str, dict[str, object]] = {
    "adaptive": {},
    "adaptive-plain": {"concentration_every": PAPER_CONCENTRATION_EVERY, "overrelax": False},
    "ensemble": {"min_iter": 60, "burn_in": 10, "concentration_draws": "uniforms",
                 "overrelax": False},
    "strict": {"mcse_weighting": "max", "convergence_checks": True},
    "paper": {"n_iter": PAPER_ITERATIONS, "concentration_every": PAPER_CONCENTRATION_EVERY,
              "overrelax": False},
}
#: The classifiers' default preset (``HDPOptions()``).
DEFAULT_SAMPLER = "adaptive"
#: The ensemble's default preset: the same rule for every member tree, with the paper's cheaper
#: plain moves and shorter chains. Averaging 20 members divides their Monte-Carlo errors, so
#: the overrelaxed moves' extra precision buys nothing there (ESKDB-20 with either: no
#: significant difference in RMSE or log loss), nor do chains of 500 iterations rather than 100
#: (measurements: docs/performance.md, "The default sampler" and "The ensemble's sampler").
DEFAULT_ENSEMBLE_SAMPLER = "ensemble"


def ensemble_tolerance(tolerance: float, n_members: int) -> float:
    """The Monte-Carlo tolerance of each member's trees when ``n_members`` estimates are
    averaged and their mean must be within ``tolerance``: ``tolerance * sqrt(n_members)`` (the
    error of a mean of E independent estimates is 1/sqrt(E) of each one's)."""
    return float(tolerance) * math.sqrt(n_members)


#: ``hdpbn estimate``'s preset: that command reproduces the reference implementation's tables
#: (its output is compared with the reference's), so it keeps the paper's sampler where the
#: classifiers default to :data:`DEFAULT_SAMPLER`.
ESTIMATE_SAMPLER = "paper"


@dataclass(frozen=True)
class HDPOptions:
    """Options of the HDP sampler. ``HDPOptions()`` is the classifiers' default sampler, the
    ``"adaptive"`` preset; :meth:`preset` gives the others (``HDPOptions.preset("paper")``:
    the reference implementation's), keywords changing any field.

    The fields come in three groups: the moves (what one Gibbs iteration does), the run and
    its stopping rule (how many iterations, how many chains, when a tree's estimates are
    precise enough), and what is kept of the run.

    Attributes
    ----------
    tying : {"level", "same-parent", "single", "none"}
        *Moves.* Which nodes share a concentration (paper, "Sampling and tying
        concentrations").
    update : {"exact", "window"}
        Table-count update: ``exact`` is a valid Gibbs step (full conditional when the feasible
        range holds at most ``2 window + 1`` values, else the cell of size ``2 window + 1`` of a
        randomly shifted partition); ``window`` is the reference's +-``window`` around the current
        value (not an exact Gibbs step; reproduces the reference).
    root : {"exact", "reference"}
        ``exact`` integrates the root probability against its Dirichlet(alpha0 / K) prior (paper,
        "Sampling pseudo-counts"); ``reference`` treats the root as an ordinary node whose table
        counts are fixed at min(1, n), as the reference code does.
    window : int
        Half-width of the table-count window (``update="window"``); ``exact`` uses cells of
        ``2 window + 1`` values.
    overrelax : bool
        Overrelaxed updates (``update="exact"`` only; default True): nine in ten table-count
        updates reflect the current value's position in its conditional's cdf instead of
        drawing afresh, and the concentrations take Adler's overrelaxed step
        (Metropolis-corrected) instead of their Gamma draw. Still exact (every step leaves the
        posterior invariant); several times the ESS per iteration of the concentrations and
        leaves for a little more time per iteration (measurements: docs/sampler.md,
        "Overrelaxed updates", and docs/validation.md, "Efficiency"). Not in the paper or the
        reference code (``preset("paper")`` turns it off). ``concentration_max`` then
        truncates the concentrations' posterior (proposals above it are rejected) instead of
        clipping draws.
    alpha0 : float
        Root concentration, fixed, with the uniform base measure 1/K.
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
        ``it % every == 3 % every``: every iteration for the default 1; 3, 8, 13, ... for the
        reference's 5 (``preset("paper")``).
    concentration_draws : {"gamma", "uniforms"}
        How a concentration step draws ``q_j ~ Beta(alpha, N_j)`` for a node with ``N_j <= 8``
        (:data:`~fastpath.estimate.hdp._kernels.SMALL_SHAPE`): ``"gamma"`` as every other node,
        a ratio of two Gamma variates (the reference implementation's way), or ``"uniforms"``
        as the product ``prod_{i < N_j} U_i^(1 / (alpha + i))`` of ``N_j`` uniforms -- the same
        distribution, fewer random numbers and no Gamma variate for the sparse trees' many small
        nodes (the ``"ensemble"`` preset's; other presets keep ``"gamma"``, so that their seeds
        give the numbers they always gave).
    n_iter : int or "auto"
        *The run and its stopping rule.* Gibbs iterations per chain (the reference's 5,000;
        the paper's experiments 50,000). ``"auto"`` (default): each tree's chains run
        ``min_iter`` iterations, then on to the length the stopping rule predicts (in
        multiples of ``check_every``), until the tree's estimates are precise and its chains
        look converged at a check (:mod:`fastpath.estimate.hdp._stopping`), or ``max_iter``.
        The decision is taken at checks only, from the tree's own chains, so a seed gives the
        same result for any number of threads.
    burn_in : int or None
        Iterations discarded before averaging; ``None`` means ``min(1000, n_iter // 10)``
        (with ``n_iter="auto"``: ``min_iter // 2``).
    min_iter, max_iter : int
        ``n_iter="auto"`` only: the fewest and the most iterations per chain.
    check_every : int
        ``n_iter="auto"`` only: the chains stop at ``min_iter`` plus a multiple of it.
    n_chains : int
        Independent chains per tree; estimates are averaged over chains.
    mcse_tolerance : float
        The largest Monte-Carlo standard error (batch means of :data:`AUTO_BATCH` iterations
        when adaptive, pooled over chains) allowed on what ``mcse_weighting`` names: where an
        adaptive run stops, and, for every run, above which the fit's
        :class:`~fastpath.estimate.UnconvergedWarning` says the estimates are imprecise. An
        ensemble of E members averages their estimates: it applies the tolerance to that
        average, sampling each member's trees to ``mcse_tolerance * sqrt(E)``
        (:func:`ensemble_tolerance`).
    mcse_weighting : {"rows", "max"}
        What must be below ``mcse_tolerance``. ``"rows"`` (default): the root mean square,
        over the training rows, of the MCSE of the probability each row reads at its leaf
        (weights ``n_leaf,value / N``): the Monte-Carlo error of what the training rows read
        for their own class, which a rarely reached node barely moves. ``"max"``: the MCSE of
        every probability of every node.
    convergence_checks : bool
        The stopping rule (``n_iter="auto"``) also requires the concentrations and the log
        joint to pass R-hat <= 1.01 and bulk ESS >= 100 per chain, and the fit warns when they
        do not (the ``"strict"`` preset; with two or more chains also the split R-hat of the
        rows' probability trace). ``False`` (default): they are computed and reported
        (``diagnostics_``) but neither stop the chains nor warn.
    n_batches : int
        Batches per chain for the batch-means Monte-Carlo standard errors of a fixed
        ``n_iter``.
    thin : int
        *What is kept.* Traces (concentrations, log joint, chosen node probabilities) and
        posterior draws are kept every ``thin`` iterations.
    trace_nodes : sequence of int
        Nodes whose Rao-Blackwellised probability vectors are traced.
    record_draws : bool or sequence of int
        Keep thinned posterior draws of node probability vectors after burn-in (``True``: every
        node; a sequence: those nodes). Draws are phi_root ~ Dir(n + alpha0/K), then
        phi_j ~ Dir(n_j + alpha_j phi_parent) given the current table counts and concentrations.
    keep_traces : bool
        Whether a classifier's ``hdp_results_`` keep their per-iteration traces
        (:attr:`HDPResult.trace <fastpath.estimate.hdp.HDPResult>`: concentrations, log joint,
        traced nodes, the rows' probability), which are most of their bytes for small trees.
        ``False``: the fit computes ``diagnostics_`` from the traces at once (the same numbers
        as when they are read later), then drops them, leaving traces of no points: the
        estimates, MCSEs, draws and ``diagnostics_`` stay, a result's own ``diagnostics()`` has
        nothing to show (NaN) and its ``to_arviz()`` raises a ValueError naming this option.
        :func:`~fastpath.estimate.hdp.estimate_trees` always returns the traces (the sampling
        is the same either way).
    """

    # the moves
    tying: str = "level"
    update: str = "exact"
    root: str = "exact"
    window: int = 10
    overrelax: bool = True
    alpha0: float = 2.0
    concentration_shape: float = 2.0
    concentration_rate: float = 1.0
    concentration_init: float | tuple[float, ...] = 2.0
    fix_concentrations: bool = False
    concentration_max: float = 4000.0
    concentration_every: int = 1
    concentration_draws: str = "gamma"
    # the run and its stopping rule
    n_iter: int | str = "auto"
    burn_in: int | None = None
    min_iter: int = 500
    max_iter: int = 5000
    check_every: int = 250
    n_chains: int = 1
    mcse_tolerance: float = 0.01
    mcse_weighting: str = "rows"
    convergence_checks: bool = False
    n_batches: int = 25
    # what is kept
    thin: int = 10
    trace_nodes: tuple[int, ...] = ()
    record_draws: bool | tuple[int, ...] = False
    keep_traces: bool = True

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        if isinstance(self.n_iter, str):
            if self.n_iter != "auto":
                raise ValueError(f"n_iter must be a positive integer or 'auto', got "
                                 f"{self.n_iter!r}")
        else:
            set_(self, "n_iter", check_int("n_iter", self.n_iter, 1))
        set_(self, "min_iter", check_int("min_iter", self.min_iter, 2))
        set_(self, "max_iter", check_int("max_iter", self.max_iter, 2))
        if self.max_iter < self.min_iter:
            raise ValueError(f"max_iter ({self.max_iter}) must be >= min_iter "
                             f"({self.min_iter})")
        set_(self, "check_every", check_int("check_every", self.check_every, 1))
        set_(self, "mcse_tolerance",
             check_float("mcse_tolerance", self.mcse_tolerance, positive=True))
        if self.mcse_weighting not in MCSE_WEIGHTINGS:
            raise ValueError(f"mcse_weighting must be one of {MCSE_WEIGHTINGS}, got "
                             f"{self.mcse_weighting!r}")
        if not isinstance(self.convergence_checks, (bool, np.bool_)):
            raise ValueError(f"convergence_checks must be a bool, got {self.convergence_checks!r}")
        set_(self, "convergence_checks", bool(self.convergence_checks))
        if self.burn_in is not None:
            b = check_int("burn_in", self.burn_in, 0)
            first = self.min_iter if self.adaptive else self.n_iter
            if b >= first:
                what = "min_iter" if self.adaptive else "n_iter"
                raise ValueError(f"burn_in must be < {what} ({first}), got {b}")
            set_(self, "burn_in", b)
        if self.tying not in TYING_STRATEGIES:
            raise ValueError(f"tying must be one of {TYING_STRATEGIES}, got {self.tying!r}")
        if self.update not in UPDATES:
            raise ValueError(f"update must be one of {UPDATES}, got {self.update!r}")
        if self.root not in ROOT_TREATMENTS:
            raise ValueError(f"root must be one of {ROOT_TREATMENTS}, got {self.root!r}")
        for name in ("concentration_shape", "concentration_rate"):
            set_(self, name, check_float(name, getattr(self, name), positive=False))
        init = self.concentration_init
        if isinstance(init, (str, bytes)):
            raise ValueError(f"concentration_init must be a number or numbers, got {init!r}")
        if isinstance(init, Sequence) or isinstance(init, np.ndarray):
            vals = tuple(
                check_float("concentration_init", v, positive=True) for v in np.ravel(init)
            )
            if not vals:
                raise ValueError("concentration_init must not be empty")
            set_(self, "concentration_init", vals)
        else:
            set_(self, "concentration_init",
                 check_float("concentration_init", init, positive=True))
        if not isinstance(self.fix_concentrations, (bool, np.bool_)):
            raise ValueError(f"fix_concentrations must be a bool, got {self.fix_concentrations!r}")
        set_(self, "fix_concentrations", bool(self.fix_concentrations))
        set_(self, "concentration_max",
             check_float("concentration_max", self.concentration_max, positive=True))
        set_(self, "concentration_every",
             check_int("concentration_every", self.concentration_every, 1))
        if self.concentration_draws not in CONCENTRATION_DRAWS:
            raise ValueError(f"concentration_draws must be one of {CONCENTRATION_DRAWS}, got "
                             f"{self.concentration_draws!r}")
        set_(self, "alpha0", check_float("alpha0", self.alpha0, positive=True))
        if not isinstance(self.overrelax, (bool, np.bool_)):
            raise ValueError(f"overrelax must be a bool, got {self.overrelax!r}")
        set_(self, "overrelax", bool(self.overrelax))
        if self.overrelax and self.update != "exact":
            raise ValueError("overrelax=True needs update='exact' (the window update is not a "
                             f"Gibbs step to overrelax), got update={self.update!r}")
        set_(self, "window", check_int("window", self.window, 1))
        set_(self, "n_chains", check_int("n_chains", self.n_chains, 1))
        set_(self, "thin", check_int("thin", self.thin, 1))
        set_(self, "n_batches", check_int("n_batches", self.n_batches, 2))
        set_(self, "trace_nodes",
             tuple(check_int("trace_nodes", v, 0) for v in np.ravel(self.trace_nodes)))
        if not isinstance(self.keep_traces, (bool, np.bool_)):
            raise ValueError(f"keep_traces must be a bool, got {self.keep_traces!r}")
        set_(self, "keep_traces", bool(self.keep_traces))
        rd = self.record_draws
        if isinstance(rd, (bool, np.bool_)):
            set_(self, "record_draws", bool(rd))
        else:
            set_(self, "record_draws",
                 tuple(check_int("record_draws", v, 0) for v in np.ravel(rd)))

    @property
    def adaptive(self) -> bool:
        """Whether each tree's run length is chosen by the stopping rule (``n_iter="auto"``)."""
        return self.n_iter == "auto"

    @property
    def iterations_max(self) -> int:
        """The most iterations a chain may run: ``n_iter``, or ``max_iter`` when adaptive."""
        return self.max_iter if self.adaptive else int(self.n_iter)

    @property
    def burn_in_iterations(self) -> int:
        """The burn-in actually used (``min(1000, n_iter // 10)`` when ``burn_in`` is None,
        ``min_iter // 2`` with ``n_iter="auto"``)."""
        if self.burn_in is None:
            if self.adaptive:
                return self.min_iter // 2
            return min(BURN_IN_CAP, self.n_iter // 10)
        return self.burn_in

    @property
    def batch_layout(self) -> tuple[int, int]:
        """``(n_batches, batch_size)`` of the batch-means MCSE: batches of
        :data:`AUTO_BATCH` iterations, as many as the longest adaptive run holds; for a fixed
        length, ``n_batches`` batches (at most one per kept iteration) splitting the kept
        iterations."""
        n_keep = self.iterations_max - self.burn_in_iterations
        if self.adaptive:
            return n_keep // AUTO_BATCH, AUTO_BATCH
        n_batches = min(self.n_batches, n_keep)
        return n_batches, max(1, n_keep // max(n_batches, 1))

    @classmethod
    def preset(cls, name: str, **overrides) -> HDPOptions:
        """The options of a named sampler (:data:`SAMPLER_PRESETS`), ``overrides`` applied on
        top (``ValueError`` for an unknown name)."""
        return cls(**{**SAMPLER_PRESETS[check_preset(name)], **overrides})

    def replace(self, **changes) -> HDPOptions:
        return dataclasses.replace(self, **changes)

    def for_members(self, n_members: int) -> HDPOptions:
        """The options each member's trees are sampled with when an ensemble averages
        ``n_members`` members' estimates and their mean must be within ``mcse_tolerance``:
        the tolerance :func:`ensemble_tolerance` (``mcse_tolerance * sqrt(n_members)``), the
        other fields unchanged; these options themselves for one member. Every ensemble
        applies it, whether its ``sampler`` names a preset or is an ``HDPOptions``."""
        n_members = check_int("n_members", n_members, 1)
        if n_members == 1:
            return self
        return self.replace(
            mcse_tolerance=ensemble_tolerance(self.mcse_tolerance, n_members))


def check_preset(name: str) -> str:
    """``name`` when it names a preset (:data:`SAMPLER_PRESETS`); ``ValueError`` listing them
    otherwise."""
    if not (isinstance(name, str) and name in SAMPLER_PRESETS):
        raise ValueError(f"sampler must be one of {tuple(SAMPLER_PRESETS)}, got {name!r}")
    return name
