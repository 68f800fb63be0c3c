"""Agreement of the fast collapsed sampler with NUTS on the NumPyro model, tree by tree.

For every tree of the suite (:mod:`hdpbn_ppl.suite`) both samplers run under identical priors
(concentrations ~ Gamma(2, 1) per tying group, alpha_0 = 2 fixed, the same tying):

* fastpath, ``update="exact"``, ``root="exact"``, >= 4 chains: posterior means of every node's
  probability vector with batch-means Monte-Carlo standard errors (MCSE), and thinned traces of
  the concentrations, the log joint and the Rao-Blackwellised probabilities of every node;
* NUTS on :mod:`hdpbn_ppl` (>= 4 chains): posterior means and MCSEs of the same quantities.

Every node probability and every concentration is compared by
``z = (mean_fast - mean_nuts) / sqrt(mcse_fast^2 + mcse_nuts^2)``. A tree passes when
``max |z| <= 4``, the R-hat of every traced quantity is <= 1.01 on both sides and NUTS had no
divergent transition. Under agreement and independent errors, ``max |z|`` over ``m`` comparisons
has the distribution function ``(2 Phi(x) - 1)^m``; :func:`expected_max_abs_z` gives its mean and
99th percentile, which the report states next to every tree (the comparisons of one node's K
values are negatively correlated, so these are slight overstatements).

The reference implementation's shortcuts are run on the same trees -- fastpath with
``update="window"`` (+-10 window around the current table count), with ``root="reference"``
(root table counts fixed at min(1, n)) and with both (what the Java code does) -- and their
deviations from the NUTS ground truth are reported as numbers.

ESS per second is reported for both samplers (bulk ESS, rank-normalised; concentrations: the
smallest over tying groups; leaves: the median over leaf probabilities; seconds: the whole run,
burn-in / warm-up and, for NUTS, JIT compilation included; fastpath runs its chains one after
another on one thread). Fastpath's ESS comes from its thinned traces, so it is a lower bound.

Both samplers' R-hat, ESS and MCSEs of the compared means are computed by the same functions,
:mod:`fastpath.estimate._convergence`'s.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import platform
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from scipy import integrate
from scipy.special import log_ndtr, ndtri

from fastpath.counts import ContextTree
from fastpath.estimate import RHAT_MAX, effective_sample_size, mcse_mean, split_rhat
from fastpath.estimate.hdp import HDPOptions, HDPResult, estimate_tree
from fastpath.utils import save_figure, write_text
from hdpbn_ppl import suite as suite_mod

__all__ = [
    "FULL",
    "QUICK",
    "AgreementConfig",
    "TreeAgreement",
    "bulk_ess",
    "expected_max_abs_z",
    "fastpath_summary",
    "nuts_summary",
    "plot_z",
    "report_markdown",
    "run_agreement",
    "run_tree",
    "stored_nuts",
    "z_scores",
]

Z_MAX = 4.0
KHAT_MAX = 0.7


@dataclass(frozen=True)
class AgreementConfig:
    """Run lengths of one agreement run.

    ``fast_*``: fastpath iterations, burn-in and trace thinning per chain; ``nuts_*``: NUTS
    warm-up and kept draws per chain; ``chain_method``: passed to :func:`hdpbn_ppl.infer.fit`;
    ``sampler``: a preset other than ``"paper"`` (``"adaptive"``, the library's default, or
    ``"strict"``, formerly ``"fast"``) runs fastpath with that preset instead, each tree until
    its stopping rule holds (``fast_iter`` is not used, an extension multiplies the preset's
    shortest and longest runs); ``target_accept``: NUTS
    target acceptance; a run with divergent transitions or an R-hat
    above 1.01 is repeated with each ``(target acceptance, warm-up multiplier, draws
    multiplier)`` of ``retries`` in turn until one passes (smaller steps, longer adaptation,
    more draws -- the standard remedies; the report keeps the earlier runs' figures);
    ``fast_extend``: how many times a fastpath run whose R-hat exceeds 1.01 is repeated with
    four times the iterations (and thinning); ``fast_compile``: ask XLA for fewer
    optimisations (compilation dominates NUTS on tiny trees); ``reparam``: the NUTS model's
    reparameterisation (:func:`hdpbn_ppl.infer.fit`).
    """

    name: str
    chains: int = 4
    fast_iter: int = 50_000
    fast_burn: int = 5_000
    fast_thin: int = 25
    nuts_warmup: int = 1000
    nuts_samples: int = 1000
    chain_method: str = "auto"
    target_accept: float = 0.95
    retries: tuple[tuple[float, int, int], ...] = ((0.99, 1, 2), (0.995, 2, 4))
    fast_extend: int = 2
    fast_compile: bool = False
    variants: bool = True
    reparam: str = "ratio"
    overrelax: bool = False
    sampler: str = "paper"  # or an adaptive preset: its own length (max 5,000 x scale)


QUICK = AgreementConfig("quick", fast_iter=20_000, fast_burn=2_000, fast_thin=20,
                        nuts_warmup=500, nuts_samples=500, fast_compile=True, variants=False)
FULL = AgreementConfig("full")

#: the reference implementation's shortcuts, run against the same ground truth
VARIANTS = {
    "window": {"update": "window", "root": "exact"},
    "root_reference": {"update": "exact", "root": "reference"},
    "reference_code": {"update": "window", "root": "reference"},
}


# ---------------------------------------------------------------------------- statistics
def expected_max_abs_z(m: int) -> tuple[float, float]:
    """Mean and 99th percentile of max |z| over ``m`` independent standard normal z.

    P(max |z| <= x) = (2 Phi(x) - 1)^m, so E[max |z|] = int_0^inf 1 - (2 Phi(x) - 1)^m dx.
    """
    if m < 1:
        return math.nan, math.nan

    def survival(x: float) -> float:
        # 1 - (1 - 2 Phi(-x))^m, computed stably
        return -math.expm1(m * math.log1p(-2.0 * math.exp(log_ndtr(-x))))

    mean, _ = integrate.quad(survival, 0.0, 40.0, limit=200)
    # (2 Phi(x) - 1)^m = 0.99  <=>  Phi(-x) = (1 - 0.99^(1/m)) / 2
    q99 = float(-ndtri(-math.expm1(math.log(0.99) / m) / 2.0))
    return float(mean), q99


def z_scores(a: np.ndarray, sa: np.ndarray, b: np.ndarray, sb: np.ndarray) -> np.ndarray:
    """(a - b) / sqrt(sa^2 + sb^2); 0 where both are equal, inf where only the errors vanish."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    den = np.sqrt(np.asarray(sa, float) ** 2 + np.asarray(sb, float) ** 2)
    diff = a - b
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(den > 0, diff / np.where(den > 0, den, 1.0),
                     np.where(diff == 0, 0.0, np.inf * np.sign(diff)))
    return z


def _flat(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    return x.reshape(x.shape[0], x.shape[1], -1)


def _varying(flat: np.ndarray) -> np.ndarray:
    return np.ptp(flat, axis=(0, 1)) > 0


def _rhat(x: np.ndarray) -> np.ndarray:
    """Rank-normalised split R-hat of every varying component of x (chains, draws, ...)."""
    flat = _flat(x)
    return np.array([split_rhat(flat[:, :, i]) for i in np.flatnonzero(_varying(flat))])


def bulk_ess(x: np.ndarray) -> np.ndarray:
    """Bulk ESS of every quantity of ``x`` that varies.

    Parameters
    ----------
    x : array_like, shape (chains, draws, ...)
        Draws of any number of quantities (trailing axes).

    Returns
    -------
    ndarray, shape (n_varying,)
        :func:`fastpath.estimate._convergence.effective_sample_size` of each quantity whose
        draws are not constant, in C order of the trailing axes (NaN where not finite).
    """
    flat = _flat(x)
    return np.array([effective_sample_size(flat[:, :, i])
                     for i in np.flatnonzero(_varying(flat))])


def _khat(x: np.ndarray) -> np.ndarray:
    """Pareto k-hat (Vehtari et al. 2024) of every component of x (chains, draws, ...).

    The two-tailed k-hat is the larger of the two tails'. Where one tail cannot be fitted
    because its values are all equal (a point mass: a probability that underflows to exactly 0
    in most draws, or a quantity with few distinct values), the other tail's k-hat is used. Where
    neither tail can be fitted: +inf when exact zeros hold all but fewer draws than a tail
    (a point mass from underflow with rare excursions), NaN otherwise (constant or
    nearly constant draws, or few distinct values: no tail to worry about).
    """
    from arviz_stats.base import array_stats

    def khat(draws, tail):
        with contextlib.suppress(ValueError, FloatingPointError, ZeroDivisionError), \
                warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # r_eff = 1: the tail size of independent draws (the default estimates r_eff from
            # a tail ESS first, far dearer for the same k-hat: docs/validation.md)
            return float(array_stats.pareto_khat(draws, chain_axis=0, draw_axis=1, r_eff=1.0,
                                                 tail=tail))
        return math.nan

    flat = _flat(x)
    out = np.full(flat.shape[2], np.nan)
    for i in np.flatnonzero(_varying(flat)):
        draws = flat[:, :, i]
        k = khat(draws, "both")
        if math.isnan(k):
            k = np.nanmax([khat(draws, "left"), khat(draws, "right"), -np.inf])
            k = math.nan if k == -np.inf else k
        tail_size = min(0.2 * draws.size, 3 * math.sqrt(draws.size))
        if math.isnan(k) and (draws == 0).any() and np.count_nonzero(draws) < tail_size:
            # A point mass at 0 (underflow: the posterior reaches below 1e-308) holding all but
            # fewer draws than a tail holds: no tail can be fitted and the mean rests on a
            # handful of draws -- not a CLT quantity.
            k = math.inf
        out[i] = k
    return out.reshape(np.shape(x)[2:])


def _max(x: np.ndarray) -> float:
    x = np.asarray(x, float)
    x = x[np.isfinite(x)] if x.size else x
    return float(x.max()) if x.size else math.nan


def _min(x: np.ndarray) -> float:
    x = np.asarray(x, float)
    x = x[np.isfinite(x)] if x.size else x
    return float(x.min()) if x.size else math.nan


def _median(x: np.ndarray) -> float:
    x = np.asarray(x, float)
    x = x[np.isfinite(x)] if x.size else x
    return float(np.median(x)) if x.size else math.nan


# ---------------------------------------------------------------------------- samplers
@dataclass
class SamplerSummary:
    """What the comparison needs from one sampler run (plain arrays, JSON-able)."""

    probabilities: np.ndarray
    mcse: np.ndarray
    concentration_mean: np.ndarray
    concentration_mcse: np.ndarray
    max_rhat: float
    min_ess_conc: float
    median_ess_leaf: float
    seconds: float
    divergences: int = 0
    extra: dict | None = None
    khat_prob: np.ndarray | None = None
    khat_conc: np.ndarray | None = None

    def to_json(self) -> dict:
        d = asdict(self)
        for k, v in d.items():
            if isinstance(v, np.ndarray):
                d[k] = v.tolist()
        return d

    @classmethod
    def from_json(cls, d: dict) -> SamplerSummary:
        d = dict(d)
        for k in ("probabilities", "mcse", "concentration_mean", "concentration_mcse",
                  "khat_prob", "khat_conc"):
            if d.get(k) is not None:
                d[k] = np.asarray(d[k], dtype=float)
        return cls(**d)


def fastpath_summary(res: HDPResult, *, khat: bool = True) -> SamplerSummary:
    """Means, MCSEs, R-hat and ESS of a fastpath run with every node traced."""
    tr = res.trace
    kept = tr.kept
    conc = tr.concentrations[:, kept]
    lj = tr.log_joint[:, kept][:, :, None]
    nodes = tr.node_probabilities[:, kept]
    rhats = [_rhat(lj), _rhat(nodes)]
    if not res.options.fix_concentrations and conc.shape[2]:
        rhats.append(_rhat(conc))
    leaf_pos = np.flatnonzero(np.isin(tr.node_ids, np.arange(res.tree.n_nodes)[res.tree.leaves]))
    return SamplerSummary(
        probabilities=np.array(res.probabilities),
        mcse=np.array(res.mcse),
        # concentrations: mean and MCSE from the same (thinned) trace
        concentration_mean=conc.mean(axis=(0, 1)),
        concentration_mcse=mcse_mean(conc),
        max_rhat=_max(np.concatenate([np.ravel(r) for r in rhats])),
        min_ess_conc=_min(bulk_ess(conc)),
        median_ess_leaf=_median(bulk_ess(nodes[:, :, leaf_pos])),
        seconds=float(res.seconds),
        khat_prob=_khat(nodes) if khat else None,
        khat_conc=_khat(conc) if khat else None,
        extra={"trace_points_per_chain": int(kept.sum()),
               "max_rhat_concentrations": _max(_rhat(conc)) if conc.shape[2] else math.nan},
    )


def _fast_run(tree: ContextTree, tying: str, cfg: AgreementConfig, seed: int, *,
              update: str = "exact", root: str = "exact", scale: int = 1,
              overrelax: bool = False) -> HDPResult:
    if cfg.sampler != "paper":  # an adaptive preset: its own length
        preset = HDPOptions.preset(cfg.sampler)
        opts = HDPOptions.preset(  # an extension (scale > 1) raises the shortest run too
            cfg.sampler, tying=tying, update=update, root=root, n_chains=cfg.chains,
            min_iter=preset.min_iter * scale, max_iter=preset.max_iter * scale,
            trace_nodes=tuple(range(tree.n_nodes)),
        )
        return estimate_tree(tree, opts, seed=seed, n_threads=1)
    opts = HDPOptions.preset(
        "paper", n_iter=cfg.fast_iter * scale, burn_in=cfg.fast_burn * scale, tying=tying,
        update=update, root=root, n_chains=cfg.chains, thin=cfg.fast_thin * scale,
        trace_nodes=tuple(range(tree.n_nodes)), overrelax=overrelax,
    )
    # one thread: seconds are then the sum of the chains' run times, comparable with NUTS
    return estimate_tree(tree, opts, seed=seed, n_threads=1)


def run_fastpath(tree: ContextTree, tying: str, cfg: AgreementConfig, seed: int, *,
                 update: str = "exact", root: str = "exact", scale: int = 1,
                 khat: bool = True) -> SamplerSummary:
    """fastpath with every node traced; ``scale`` multiplies iterations, burn-in and thinning."""
    res = _fast_run(tree, tying, cfg, seed, update=update, root=root, scale=scale)
    s = fastpath_summary(res, khat=khat)
    s.extra["n_iter"] = res.options.n_iter
    return s


@contextlib.contextmanager
def _xla_fast_compile(enabled: bool):
    if not enabled:
        yield
        return
    import jax

    old = bool(jax.config.values.get("jax_disable_most_optimizations", False))
    jax.config.update("jax_disable_most_optimizations", True)
    try:
        yield
    finally:
        jax.config.update("jax_disable_most_optimizations", old)


def nuts_summary(res) -> SamplerSummary:
    """The same summary of a :class:`hdpbn_ppl.infer.PPLResult`."""
    diag = res.diagnostics
    post = res.datatree["posterior"]
    alpha = np.asarray(post["alpha"].values, dtype=float)
    p = np.asarray(post["p"].values, dtype=float)
    leaves = np.arange(res.tree.n_nodes)[res.tree.leaves]
    return SamplerSummary(
        probabilities=np.array(res.probabilities),
        mcse=np.array(res.mcse),
        concentration_mean=np.array(res.concentration_mean),
        concentration_mcse=np.array(res.concentration_mcse),
        max_rhat=_max(np.concatenate([_rhat(alpha), _rhat(p)])),
        min_ess_conc=_min(bulk_ess(alpha)),
        median_ess_leaf=_median(bulk_ess(p[:, :, leaves])),
        seconds=float(diag.seconds),
        divergences=int(diag.divergences),
        khat_prob=_khat(p),
        khat_conc=_khat(alpha),
        extra={"min_ess_bulk": float(diag.min_ess_bulk), "min_ess_tail": float(diag.min_ess_tail),
               "min_bfmi": float(diag.min_bfmi), "trustworthy": bool(diag.trustworthy),
               "problems": list(diag.problems),
               "max_tree_depth_hits": int(getattr(diag, "max_tree_depth_hits", 0))},
    )


def run_nuts(tree: ContextTree, tying: str, cfg: AgreementConfig, seed: int) -> SamplerSummary:
    """NUTS with ``cfg.target_accept``; repeated with ``cfg.retries`` while it diverges."""
    from hdpbn_ppl.infer import fit

    def once(target: float, warmup_factor: int, draws_factor: int) -> SamplerSummary:
        with _xla_fast_compile(cfg.fast_compile), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = fit(tree, tying=tying, n_chains=cfg.chains,
                      burn_in=cfg.nuts_warmup * warmup_factor,
                      samples=cfg.nuts_samples * draws_factor, seed=seed,
                      chain_method=cfg.chain_method, target_accept=target,
                      reparam=cfg.reparam, warn=False)
        s = nuts_summary(res)
        s.extra["reparam"] = cfg.reparam
        s.extra["target_accept"] = target
        s.extra["warmup"] = cfg.nuts_warmup * warmup_factor
        s.extra["samples"] = cfg.nuts_samples * draws_factor
        return s

    run = once(cfg.target_accept, 1, 1)
    earlier = []
    for target, warmup_factor, draws_factor in cfg.retries:
        if run.divergences == 0 and run.max_rhat <= RHAT_MAX:
            break
        earlier.append({k: run.extra[k] for k in ("target_accept", "warmup", "samples")}
                       | {"divergences": run.divergences, "seconds": run.seconds,
                          "max_rhat": run.max_rhat})
        run = once(target, warmup_factor, draws_factor)
    if earlier:
        run.extra["earlier_runs"] = earlier
    return run


# ---------------------------------------------------------------------------- one tree
@dataclass
class TreeAgreement:
    """The comparison on one tree (JSON round trip through :meth:`to_json`)."""

    name: str
    source: str
    tying: str
    seed: int
    config: str
    shape: dict
    fast: SamplerSummary
    nuts: SamplerSummary
    z_prob: np.ndarray  # (n_nodes, K)
    z_conc: np.ndarray  # (G,)
    true_alpha: list | None = None
    variants: dict | None = None
    date: str = ""

    @property
    def n_comparisons(self) -> int:
        return int(self.z_prob.size + self.z_conc.size)

    def _all_z(self) -> np.ndarray:
        return np.concatenate([np.ravel(self.z_prob), np.ravel(self.z_conc)])

    @property
    def reliable(self) -> np.ndarray:
        """Comparisons whose Monte-Carlo errors can be trusted: Pareto k-hat <= 0.7 on both
        sides (Vehtari et al. 2024). Above, the draws' variance is infinite or nearly so --
        typically never-observed categories deep in sparse trees, whose posteriors span many
        orders of magnitude -- and a CLT-based MCSE, hence z, is not valid. (A point mass at 0
        with rare excursions -- 3,745 of 4,000 NUTS draws of one probability of m_d4_k6_sparse
        -- gets its right tail's k-hat, 13, from :func:`_khat`; one that is 0 in all but a
        handful of draws gets +inf.) NaN k-hat (no tail could be fitted: constant or nearly
        constant draws, few distinct values) counts as reliable, and so does everything when
        k-hat was not computed."""
        ok = np.ones(self.n_comparisons, dtype=bool)
        for side in (self.fast, self.nuts):
            if side.khat_prob is None or side.khat_conc is None:
                continue
            k = np.concatenate([np.ravel(side.khat_prob), np.ravel(side.khat_conc)])
            ok &= ~(k > KHAT_MAX)
        return ok

    @property
    def n_unreliable(self) -> int:
        return int((~self.reliable).sum())

    @property
    def max_abs_z(self) -> float:
        """Largest |z| over the reliable comparisons (the pass rule)."""
        z = self._all_z()[self.reliable]
        return float(np.max(np.abs(z))) if z.size else 0.0

    @property
    def max_abs_z_unreliable(self) -> float:
        z = self._all_z()[~self.reliable]
        return float(np.max(np.abs(z))) if z.size else math.nan

    @property
    def max_abs_dp_unreliable(self) -> float:
        """Largest |p_fast - p_nuts| among the unreliable node probabilities."""
        mask = ~self.reliable[: self.z_prob.size]
        if not mask.any():
            return math.nan
        d = np.abs(self.fast.probabilities - self.nuts.probabilities).ravel()[mask]
        return float(d.max())

    @property
    def expected_max(self) -> tuple[float, float]:
        return expected_max_abs_z(int(self.reliable.sum()))

    @property
    def checks(self) -> dict[str, bool]:
        return {
            "max|z|<=4": self.max_abs_z <= Z_MAX,
            "rhat_fast<=1.01": bool(self.fast.max_rhat <= RHAT_MAX),
            "rhat_nuts<=1.01": bool(self.nuts.max_rhat <= RHAT_MAX),
            "no_divergences": self.nuts.divergences == 0,
        }

    @property
    def passed(self) -> bool:
        return all(self.checks.values())

    def ess_per_second(self) -> dict[str, float]:
        f, n = self.fast, self.nuts
        out = {
            "fast_conc": f.min_ess_conc / f.seconds if f.seconds > 0 else math.nan,
            "nuts_conc": n.min_ess_conc / n.seconds if n.seconds > 0 else math.nan,
            "fast_leaf": f.median_ess_leaf / f.seconds if f.seconds > 0 else math.nan,
            "nuts_leaf": n.median_ess_leaf / n.seconds if n.seconds > 0 else math.nan,
        }
        out["ratio_conc"] = out["fast_conc"] / out["nuts_conc"]
        out["ratio_leaf"] = out["fast_leaf"] / out["nuts_leaf"]
        return out

    def to_json(self) -> dict:
        return {
            "name": self.name, "source": self.source, "tying": self.tying, "seed": self.seed,
            "config": self.config, "shape": self.shape, "date": self.date,
            "fast": self.fast.to_json(), "nuts": self.nuts.to_json(),
            "z_prob": self.z_prob.tolist(), "z_conc": self.z_conc.tolist(),
            "true_alpha": self.true_alpha, "variants": self.variants,
            # derived, for readers of the JSON
            "max_abs_z": self.max_abs_z, "n_comparisons": self.n_comparisons,
            "n_unreliable": self.n_unreliable,
            "max_abs_z_unreliable": self.max_abs_z_unreliable,
            "max_abs_dp_unreliable": self.max_abs_dp_unreliable,
            "expected_max_abs_z": self.expected_max[0], "q99_max_abs_z": self.expected_max[1],
            "checks": self.checks, "passed": self.passed, "ess_per_second": self.ess_per_second(),
        }

    @classmethod
    def from_json(cls, d: dict) -> TreeAgreement:
        return cls(
            name=d["name"], source=d["source"], tying=d["tying"], seed=d["seed"],
            config=d["config"], shape=d["shape"], fast=SamplerSummary.from_json(d["fast"]),
            nuts=SamplerSummary.from_json(d["nuts"]),
            z_prob=np.asarray(d["z_prob"], dtype=float), z_conc=np.asarray(d["z_conc"], float),
            true_alpha=d.get("true_alpha"), variants=d.get("variants"), date=d.get("date", ""),
        )


def _variant_deviation(var: SamplerSummary, nuts: SamplerSummary, exact: SamplerSummary) -> dict:
    """How far a shortcut's estimates are from the ground truth (NUTS) and from exact fastpath."""
    z_n = np.concatenate([np.ravel(z_scores(var.probabilities, var.mcse, nuts.probabilities,
                                            nuts.mcse)),
                          z_scores(var.concentration_mean, var.concentration_mcse,
                                   nuts.concentration_mean, nuts.concentration_mcse)])
    z_e = np.concatenate([np.ravel(z_scores(var.probabilities, var.mcse, exact.probabilities,
                                            exact.mcse)),
                          z_scores(var.concentration_mean, var.concentration_mcse,
                                   exact.concentration_mean, exact.concentration_mcse)])
    dp = np.abs(var.probabilities - nuts.probabilities)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = (var.concentration_mean - nuts.concentration_mean) / nuts.concentration_mean
    worst_g = int(np.argmax(np.abs(rel))) if rel.size else -1
    return {
        "max_abs_z_vs_nuts": float(np.max(np.abs(z_n))) if z_n.size else 0.0,
        "max_abs_z_vs_exact": float(np.max(np.abs(z_e))) if z_e.size else 0.0,
        "max_abs_dp_vs_nuts": float(dp.max()),
        "mean_abs_dp_vs_nuts": float(dp.mean()),
        "conc_rel_dev_vs_nuts": float(rel[worst_g]) if rel.size else 0.0,
        "conc_worst_group": worst_g,
        "conc_mean": var.concentration_mean.tolist(),
        "seconds": var.seconds,
        "max_rhat": var.max_rhat,
    }


def stored_nuts(nuts_from: str | Path, name: str, cfg: AgreementConfig) -> SamplerSummary:
    """The NUTS summary of tree ``name`` from an earlier run's results folder.

    The ground truth does not depend on fastpath, so a fastpath setting (``cfg.overrelax``) can
    be checked against NUTS runs already made. The stored run must have used the same
    configuration name (same NUTS lengths, same priors).
    """
    path = Path(nuts_from) / f"{name}.json"
    if not path.exists():
        raise FileNotFoundError(f"no stored result for tree {name!r} in {nuts_from}")
    old = TreeAgreement.from_json(json.loads(path.read_text()))
    if old.config != cfg.name:
        raise ValueError(f"{path}: stored with configuration {old.config!r}, not {cfg.name!r}")
    return old.nuts


def run_tree(name: str, cfg: AgreementConfig, *, log=print,
             nuts_from: str | Path | None = None) -> TreeAgreement:
    """Both samplers on one suite tree, plus (``cfg.variants``) the reference's shortcuts.

    ``nuts_from``: take the NUTS side from that folder of earlier results (:func:`stored_nuts`)
    instead of running it.
    """
    entry = suite_mod.get(name)
    tree = entry.build()
    t0 = time.perf_counter()
    scale = 1
    label = (f"{cfg.sampler} preset" if cfg.sampler != "paper"
             else "exact, overrelaxed" if cfg.overrelax else "exact")
    res = _fast_run(tree, entry.tying, cfg, entry.seed, overrelax=cfg.overrelax)
    fast = fastpath_summary(res, khat=False)
    fast.extra["n_iter"] = res.n_iterations
    fast.extra["overrelax"] = cfg.overrelax
    fast.extra["sampler"] = cfg.sampler
    log(f"  fastpath {label}: {fast.seconds:.2f} s, max R-hat {fast.max_rhat:.4f}")
    for _ in range(cfg.fast_extend):
        if fast.max_rhat <= RHAT_MAX:
            break
        # not converged yet: four times longer (the report states the iterations used)
        scale *= 4
        shorter = fast
        res = _fast_run(tree, entry.tying, cfg, entry.seed, scale=scale,
                        overrelax=cfg.overrelax)
        fast = fastpath_summary(res, khat=False)
        fast.extra["n_iter"] = res.n_iterations
        fast.extra["overrelax"] = cfg.overrelax
        fast.extra["sampler"] = cfg.sampler
        fast.extra["shorter_run"] = {"n_iter": shorter.extra["n_iter"],
                                     "max_rhat": shorter.max_rhat, "seconds": shorter.seconds}
        log(f"  fastpath {label} x{scale}: {fast.seconds:.2f} s, "
            f"max R-hat {fast.max_rhat:.4f}")
    # k-hat of the compared run only (the shorter ones just decided its length)
    kept = res.trace.kept
    fast.khat_prob = _khat(res.trace.node_probabilities[:, kept])
    fast.khat_conc = _khat(res.trace.concentrations[:, kept])
    if nuts_from is not None:
        nuts = stored_nuts(nuts_from, name, cfg)
        log(f"  NUTS (stored in {nuts_from}): {nuts.seconds:.1f} s, max R-hat {nuts.max_rhat:.4f}, "
            f"{nuts.divergences} divergences")
    else:
        nuts = run_nuts(tree, entry.tying, cfg, entry.seed)
        log(f"  NUTS: {nuts.seconds:.1f} s, max R-hat {nuts.max_rhat:.4f}, "
            f"{nuts.divergences} divergences")
    z_prob = z_scores(fast.probabilities, fast.mcse, nuts.probabilities, nuts.mcse)
    z_conc = z_scores(fast.concentration_mean, fast.concentration_mcse,
                      nuts.concentration_mean, nuts.concentration_mcse)
    variants = None
    if cfg.variants:
        variants = {}
        for vname, kw in VARIANTS.items():
            v = run_fastpath(tree, entry.tying, cfg, entry.seed, scale=scale, khat=False, **kw)
            variants[vname] = _variant_deviation(v, nuts, fast)
    res = TreeAgreement(
        name=name, source=entry.source, tying=entry.tying, seed=entry.seed, config=cfg.name,
        shape=suite_mod.tree_summary(tree), fast=fast, nuts=nuts, z_prob=z_prob, z_conc=z_conc,
        true_alpha=list(entry.true_alpha) if entry.true_alpha else None, variants=variants,
        date=time.strftime("%Y-%m-%d %H:%M"),
    )
    log(f"  max |z| {res.max_abs_z:.2f} over {res.n_comparisons - res.n_unreliable} "
        f"comparisons (expected {res.expected_max[0]:.2f}; {res.n_unreliable} with k-hat > "
        f"{KHAT_MAX}, max |z| {res.max_abs_z_unreliable:.2f}); "
        f"{'PASS' if res.passed else 'FAIL'} "
        f"({time.perf_counter() - t0:.0f} s)")
    return res


def run_agreement(names: list[str], cfg: AgreementConfig, out_dir: str | Path | None = None, *,
                  resume: bool = False, log=print,
                  nuts_from: str | Path | None = None) -> list[TreeAgreement]:
    """Run :func:`run_tree` on each tree; each result is written to ``out_dir/<name>.json``
    as soon as it is done (``resume`` skips trees already there; ``nuts_from`` reuses stored
    NUTS runs)."""
    out = Path(out_dir) if out_dir is not None else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    results = []
    for name in names:
        path = out / f"{name}.json" if out is not None else None
        if resume and path is not None and path.exists():
            results.append(TreeAgreement.from_json(json.loads(path.read_text())))
            log(f"{name}: cached")
            continue
        log(f"{name}:")
        res = run_tree(name, cfg, log=log, nuts_from=nuts_from)
        if path is not None:
            write_text(path, json.dumps(res.to_json()))
        results.append(res)
    return results


def load_results(out_dir: str | Path, names: list[str] | None = None) -> list[TreeAgreement]:
    """Results stored by :func:`run_agreement`, in suite order."""
    out = Path(out_dir)
    order = names or suite_mod.names()
    res = []
    for name in order:
        p = out / f"{name}.json"
        if p.exists():
            res.append(TreeAgreement.from_json(json.loads(p.read_text())))
    return res


# ---------------------------------------------------------------------------- report
def machine_description() -> str:
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return f"{os.cpu_count()} cores ({cpu}), Python {platform.python_version()}"


def _fmt(x: float, nd: int = 2) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    if abs(x) >= 1e4:
        return f"{x:.3g}"
    return f"{x:.{nd}f}"


def _divergence_cell(n: SamplerSummary) -> str:
    extra = n.extra or {}
    earlier = extra.get("earlier_runs") or ([extra["first_run"]] if "first_run" in extra else [])
    if not earlier:
        return str(n.divergences)
    before = ", ".join(f"{e['divergences']} at {e['target_accept']:g}" for e in earlier)
    return f"{n.divergences} at {extra.get('target_accept', 0):g} (before: {before})"


def report_markdown(results: list[TreeAgreement], cfg_name: str = "") -> str:
    """The agreement table, the efficiency table and the shortcuts' deviations."""
    lines = []
    n_pass = sum(r.passed for r in results)
    lines.append(f"**{n_pass} of {len(results)} trees pass** "
                 f"(max |z| <= {Z_MAX:g} over the comparisons with Pareto k-hat <= {KHAT_MAX}, "
                 f"R-hat <= {RHAT_MAX} on both sides, no divergences).")
    lines.append("")
    lines.append("| tree | tying | depth | K | nodes | rows | sparse | comparisons | max abs z "
                 "| E[max abs z] (q99) | k-hat > 0.7: n, max abs z, max abs Δp | R-hat fast "
                 "| R-hat NUTS | div. | fast: iterations, s | NUTS: draws, s | pass |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        s = r.shape
        e, q = r.expected_max
        unrel = (f"{r.n_unreliable}, {r.max_abs_z_unreliable:.1f}, "
                 f"{r.max_abs_dp_unreliable:.1e}" if r.n_unreliable else "0")
        if r.fast.khat_prob is None or r.nuts.khat_prob is None:
            unrel = "not computed"
        fx, nx = r.fast.extra or {}, r.nuts.extra or {}
        n_draws = nx.get("samples")
        lines.append(
            f"| {r.name} | {r.tying} | {s['depth']} | {s['K']} | {s['nodes']} | {s['rows']} "
            f"| {s['sparse_share']:.2f} | {r.n_comparisons - r.n_unreliable} "
            f"| {r.max_abs_z:.2f} | {e:.2f} ({q:.2f}) | {unrel} | {r.fast.max_rhat:.4f} "
            f"| {r.nuts.max_rhat:.4f} | {_divergence_cell(r.nuts)} "
            f"| {fx.get('n_iter', '-')}, {r.fast.seconds:.1f} "
            f"| {n_draws if n_draws else '-'}, {r.nuts.seconds:.0f} "
            f"| {'yes' if r.passed else '**no**'} |")
    total = sum(r.n_comparisons - r.n_unreliable for r in results)
    if results:
        e, q = expected_max_abs_z(total)
        worst = max(results, key=lambda r: r.max_abs_z)
        lines.append("")
        lines.append(f"All {total} reliable comparisons: max |z| = {worst.max_abs_z:.2f} "
                     f"({worst.name}); expected {e:.2f} under agreement (99th percentile "
                     f"{q:.2f}). Iterations and draws are per chain (4 chains each side); "
                     "seconds are whole runs (NUTS: JIT compilation included).")
    # efficiency
    lines.append("")
    lines.append("ESS per second (bulk ESS; concentrations: smallest over groups; leaves: median "
                 "over leaf probabilities; whole runs):")
    lines.append("")
    lines.append("| tree | conc. fast | conc. NUTS | ratio | leaves fast | leaves NUTS | ratio |")
    lines.append("|---|---|---|---|---|---|---|")
    ratios_c, ratios_l = [], []
    for r in results:
        e = r.ess_per_second()
        ratios_c.append(e["ratio_conc"])
        ratios_l.append(e["ratio_leaf"])
        lines.append(f"| {r.name} | {_fmt(e['fast_conc'], 0)} | {_fmt(e['nuts_conc'], 1)} "
                     f"| {_fmt(e['ratio_conc'], 0)} | {_fmt(e['fast_leaf'], 0)} "
                     f"| {_fmt(e['nuts_leaf'], 1)} | {_fmt(e['ratio_leaf'], 0)} |")
    if results:
        lines.append("")
        lines.append(f"Median ratio over trees: concentrations {_fmt(_median(ratios_c), 0)}x, "
                     f"leaves {_fmt(_median(ratios_l), 0)}x (target >= 100x).")
    # shortcuts
    with_var = [r for r in results if r.variants]
    if with_var:
        lines.append("")
        lines.append("Deviation of the reference implementation's shortcuts from the ground truth "
                     "(NUTS), same trees and run lengths as fastpath exact: max |z| against NUTS "
                     "(and against fastpath exact), max |Δp| over all node probabilities, and the "
                     "largest relative deviation of a concentration's posterior mean.")
        lines.append("")
        lines.append("| tree | window: max abs z | window: max abs Δp | window: Δα/α "
                     "| root ref.: max abs z | root ref.: max abs Δp | root ref.: Δα/α "
                     "| both: max abs z | both: max abs Δp | both: Δα/α |")
        lines.append("|---|---|---|---|---|---|---|---|---|---|")
        for r in with_var:
            cells = []
            for v in ("window", "root_reference", "reference_code"):
                d = r.variants[v]
                cells += [f"{d['max_abs_z_vs_nuts']:.1f} ({d['max_abs_z_vs_exact']:.1f})",
                          f"{d['max_abs_dp_vs_nuts']:.4f}",
                          f"{100 * d['conc_rel_dev_vs_nuts']:+.1f}%"]
            lines.append(f"| {r.name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot_z(results: list[TreeAgreement], path: str | Path) -> None:
    """Strip plot of every z-score, one column per tree, with the +-4 pass band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(6.0, 0.45 * len(results) + 2), 5.0))
    rng = np.random.default_rng(0)
    for i, r in enumerate(results):
        ok = r.reliable
        zp = np.ravel(r.z_prob)
        zc = np.ravel(r.z_conc)
        okp, okc = ok[: zp.size], ok[zp.size:]
        xp = i + rng.uniform(-0.25, 0.25, zp.size)
        ax.scatter(xp[okp], np.clip(zp[okp], -6, 6), s=4, alpha=0.5, color="tab:blue", lw=0)
        ax.scatter(xp[~okp], np.clip(zp[~okp], -6, 6), s=8, alpha=0.6, color="0.4",
                   marker="x", lw=0.6)
        xc = i + rng.uniform(-0.1, 0.1, zc.size)
        ax.scatter(xc[okc], np.clip(zc[okc], -6, 6), s=18, marker="D", color="tab:orange", lw=0)
        ax.scatter(xc[~okc], np.clip(zc[~okc], -6, 6), s=18, marker="D", color="0.4", lw=0)
        e, _ = r.expected_max
        ax.plot([i - 0.35, i + 0.35], [e, e], color="grey", lw=1)
        ax.plot([i - 0.35, i + 0.35], [-e, -e], color="grey", lw=1)
    ax.axhline(Z_MAX, color="red", ls="--", lw=1)
    ax.axhline(-Z_MAX, color="red", ls="--", lw=1)
    ax.set_xticks(range(len(results)))
    ax.set_xticklabels([r.name for r in results], rotation=70, ha="right", fontsize=7)
    ax.set_ylabel("z = (fastpath - NUTS) / combined MCSE")
    ax.set_ylim(-6.2, 6.2)
    ax.scatter([], [], s=8, color="tab:blue", label="node probabilities")
    ax.scatter([], [], s=18, marker="D", color="tab:orange", label="concentrations")
    ax.scatter([], [], s=8, marker="x", color="0.4", label=f"k-hat > {KHAT_MAX} (not tested)")
    ax.plot([], [], color="grey", label="expected max |z|")
    ax.plot([], [], color="red", ls="--", label="pass band")
    ax.legend(fontsize=7, loc="lower left", ncol=5)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)
