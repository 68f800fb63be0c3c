"""Convergence diagnostics of HDP fits, tree by tree, for users.

A Bayesian network classifier fitted with ``estimator="hdp"`` runs one collapsed Gibbs sampler
per conditional probability table. :func:`summarise_fit` reads every sampler's post-burn-in traces
(the concentration of each tying group and the log joint probability of the augmented model)
and computes the rank-normalised split R-hat and the bulk effective sample size (Vehtari,
Gelman, Simpson, Carpenter & Bürkner 2021) of each; :class:`FitDiagnostics` lists the worst trees
and warns (:class:`UnconvergedWarning`) when a fit looks unconverged::

    clf = BayesNetClassifier(estimator="hdp", n_chains=4).fit(X, y)
    clf.diagnostics_.summary()             # worst trees first
    clf.diagnostics_.to_frame()            # one row per (tree, variable)

``hdpbn diagnose MODEL`` prints the same for a saved model (:mod:`fastpath.cli.diagnose`).

Thresholds: R-hat <= 1.01 and bulk ESS >= 100 per chain (Vehtari et al. recommend 400 for four
chains). ESS is computed from the thinned traces (``HDPOptions.thin``), so it is a lower bound
of the ESS of the posterior means, which average every post-burn-in iteration. With one chain,
R-hat compares the two halves of that chain only (the warning says so); use ``n_chains >= 2``
for a real check.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..counts.context_tree import ContextTree
from .convergence import ESS_PER_CHAIN_MIN, RHAT_MAX, effective_sample_size, split_rhat
from .hdp.results import HDPResult

__all__ = [
    "DEFAULT_REMEDY",
    "ESS_PER_CHAIN_MIN",
    "RHAT_MAX",
    "FitDiagnostics",
    "TreeDiagnostics",
    "UnconvergedWarning",
    "summarise_fit",
    "tree_label",
]

#: The advice an :class:`UnconvergedWarning` ends with, in :class:`~fastpath.BayesNetClassifier`'s
#: parameters.
DEFAULT_REMEDY = ("Mix faster with sampler='fast' (exact, adaptive length) or run longer "
                  "(max_iter, n_iter, burn_in) or more chains; see diagnostics_ "
                  "(hdpbn diagnose MODEL).")


class UnconvergedWarning(UserWarning):
    """An HDP fit has a tree whose sampler looks unconverged (R-hat or ESS out of bounds)."""


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


@dataclass(frozen=True)
class TreeDiagnostics:
    """R-hat and bulk ESS of one tree's sampler.

    ``variables`` are ``alpha[<group>]`` (one per tying group, unless the concentrations were
    fixed) and ``log_joint``. R-hat / ESS are NaN for a trace that never moves (a tree whose
    table counts are all determined, e.g. no count above one); such a trace needs no check.
    ``iterations`` is what each chain ran and ``stop_reason`` why it stopped (``"n_iter"``,
    ``"tolerance"`` or ``"max_iter"``, :mod:`fastpath.estimate.hdp.stopping`); ``max_mcse``
    the largest MCSE of the tree's posterior-mean probabilities (NaN when not estimated).
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

    @property
    def max_rhat(self) -> float:
        """Largest R-hat over the variables (NaN when no trace moves)."""
        return _nan_max(self.rhat)

    @property
    def min_ess(self) -> float:
        """Smallest bulk ESS over the variables (NaN when no trace moves)."""
        return _nan_min(self.ess_bulk)

    @property
    def worst_rhat_variable(self) -> str:
        r = np.asarray(self.rhat, dtype=float)
        return self.variables[int(np.nanargmax(r))] if np.isfinite(r).any() else "-"

    @property
    def worst_ess_variable(self) -> str:
        e = np.asarray(self.ess_bulk, dtype=float)
        return self.variables[int(np.nanargmin(e))] if np.isfinite(e).any() else "-"

    def problems(self, rhat_max: float, ess_min: float) -> list[str]:
        out = []
        for v, r, e in zip(self.variables, self.rhat, self.ess_bulk, strict=True):
            if math.isfinite(r) and r > rhat_max:
                out.append(f"{v}: R-hat {r:.3f} > {rhat_max}")
            if math.isfinite(e) and e < ess_min:
                out.append(f"{v}: ESS {e:.0f} < {ess_min:.0f}")
        if self.stop_reason == "max_iter" and not self.max_mcse <= self.mcse_tolerance:
            out.append(f"max_iter ({self.iterations}) reached with MCSE {self.max_mcse:.4f} > "
                       f"{self.mcse_tolerance}")
        return out

    def severity(self, rhat_max: float, ess_min: float) -> float:
        """How far the tree is from the thresholds (> 1: out of bounds)."""
        r = self.max_rhat
        e = self.min_ess
        s_r = (r - 1.0) / (rhat_max - 1.0) if math.isfinite(r) else 0.0
        s_e = ess_min / e if math.isfinite(e) and e > 0 else 0.0
        s_m = (self.max_mcse / self.mcse_tolerance
               if self.stop_reason == "max_iter" and math.isfinite(self.max_mcse) else 0.0)
        return max(s_r, s_e, s_m)

    def to_dict(self) -> dict:
        return {
            "index": self.index, "name": self.name, "n_nodes": self.n_nodes,
            "n_chains": self.n_chains, "n_draws": self.n_draws,
            "variables": list(self.variables), "mean": list(self.mean),
            "rhat": list(self.rhat), "ess_bulk": list(self.ess_bulk),
            "iterations": self.iterations, "stop_reason": self.stop_reason,
            "max_mcse": self.max_mcse, "mcse_tolerance": self.mcse_tolerance,
        }

    @classmethod
    def from_dict(cls, d: dict) -> TreeDiagnostics:
        def floats(xs):
            return tuple(math.nan if x is None else float(x) for x in xs)

        return cls(int(d["index"]), str(d["name"]), int(d["n_nodes"]), int(d["n_chains"]),
                   int(d["n_draws"]), tuple(str(v) for v in d["variables"]), floats(d["mean"]),
                   floats(d["rhat"]), floats(d["ess_bulk"]), int(d.get("iterations", 0)),
                   str(d.get("stop_reason", "n_iter")),
                   *floats([d.get("max_mcse"), d.get("mcse_tolerance")]))


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
    """

    trees: tuple[TreeDiagnostics, ...]
    rhat_max: float = RHAT_MAX
    ess_min: float = ESS_PER_CHAIN_MIN

    @property
    def n_chains(self) -> int:
        return max((t.n_chains for t in self.trees), default=0)

    @property
    def max_rhat(self) -> float:
        return _nan_max([t.max_rhat for t in self.trees])

    @property
    def min_ess(self) -> float:
        return _nan_min([t.min_ess for t in self.trees])

    def unconverged(self) -> list[TreeDiagnostics]:
        """Trees with a variable beyond a threshold, worst first."""
        bad = [t for t in self.trees if t.problems(self.rhat_max, self.ess_min)]
        return sorted(bad, key=lambda t: -t.severity(self.rhat_max, self.ess_min))

    @property
    def converged(self) -> bool:
        return not self.unconverged()

    def worst(self, n: int = 5) -> list[TreeDiagnostics]:
        """The ``n`` trees farthest from (or closest to) the thresholds."""
        order = sorted(self.trees, key=lambda t: -t.severity(self.rhat_max, self.ess_min))
        return order[:n]

    def to_frame(self):
        """One row per (tree, variable): tree, name, variable, mean, rhat, ess_bulk, and the
        tree's iterations per chain and why they stopped (``stop_reason``)."""
        rows = [
            {"tree": t.index, "name": t.name, "variable": v, "mean": m, "rhat": r,
             "ess_bulk": e, "iterations": t.iterations, "stop_reason": t.stop_reason}
            for t in self.trees
            for v, m, r, e in zip(t.variables, t.mean, t.rhat, t.ess_bulk, strict=True)
        ]
        return pd.DataFrame(rows, columns=["tree", "name", "variable", "mean", "rhat",
                                           "ess_bulk", "iterations", "stop_reason"])

    def summary(self, n: int = 5) -> str:
        """A short text: verdict, thresholds, then the ``n`` worst trees."""
        bad = self.unconverged()
        head = (f"{len(self.trees)} trees, {self.n_chains} chain(s): max R-hat "
                f"{self.max_rhat:.4f}, min bulk ESS {self.min_ess:.0f} "
                f"(thresholds: R-hat <= {self.rhat_max}, ESS >= {self.ess_min:.0f})")
        if math.isnan(self.max_rhat):
            head = (f"{len(self.trees)} trees, {self.n_chains} chain(s): no sampled trace moves "
                    "(nothing to diagnose)")
        lines = [head]
        lines.append(f"{len(bad)} tree(s) look unconverged" if bad else "all trees look converged")
        iters = [t.iterations for t in self.trees if t.iterations > 0]
        if iters and any(t.stop_reason != "n_iter" for t in self.trees):
            capped = sum(t.stop_reason == "max_iter" for t in self.trees)
            lines.append(f"iterations per chain (adaptive): min {min(iters)}, median "
                         f"{int(np.median(iters))}, max {max(iters)}; {capped} tree(s) "
                         "stopped at max_iter")
        if self.n_chains < 2:
            lines.append("note: one chain -- R-hat only compares its two halves; "
                         "fit with n_chains >= 2 for a real check")
        shown = bad[:n] if bad else self.worst(n)
        if shown:
            lines.append("worst trees:" if bad else "closest to the thresholds:")
            width = max(len(t.name) for t in shown)
            for t in shown:
                stop = (f"  {t.iterations} it ({t.stop_reason})"
                        if t.stop_reason != "n_iter" else "")
                lines.append(f"  {t.name:<{width}}  R-hat {t.max_rhat:.4f} "
                             f"({t.worst_rhat_variable})  ESS {t.min_ess:.0f} "
                             f"({t.worst_ess_variable}){stop}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def warn_if_unconverged(self, stacklevel: int = 2, remedy: str = DEFAULT_REMEDY) -> bool:
        """Emit an :class:`UnconvergedWarning` naming the worst trees; True when one was.

        ``remedy`` is the advice that ends the message, in the caller's parameters (an
        estimator without ``sampler`` names the options it has).
        """
        bad = self.unconverged()
        if not bad:
            return False
        names = "; ".join(
            f"{t.name} (R-hat {t.max_rhat:.3f}, ESS {t.min_ess:.0f})" for t in bad[:3]
        )
        more = f" and {len(bad) - 3} more" if len(bad) > 3 else ""
        chains = (
            "one chain: R-hat compares its two halves"
            if self.n_chains < 2 else f"{self.n_chains} chains"
        )
        warnings.warn(
            f"the HDP sampler looks unconverged on {len(bad)} of {len(self.trees)} trees "
            f"({chains}; thresholds R-hat <= {self.rhat_max}, bulk ESS >= "
            f"{self.ess_min:.0f}): {names}{more}. {remedy}",
            UnconvergedWarning,
            stacklevel=stacklevel + 1,
        )
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
    def from_dict(cls, d: dict) -> FitDiagnostics:
        return cls(tuple(TreeDiagnostics.from_dict(t) for t in d["trees"]),
                   float(d.get("rhat_max", RHAT_MAX)), float(d.get("ess_min", ESS_PER_CHAIN_MIN)))


def _tree_diagnostics(i: int, res: HDPResult, name: str) -> TreeDiagnostics:
    kept = res.trace.kept
    series: dict[str, np.ndarray] = {}
    if not res.options.fix_concentrations:
        names = res.group_names or tuple(str(g) for g in range(res.n_groups))
        for g in range(res.n_groups):
            label = f"alpha[{names[g]}]"
            if label in series:  # 'single' tying names its one group 'all'; keep labels unique
                label = f"alpha[{g}]"
            series[label] = res.trace.concentrations[:, kept, g]
    series["log_joint"] = res.trace.log_joint[:, kept]
    mean, rhat, ess = [], [], []
    for x in series.values():
        mean.append(float(np.mean(x)) if x.size else math.nan)
        rhat.append(split_rhat(x))
        ess.append(effective_sample_size(x))
    mcse = np.asarray(res.mcse, dtype=float)
    return TreeDiagnostics(
        index=i, name=name, n_nodes=res.tree.n_nodes, n_chains=res.options.n_chains,
        n_draws=int(kept.sum()), variables=tuple(series), mean=tuple(mean), rhat=tuple(rhat),
        ess_bulk=tuple(ess), iterations=int(res.n_iterations), stop_reason=res.stop_reason,
        max_mcse=float(np.nanmax(mcse)) if mcse.size and np.isfinite(mcse).any() else math.nan,
        mcse_tolerance=float(res.options.mcse_tolerance) if res.options.adaptive else math.nan,
    )


def summarise_fit(
    results: Sequence[HDPResult],
    tree_names: Sequence[str] | None = None,
    *,
    rhat_max: float = RHAT_MAX,
    ess_min_per_chain: float = ESS_PER_CHAIN_MIN,
) -> FitDiagnostics:
    """R-hat and bulk ESS of the concentrations and the log joint of every fitted tree.

    Parameters
    ----------
    results : sequence of HDPResult
        One per tree, e.g. ``BayesNetClassifier.hdp_results_`` or
        :func:`fastpath.estimate.hdp.api.estimate_trees`'s return value.
    tree_names : sequence of str, optional
        Display names; default :func:`tree_label` of each tree.
    rhat_max, ess_min_per_chain : float
        Thresholds: R-hat <= ``rhat_max`` and bulk ESS >= ``ess_min_per_chain`` x chains.
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
    trees = tuple(_tree_diagnostics(i, r, n)
                  for i, (r, n) in enumerate(zip(results, tree_names, strict=True)))
    return FitDiagnostics(trees, float(rhat_max), float(ess_min_per_chain) * chains)
