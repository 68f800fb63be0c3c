"""Convergence diagnostics of HDP fits, tree by tree, for users.

A Bayesian network classifier fitted with ``estimation="hdp"`` runs one collapsed Gibbs sampler
per conditional probability table. :func:`summarise_fit` reads every sampler's output and
reports, tree by tree,

* **what predictions read** -- the root mean square over the training rows of the Monte-Carlo
  standard error of the probability each row reads (``rows_mcse``; with two or more chains at
  least their between-chain standard error), and the split R-hat of the rows' probability
  trace (``rows_rhat``, the mean over the rows of that probability at every iteration);
* **the sampler's state** -- the rank-normalised split R-hat and bulk effective sample size
  (Vehtari, Gelman, Simpson, Carpenter & Bürkner 2021) of the concentration of each tying
  group and of the log joint probability of the augmented model.

:class:`FitDiagnostics` lists the worst trees and warns (:class:`UnconvergedWarning`) when what
predictions read is not certified: its MCSE above the run's ``mcse_tolerance`` (with an
adaptive length: still above it at ``max_iter``); with two or more chains that MCSE includes
how far the chains disagree. R-hat and ESS are reported but do not warn -- the deepest
level's concentration can mix slowly, and R-hat, being scale-free, flags chains that differ
by far less than the tolerance, while the probabilities the rows read are already precise
(docs/performance.md, "The default sampler") -- except under the ``"strict"`` preset
(``convergence_checks=True``), which asks for them::

    clf = BayesNetClassifier(n_chains=4).fit(X, y)
    clf.diagnostics_.summary()             # worst trees first
    clf.diagnostics_.to_frame()            # one row per (tree, variable)

``hdpbn diagnose MODEL`` prints the same for a saved model (:mod:`fastpath.cli._diagnose`).

Thresholds: R-hat <= 1.01 and bulk ESS >= 100 per chain (Vehtari et al. recommend 400 for four
chains). ESS is computed from the thinned traces (``HDPOptions.thin``), so it is a lower bound
of the ESS of the posterior means, which average every post-burn-in iteration. With one chain,
R-hat compares the two halves of that chain only; use ``n_chains >= 2`` for a real check.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from numba import njit
from sklearn.exceptions import ConvergenceWarning

from ..counts._context_tree import ContextTree
from ..utils._warn import warn
from ._convergence import ESS_PER_CHAIN_MIN, RHAT_MAX, split_rhat_ess
from .hdp._options import AUTO_BATCH, HDPOptions
from .hdp._results import HDPResult

#: How :func:`remedy` writes an option in Python: the classifiers' ``sampler`` parameter, the
#: options the fit ran (``hdp_options()``) with one field changed.
PYTHON_NAMES: dict[str, str] = {
    "max_iter": "sampler=clf.hdp_options().replace(max_iter={})",
    "mcse_tolerance": "sampler=clf.hdp_options().replace(mcse_tolerance={})",
    "n_iter": "sampler=clf.hdp_options().replace(n_iter={})",
    "sampler": "sampler={!r}", "n_chains": "sampler=clf.hdp_options().replace(n_chains={})",
    "auto_length": "sampler=clf.hdp_options().replace(n_iter='auto')",
    "inspect": "see diagnostics_ (hdpbn diagnose MODEL)",
}


class UnconvergedWarning(ConvergenceWarning):
    """The HDP estimates of a fit are not certified: on some tree the Monte-Carlo error of what
    predictions read is above the tolerance (with two or more chains it includes how far the
    chains disagree); under ``sampler="strict"`` also when the concentrations, the log joint or
    the rows' probabilities fail their R-hat / ESS checks.

    A subclass of scikit-learn's :class:`~sklearn.exceptions.ConvergenceWarning`, so a filter on
    that class covers it. ``diagnostics`` is the fit's :class:`FitDiagnostics` (None when the
    warning was made from text alone) and ``names`` how its advice writes options
    (:data:`PYTHON_NAMES`, or a command line's flags under the same keys), so a command line
    can say it in its flags.
    """

    def __init__(self, message: str, diagnostics: FitDiagnostics | None = None,
                 names: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.diagnostics = diagnostics
        self.names = names


def _nice_up(x: float) -> int:
    """``x`` rounded up to 1, 2 or 5 times a power of ten (an option value a user would type)."""
    if x <= 1:
        return 1
    p = 10 ** math.floor(math.log10(x))
    for m in (1, 2, 5, 10):
        if m * p >= x:
            return int(m * p)
    return int(10 * p)


def remedy(options: HDPOptions, trees: Sequence[TreeDiagnostics],
           names: Mapping[str, str] = PYTHON_NAMES) -> str:
    """The advice an :class:`UnconvergedWarning` ends with, for the uncertified ``trees`` of a
    fit run with ``options``, written with ``names`` (:data:`PYTHON_NAMES`, or a command line's
    flags under the same keys).

    The length it suggests is the one the worst tree's MCSE asks for (an MCSE falls as
    1/sqrt(iterations)), with room to spare, at least twice the length run; the tolerance, the
    worst tree's MCSE rounded up.
    """
    worst = max((t.certified_mcse / t.mcse_tolerance for t in trees
                 if math.isfinite(t.certified_mcse) and t.mcse_tolerance > 0), default=0.0)
    iters = max((t.iterations for t in trees), default=0) or options.iterations_max
    longer = _nice_up(iters * max(2.0, 1.2 * worst * worst))
    if not options.adaptive:  # long enough for batches of AUTO_BATCH iterations
        longer = max(longer, _nice_up(AUTO_BATCH * options.n_batches / 0.9 + 1))
    tips = []
    if options.adaptive:
        tips.append("run longer: " + names["max_iter"].format(longer)
                    + f" (now {options.max_iter})")
    else:
        tips.append("let each tree run until its estimates are precise: " + names["auto_length"])
        tips.append("or run longer: " + names["n_iter"].format(longer))
    if worst > 1:
        tol = options.mcse_tolerance * worst
        tol = float(f"{tol:.1g}") if float(f"{tol:.1g}") >= tol else float(f"{tol * 1.5:.1g}")
        tips.append("or accept less precision: " + names["mcse_tolerance"].format(tol)
                    + f" (now {options.mcse_tolerance})")
    return "; ".join(tips) + "; " + names["inspect"] + "."


def tree_label(tree: ContextTree, index: int | None = None) -> str:
    """``P(child | parents)`` from the tree's variable names (``tree<i>`` without names)."""
    if tree.child_name is None:
        return f"tree{index}" if index is not None else "tree"
    cond = ", ".join(tree.conditioning_names or ())
    return f"P({tree.child_name} | {cond})" if cond else f"P({tree.child_name})"


def _nan_max(x) -> float:
    a = np.asarray(x, dtype=float)
    a = a[np.isfinite(a)]
    return float(a.max()) if a.size else math.nan


def _nan_min(x) -> float:
    a = np.asarray(x, dtype=float)
    a = a[np.isfinite(a)]
    return float(a.min()) if a.size else math.nan


def _mcse_problems(mcse: float, tolerance: float, weighting: str, stop_reason: str,
                   iterations: int, batch_size: int) -> list[str]:
    """What keeps a tree's Monte-Carlo error from certifying its estimates (empty when nothing
    does): the part of :meth:`TreeDiagnostics.problems` that needs no R-hat or ESS."""
    out = []
    what = "MCSE of what the rows read" if weighting == "rows" else "max MCSE"
    if math.isfinite(mcse) and math.isfinite(tolerance) and mcse > tolerance:
        out.append(f"{what} {mcse:.3g} > {tolerance:g} after {iterations} iterations")
    elif not math.isfinite(mcse) and stop_reason == "max_iter":
        # too few kept iterations for two batches: nothing certifies the estimates
        out.append(f"{what} not estimable after {iterations} iterations")
    elif 0 < batch_size < AUTO_BATCH:
        # batch means over a few iterations ignore the autocorrelation: their MCSE is too
        # small to certify anything (a fixed run of fewer than ~700 iterations)
        out.append(f"too short to certify: the MCSE's batches hold {batch_size} "
                   f"iterations (at least {AUTO_BATCH} needed)")
    return out


@dataclass(frozen=True)
class TreeDiagnostics:
    """What one tree's sampler says about its estimates.

    ``variables`` are ``alpha[<group>]`` (one per tying group, unless the concentrations were
    fixed) and ``log_joint``, with their R-hat and bulk ESS (NaN for a trace that never moves,
    e.g. a tree whose table counts are all determined; such a trace needs no check).
    ``iterations`` is what each chain ran and ``stop_reason`` why it stopped (``"n_iter"``,
    ``"tolerance"`` or ``"max_iter"``, :mod:`fastpath.estimate.hdp._stopping`); ``max_mcse``
    the largest MCSE of the tree's posterior-mean probabilities and ``rows_mcse`` the root
    mean square over the training rows of the MCSE of what each row reads (NaN when not
    estimated); ``rows_rhat`` and ``rows_ess`` the split R-hat (two or more chains) and bulk
    ESS of the rows' probability trace. ``mcse_weighting`` says which MCSE ``mcse_tolerance``
    bounds, and ``convergence_checks`` whether the concentrations' and log joint's R-hat and ESS
    count as problems (``sampler="strict"``); ``batch_size`` is the iterations per batch of its
    batch-means MCSE (a fixed run with batches shorter than
    :data:`~fastpath.estimate.hdp._options.AUTO_BATCH` is too short to certify; 0: unknown).
    """

    index: int
    name: str
    n_nodes: int
    n_chains: int
    n_draws: int
    variables: tuple[str, ...]
    mean: tuple[float, ...]
    rhat: tuple[float, ...]
    ess_bulk: tuple[float, ...]
    iterations: int = 0
    stop_reason: str = "n_iter"
    max_mcse: float = math.nan
    mcse_tolerance: float = math.nan
    rows_mcse: float = math.nan
    rows_rhat: float = math.nan
    rows_ess: float = math.nan
    mcse_weighting: str = "rows"
    convergence_checks: bool = False
    batch_size: int = 0

    @property
    def max_rhat(self) -> float:
        """Largest R-hat over the variables (NaN when no trace moves)."""
        return _nan_max(self.rhat)

    @property
    def min_ess(self) -> float:
        """Smallest bulk ESS over the variables (NaN when no trace moves)."""
        return _nan_min(self.ess_bulk)

    @property
    def certified_mcse(self) -> float:
        """The MCSE that ``mcse_tolerance`` bounds: ``rows_mcse`` or ``max_mcse``."""
        return self.rows_mcse if self.mcse_weighting == "rows" else self.max_mcse

    @property
    def worst_rhat_variable(self) -> str:
        r = np.asarray(self.rhat, dtype=float)
        return self.variables[int(np.nanargmax(r))] if np.isfinite(r).any() else "-"

    @property
    def worst_ess_variable(self) -> str:
        e = np.asarray(self.ess_bulk, dtype=float)
        return self.variables[int(np.nanargmin(e))] if np.isfinite(e).any() else "-"

    def problems(self, rhat_max: float, ess_min: float) -> list[str]:
        """Why this tree's estimates are not certified (empty when they are)."""
        out = _mcse_problems(self.certified_mcse, self.mcse_tolerance, self.mcse_weighting,
                             self.stop_reason, self.iterations, self.batch_size)
        if self.convergence_checks:
            if (self.n_chains >= 2 and math.isfinite(self.rows_rhat)
                    and self.rows_rhat > rhat_max):
                out.append(f"R-hat of the rows' probabilities {self.rows_rhat:.3f} > {rhat_max}")
            for v, r, e in zip(self.variables, self.rhat, self.ess_bulk, strict=True):
                if math.isfinite(r) and r > rhat_max:
                    out.append(f"{v}: R-hat {r:.3f} > {rhat_max}")
                if math.isfinite(e) and e < ess_min:
                    out.append(f"{v}: ESS {e:.0f} < {ess_min:.0f}")
        return out

    def severity(self, rhat_max: float, ess_min: float) -> float:
        """How far the tree is from certification (> 1: out of bounds)."""
        m, tol = self.certified_mcse, self.mcse_tolerance
        out = m / tol if math.isfinite(m) and math.isfinite(tol) and tol > 0 else 0.0
        if self.convergence_checks:
            rows = self.rows_rhat if self.n_chains >= 2 else math.nan
            for r in (self.max_rhat, rows):
                out = max(out, (r - 1.0) / (rhat_max - 1.0) if math.isfinite(r) else 0.0)
            e = self.min_ess
            out = max(out, ess_min / e if math.isfinite(e) and e > 0 else 0.0)
        return out

    def to_dict(self) -> dict:
        return {
            "index": self.index, "name": self.name, "n_nodes": self.n_nodes,
            "n_chains": self.n_chains, "n_draws": self.n_draws,
            "variables": list(self.variables), "mean": list(self.mean),
            "rhat": list(self.rhat), "ess_bulk": list(self.ess_bulk),
            "iterations": self.iterations, "stop_reason": self.stop_reason,
            "max_mcse": self.max_mcse, "mcse_tolerance": self.mcse_tolerance,
            "rows_mcse": self.rows_mcse, "rows_rhat": self.rows_rhat,
            "rows_ess": self.rows_ess, "mcse_weighting": self.mcse_weighting,
            "convergence_checks": self.convergence_checks, "batch_size": self.batch_size,
        }

    @classmethod
    def from_dict(cls, d: dict) -> TreeDiagnostics:
        """The inverse of :meth:`to_dict` (NaN: ``None``, as JSON writes it)."""
        def floats(xs):
            return tuple(math.nan if x is None else float(x) for x in xs)

        return cls(int(d["index"]), str(d["name"]), int(d["n_nodes"]), int(d["n_chains"]),
                   int(d["n_draws"]), tuple(str(v) for v in d["variables"]), floats(d["mean"]),
                   floats(d["rhat"]), floats(d["ess_bulk"]), int(d["iterations"]),
                   str(d["stop_reason"]),
                   *floats([d["max_mcse"], d["mcse_tolerance"], d["rows_mcse"], d["rows_rhat"],
                            d["rows_ess"]]),
                   mcse_weighting=str(d["mcse_weighting"]),
                   convergence_checks=bool(d["convergence_checks"]),
                   batch_size=int(d["batch_size"]))


@dataclass(frozen=True)
class FitDiagnostics:
    """Per-tree convergence summary of an HDP fit.

    Attributes
    ----------
    trees : tuple of TreeDiagnostics
        In the fit's tree order.
    rhat_max : float
        R-hat threshold (1.01).
    ess_min : float
        Bulk-ESS threshold for every variable (100 per chain).
    options : HDPOptions or None
        The sampler's options of the fit (None when read from a file that lacks them): what
        the warning's advice starts from.
    """

    trees: tuple[TreeDiagnostics, ...]
    rhat_max: float = RHAT_MAX
    ess_min: float = ESS_PER_CHAIN_MIN
    options: HDPOptions | None = field(default=None, compare=False)

    @classmethod
    def _deferred(cls, build: Callable[[], tuple[TreeDiagnostics, ...]], rhat_max: float,
                  ess_min: float, options: HDPOptions | None) -> FitDiagnostics:
        """Diagnostics whose ``trees`` are computed by ``build`` when first read, for a fit
        known to be certified (:func:`summarise_fit`'s ``deferred``): every other attribute
        and method reads ``trees``, so they come out as an eager summary's would."""
        self = object.__new__(cls)
        for name, value in (("rhat_max", rhat_max), ("ess_min", ess_min),
                            ("options", options), ("_build", build)):
            object.__setattr__(self, name, value)
        return self

    def __getattr__(self, name: str):
        # reached only for attributes not set: ``trees`` of a deferred summary
        build = self.__dict__.get("_build")
        if name != "trees" or build is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        trees = build()
        object.__setattr__(self, "trees", trees)
        self.__dict__.pop("_build", None)  # the results it read are no longer needed here
        return trees

    def __getstate__(self) -> dict:
        return {"trees": self.trees, "rhat_max": self.rhat_max, "ess_min": self.ess_min,
                "options": self.options}

    def __setstate__(self, state: dict) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)

    @property
    def n_chains(self) -> int:
        return max((t.n_chains for t in self.trees), default=0)

    @property
    def max_rhat(self) -> float:
        return _nan_max([t.max_rhat for t in self.trees])

    @property
    def min_ess(self) -> float:
        return _nan_min([t.min_ess for t in self.trees])

    @property
    def max_rows_mcse(self) -> float:
        """Largest MCSE of what the rows read over the trees (NaN when none is estimated)."""
        return _nan_max([t.rows_mcse for t in self.trees])

    @property
    def max_rows_rhat(self) -> float:
        """Largest R-hat of the rows' probabilities over the trees (NaN with one chain)."""
        return _nan_max([t.rows_rhat for t in self.trees])

    def unconverged(self) -> list[TreeDiagnostics]:
        """Trees whose estimates are not certified (:meth:`TreeDiagnostics.problems`), worst
        first."""
        if "_build" in self.__dict__:
            return []  # deferred: summarise_fit found every tree certified
        bad = [t for t in self.trees if t.problems(self.rhat_max, self.ess_min)]
        return sorted(bad, key=lambda t: -t.severity(self.rhat_max, self.ess_min))

    @property
    def converged(self) -> bool:
        return not self.unconverged()

    def worst(self, n: int = 5) -> list[TreeDiagnostics]:
        """The ``n`` trees farthest from (or closest to) certification."""
        order = sorted(self.trees, key=lambda t: -t.severity(self.rhat_max, self.ess_min))
        return order[:n]

    def to_frame(self):
        """One row per (tree, variable): tree, name, variable, mean, rhat, ess_bulk, and the
        tree's iterations per chain, why they stopped (``stop_reason``) and the statistics of
        what its rows read (``rows_mcse``, ``rows_rhat``)."""
        rows = [
            {"tree": t.index, "name": t.name, "variable": v, "mean": m, "rhat": r,
             "ess_bulk": e, "iterations": t.iterations, "stop_reason": t.stop_reason,
             "rows_mcse": t.rows_mcse, "rows_rhat": t.rows_rhat}
            for t in self.trees
            for v, m, r, e in zip(t.variables, t.mean, t.rhat, t.ess_bulk, strict=True)
        ]
        return pd.DataFrame(rows, columns=["tree", "name", "variable", "mean", "rhat",
                                           "ess_bulk", "iterations", "stop_reason",
                                           "rows_mcse", "rows_rhat"])

    def summary(self, n: int = 5) -> str:
        """A short text: verdict, then the ``n`` worst trees."""
        bad = self.unconverged()
        n_trees = len(self.trees)
        tol = _nan_max([t.mcse_tolerance for t in self.trees])
        rows = (f"what the rows read: max MCSE {self.max_rows_mcse:.4f}"
                + (f" (tolerance {tol})" if math.isfinite(tol) else ""))
        if self.n_chains >= 2:
            rows += f", max R-hat {self.max_rows_rhat:.4f}"
        state = (f"concentrations and log joint: max R-hat {self.max_rhat:.4f}, min bulk ESS "
                 f"{self.min_ess:.0f}" if math.isfinite(self.max_rhat)
                 else "no sampled concentration or log joint moves")
        strict = any(t.convergence_checks for t in self.trees)
        state += (f" (thresholds R-hat <= {self.rhat_max}, ESS >= {self.ess_min:.0f})" if strict
                  else " (reported; not a condition of the default rule)")
        lines = [f"{n_trees} trees, {self.n_chains} chain(s); {rows}; {state}"]
        lines.append(f"{len(bad)} tree(s) not certified" if bad
                     else "every tree's estimates are certified")
        iters = [t.iterations for t in self.trees if t.iterations > 0]
        if iters and any(t.stop_reason != "n_iter" for t in self.trees):
            capped = sum(t.stop_reason == "max_iter" for t in self.trees)
            lines.append(f"iterations per chain (adaptive): min {min(iters)}, median "
                         f"{int(np.median(iters))}, max {max(iters)}; {capped} tree(s) "
                         "stopped at max_iter")
        if self.n_chains < 2:
            lines.append("note: one chain -- R-hat only compares its two halves; "
                         "fit with n_chains >= 2 to check that chains agree")
        shown = bad[:n] if bad else self.worst(n)
        if shown:
            lines.append("worst trees:" if bad else "closest to the thresholds:")
            width = max(len(t.name) for t in shown)
            for t in shown:
                stop = (f"  {t.iterations} it ({t.stop_reason})"
                        if t.stop_reason != "n_iter" else "")
                lines.append(f"  {t.name:<{width}}  rows MCSE {t.rows_mcse:.4f}  "
                             f"R-hat {t.max_rhat:.4f} ({t.worst_rhat_variable})  "
                             f"ESS {t.min_ess:.0f} ({t.worst_ess_variable}){stop}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def warning_message(self, names: Mapping[str, str] = PYTHON_NAMES) -> str | None:
        """The text of the :class:`UnconvergedWarning` for this fit, its advice written with
        ``names`` (:data:`PYTHON_NAMES` or a command line's flags); None when every tree is
        certified."""
        bad = self.unconverged()
        if not bad:
            return None
        listed = "; ".join(
            f"{t.name} ({', '.join(t.problems(self.rhat_max, self.ess_min))})" for t in bad[:3]
        )
        more = f" and {len(bad) - 3} more" if len(bad) > 3 else ""
        chains = "one chain" if self.n_chains < 2 else f"{self.n_chains} chains"
        advice = (remedy(self.options, bad, names) if self.options is not None
                  else names["inspect"] + ".")
        return (f"the HDP estimates of {len(bad)} of {len(self.trees)} trees are not certified "
                f"({chains}): {listed}{more}. To fix: {advice}")

    def warn_if_unconverged(self, names: Mapping[str, str] = PYTHON_NAMES) -> bool:
        """Emit an :class:`UnconvergedWarning` naming the uncertified trees and what to change
        (:meth:`warning_message`); True when one was. The warning points at the first line
        outside fastpath."""
        message = self.warning_message(names)
        if message is None:
            return False
        warn(UnconvergedWarning(message, self, names))
        return True

    def to_dict(self) -> dict:
        """JSON-able form (NaN as None), e.g. for a model file."""
        def clean(x):
            if isinstance(x, float) and not math.isfinite(x):
                return None
            if isinstance(x, list):
                return [clean(v) for v in x]
            if isinstance(x, dict):
                return {k: clean(v) for k, v in x.items()}
            return x

        return clean({"rhat_max": self.rhat_max, "ess_min": self.ess_min,
                      "trees": [t.to_dict() for t in self.trees]})

    @classmethod
    def from_dict(cls, d: dict, options: HDPOptions | None = None) -> FitDiagnostics:
        return cls(tuple(TreeDiagnostics.from_dict(t) for t in d["trees"]),
                   float(d["rhat_max"]), float(d["ess_min"]),
                   options)


def _tree_series(res: HDPResult) -> dict[str, np.ndarray]:
    """The post-burn-in traces a tree's diagnostics judge, by variable name: each group's
    concentration (unless fixed), then the log joint; each shaped (chains, draws)."""
    kept = res.trace.kept
    if res.trace.log_joint.shape[0] == 1:
        # one chain: the kept points are the trace's last ones (iterations increase), a
        # slice rather than a copy (several chains keep the mask's copies, whose layout
        # numpy's mean of all their draws adds in)
        kept = slice(kept.size - int(np.count_nonzero(kept)), None)
    series: dict[str, np.ndarray] = {}
    if not res.options.fix_concentrations:
        concentrations = res.trace.concentrations
        for g, label in enumerate(_alpha_labels(res.group_names, res.n_groups)):
            series[label] = concentrations[:, kept, g]
    series["log_joint"] = res.trace.log_joint[:, kept]
    return series


@functools.cache
def _alpha_labels(group_names: tuple[str, ...], n_groups: int) -> tuple[str, ...]:
    """``alpha[<group name>]`` of each group (``alpha[<g>]`` for a name already taken: the
    'single' tying names its one group 'all')."""
    names = group_names or tuple(str(g) for g in range(n_groups))
    labels: list[str] = []
    for g in range(n_groups):
        label = f"alpha[{names[g]}]"
        labels.append(f"alpha[{g}]" if label in labels else label)
    return tuple(labels)


@njit(cache=True, nogil=True)
def _finite_max(a):
    """``np.nanmax(a)`` when ``a`` has a finite value (infinities count), else NaN."""
    top = np.nan
    seen_finite = False
    for x in a.ravel():
        if np.isfinite(x):
            seen_finite = True
        if not np.isnan(x) and (np.isnan(top) or x > top):
            top = x
    return top if seen_finite else np.nan


def _series_means(series: list[np.ndarray]) -> list[float]:
    """``float(np.mean(x))`` of every series (NaN when empty), the one-chain series of one
    length in one call: a (1, D) series' mean is the pairwise sum of its D values divided by D,
    as for each row of their stack (the same numbers; several chains: one call each)."""
    means = [math.nan] * len(series)
    by_length: dict[int, list[int]] = {}
    for i, x in enumerate(series):
        if x.size == 0:
            continue
        if x.shape[0] == 1:
            by_length.setdefault(x.shape[1], []).append(i)
        else:
            means[i] = float(np.mean(x))
    for positions in by_length.values():
        stacked = np.concatenate([series[i] for i in positions])
        for i, mean in zip(positions, stacked.mean(axis=1).tolist(), strict=True):
            means[i] = mean
    return means


def _tree_diagnostics(i: int, res: HDPResult, name: str, series: dict[str, np.ndarray],
                      rhat: np.ndarray, ess: np.ndarray, rows_stats: tuple[float, float],
                      means: list[float]) -> TreeDiagnostics:
    """One tree's record from its ``series``, their means, R-hat and ESS (in ``series``'
    order) and the rows' probability trace's (R-hat, ESS)."""
    mcse = np.asarray(res.mcse, dtype=float)
    opt = res.options
    rows_rhat, rows_ess = rows_stats
    return TreeDiagnostics(
        index=i, name=name, n_nodes=res.tree.n_nodes, n_chains=opt.n_chains,
        n_draws=int(series["log_joint"].shape[1]),
        variables=tuple(series),
        mean=tuple(means),
        rhat=tuple(float(r) for r in rhat), ess_bulk=tuple(float(e) for e in ess),
        iterations=int(res.n_iterations), stop_reason=res.stop_reason,
        max_mcse=float(_finite_max(mcse)),
        mcse_tolerance=float(opt.mcse_tolerance), rows_mcse=res.rows_mcse,
        rows_rhat=rows_rhat, rows_ess=rows_ess,
        mcse_weighting=opt.mcse_weighting,
        convergence_checks=bool(opt.convergence_checks),
        batch_size=opt.batch_layout[1],
    )


def summarise_fit(
    results: Sequence[HDPResult],
    tree_names: Sequence[str] | None = None,
    *,
    rhat_max: float = RHAT_MAX,
    ess_min_per_chain: float = ESS_PER_CHAIN_MIN,
    deferred: bool = False,
    options: HDPOptions | None = None,
) -> FitDiagnostics:
    """R-hat and bulk ESS of the concentrations and the log joint of every fitted tree.

    Parameters
    ----------
    results : sequence of HDPResult
        One per tree, e.g. ``BayesNetClassifier.hdp_results_`` or
        :func:`fastpath.estimate.hdp._api.estimate_trees`'s return value.
    tree_names : sequence of str, optional
        Display names; default :func:`tree_label` of each tree.
    rhat_max, ess_min_per_chain : float
        Thresholds: R-hat <= ``rhat_max`` and bulk ESS >= ``ess_min_per_chain`` x chains.
    deferred : bool
        When no result asks for R-hat and ESS checks (``convergence_checks``) and every
        tree's Monte-Carlo error certifies its estimates, return a summary whose trees are
        computed when first read (the same numbers): a fit that does not warn then spends
        nothing on statistics that only a reader of ``diagnostics_`` looks at (every
        ensemble fit, whose members' hundreds of trees make them a visible share of a small
        dataset's fit; docs/performance.md, "Diagnostics computed when read"). The checks are
        still made now; the arguments too.
    options : HDPOptions, optional
        The options the advice of :meth:`FitDiagnostics.warning_message` starts from
        (default: the first result's): an ensemble's, whose trees ran with the tolerance of one
        member (:meth:`HDPOptions.for_members`), are the options its ``sampler`` gives.
    """
    results = list(results)
    for r in results:
        if not isinstance(r, HDPResult):
            raise TypeError(f"results must be HDPResult objects, got {type(r).__name__}")
    if tree_names is None:
        tree_names = [tree_label(r.tree, i) for i, r in enumerate(results)]
    tree_names = [str(n) for n in tree_names]
    if len(tree_names) != len(results):
        raise ValueError(f"tree_names has {len(tree_names)} names for {len(results)} results")
    if not rhat_max > 1.0:
        raise ValueError(f"rhat_max must be > 1, got {rhat_max!r}")
    if not ess_min_per_chain >= 0:
        raise ValueError(f"ess_min_per_chain must be >= 0, got {ess_min_per_chain!r}")
    chains = max((r.options.n_chains for r in results), default=1)
    if options is None:
        options = results[0].options if results else None
    if deferred and _certified(results):
        names = list(tree_names)
        return FitDiagnostics._deferred(lambda: _tree_records(results, names), float(rhat_max),
                                        float(ess_min_per_chain) * chains, options)
    return FitDiagnostics(_tree_records(results, tree_names), float(rhat_max),
                          float(ess_min_per_chain) * chains, options)


def _certified(results: Sequence[HDPResult]) -> bool:
    """Whether no tree of ``results`` can be uncertified: none asks for R-hat and ESS checks
    and every one's Monte-Carlo error passes (:func:`_mcse_problems`, as its
    :class:`TreeDiagnostics` would say)."""
    for r in results:
        opt = r.options
        if opt.convergence_checks:
            return False
        mcse = (r.rows_mcse if opt.mcse_weighting == "rows"
                else float(_finite_max(np.asarray(r.mcse, dtype=float))))
        if _mcse_problems(mcse, float(opt.mcse_tolerance), opt.mcse_weighting, r.stop_reason,
                          int(r.n_iterations), opt.batch_layout[1]):
            return False
    return True


def _tree_records(results: Sequence[HDPResult], tree_names: Sequence[str]
                  ) -> tuple[TreeDiagnostics, ...]:
    """Every tree's :class:`TreeDiagnostics`, their statistics computed together."""
    # every trace of every tree in one call: the statistics are computed a group of same-shaped
    # traces at a time (most trees of a fit stop at the same iteration), not trace by trace
    series = [_tree_series(r) for r in results]
    rows = [np.asarray(r.trace.rows_probability, dtype=float) for r in results]
    flat = [x for s in series for x in s.values()]
    rhat, ess = split_rhat_ess(flat + rows)
    means = _series_means(flat)
    bounds = np.cumsum([0] + [len(s) for s in series]).tolist()
    rows_at = bounds[-1]
    return tuple(
        _tree_diagnostics(
            i, r, n, series[i], rhat[bounds[i]:bounds[i + 1]], ess[bounds[i]:bounds[i + 1]],
            # the rows' R-hat compares chains (HDPResult.rows_rhat): NaN with one chain
            (float(rhat[rows_at + i]) if rows[i].shape[0] >= 2 else math.nan,
             float(ess[rows_at + i])),
            means[bounds[i]:bounds[i + 1]])
        for i, (r, n) in enumerate(zip(results, tree_names, strict=True)))
