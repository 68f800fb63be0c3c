"""NUTS on the hierarchical Dirichlet model: posterior means, MCSEs, ArviZ DataTree, diagnostics.

Typical use::

    from hdpbn_ppl.infer import fit
    res = fit(tree, tying="level", n_chains=4, burn_in=1000, samples=1000, seed=0)
    res.probabilities        # (n_nodes, K) posterior means, fastpath's node order
    res.mcse                 # (n_nodes, K) Monte-Carlo standard errors
    res.concentration_mean   # (G,) per tying group, fastpath.counts.tying_groups order
    res.diagnostics          # divergences, max R-hat, min bulk / tail ESS, BFMI, trustworthy
    res.datatree             # ArviZ 1.x DataTree with posterior and sample_stats

The layout is the one of :class:`fastpath.estimate.hdp.HDPResult` (root row = phi_root,
internal rows = phi, leaf rows = theta), so the two samplers compare array to array with z-scores.

:func:`fit` runs in double precision (:func:`hdpbn_ppl.model.double_precision`) whatever the
process's JAX setting, and leaves that setting as it was.

Leaf rows are Rao-Blackwellised: each draw contributes E[theta | phi_parent, alpha, n] =
(n + alpha phi_parent) / (N + alpha) (the leaves are integrated out, see
:mod:`hdpbn_ppl.reparam`), whose average is the posterior mean of theta.
"""

from __future__ import annotations

import math
import os
import time
import warnings
from dataclasses import asdict, dataclass, field
from functools import partial

import arviz as az
import jax
import jax.numpy as jnp
import numpy as np

# The plain ``import numpyro`` must run before the from-imports of its submodules: importing
# ArviZ puts a lazy placeholder for numpyro in sys.modules (arviz_base's lazy_loader), and a
# first import of ``numpyro.distributions`` through it leaves that package without the
# attribute ``distribution``, which numpyro.factor uses. The plain import loads numpyro whole.
import numpyro
from numpyro.distributions import biject_to
from numpyro.infer.hmc import hmc
from numpyro.infer.util import get_potential_fn

from fastpath.counts import ContextTree
from fastpath.estimate import ESS_PER_CHAIN_MIN, RHAT_MAX, mcse_mean

from .model import HDPTree, double_precision
from .reparam import sampling_model

__all__ = [
    "RETRIES",
    "NUTSDiagnostics",
    "PPLResult",
    "UntrustworthyRunWarning",
    "choose_chain_method",
    "fit",
]

# thresholds of :class:`NUTSDiagnostics` (Vehtari et al. 2021; Betancourt 2016): R-hat and ESS
# per chain are fastpath's (RHAT_MAX, ESS_PER_CHAIN_MIN), so both samplers pass the same bar
BFMI_MIN = 0.3
DIVERGENCE_FRACTION_MAX = 0.001

#: frames under this package are skipped when a warning names a line
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


class UntrustworthyRunWarning(UserWarning):
    """A NUTS run failed a convergence check; its estimates must not be used as ground truth."""


@dataclass(frozen=True)
class NUTSDiagnostics:
    """Convergence summary of a NUTS run; ``trustworthy`` is False when any check fails.

    R-hat (rank-normalised, split) and ESS (bulk and tail) are taken over every reported
    quantity: each concentration and each node probability. Checks: divergent transitions at
    most 0.1 % of the draws, max R-hat <= 1.01, min bulk and tail ESS >= 100 per chain,
    min E-BFMI >= 0.3, at most 1 % of transitions at the maximum tree depth (fewer are listed
    in ``notes``). ``seconds`` is the wall time of all attempts, compilation included.
    """

    divergences: int
    n_draws: int
    max_rhat: float
    min_ess_bulk: float
    min_ess_tail: float
    min_bfmi: float
    max_tree_depth_hits: int
    seconds: float
    trustworthy: bool
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    attempts: tuple[dict, ...] = ()

    def as_dict(self) -> dict:
        d = asdict(self)
        d["problems"] = list(self.problems)
        d["notes"] = list(self.notes)
        d["attempts"] = list(self.attempts)
        return d

    def summary(self) -> str:
        head = "trustworthy" if self.trustworthy else "NOT TRUSTWORTHY"
        text = (
            f"{head}: {self.divergences} divergent of {self.n_draws} draws, "
            f"max R-hat {self.max_rhat:.4f}, min ESS bulk {self.min_ess_bulk:.0f} / "
            f"tail {self.min_ess_tail:.0f}, min E-BFMI {self.min_bfmi:.2f}, "
            f"{self.seconds:.1f} s"
        )
        if self.problems:
            text += " -- " + "; ".join(self.problems)
        if self.notes:
            text += " (" + "; ".join(self.notes) + ")"
        if len(self.attempts) > 1:
            text += f" [after {len(self.attempts) - 1} retry: " + ", ".join(
                f"{a['divergences']} divergent at target {a['target_accept']}"
                for a in self.attempts[:-1]) + "]"
        return text


@dataclass(frozen=True, eq=False)
class PPLResult:
    """Posterior summaries of one tree in fastpath's layout.

    Attributes
    ----------
    tree : ContextTree
    tying : str
    groups : (n_nodes,) int64, tying group of every node (-1 for the root)
    probabilities : (n_nodes, K) posterior means of the node probability vectors
    mcse : (n_nodes, K) their Monte-Carlo standard errors
    concentration_mean : (G,) posterior means of the concentrations
    concentration_mcse : (G,)
    diagnostics : NUTSDiagnostics
    datatree : arviz DataTree (posterior: alpha, p [node, value] and the sampler's sites;
        sample_stats: diverging, energy, tree_depth, n_steps, accept_prob, step_size, lp)
    """

    tree: ContextTree
    tying: str
    groups: np.ndarray
    probabilities: np.ndarray
    mcse: np.ndarray
    concentration_mean: np.ndarray
    concentration_mcse: np.ndarray
    diagnostics: NUTSDiagnostics
    datatree: object = field(repr=False)

    @property
    def n_groups(self) -> int:
        return int(self.concentration_mean.shape[0])

    def query(self, paths) -> np.ndarray:
        """Probability vectors for conditioning paths, backing off to the deepest existing node."""
        return np.array(self.probabilities[self.tree.find(paths)], copy=True)


def choose_chain_method(chains: int) -> str:
    """How to run the chains.

    ``parallel`` when several devices can share the chains evenly (e.g. CPU devices made with
    ``XLA_FLAGS=--xla_force_host_platform_device_count=N``, as ``python -m hdpbn_ppl`` does);
    otherwise ``vectorized`` on an accelerator (chains batched in lockstep) and ``sequential``
    on a CPU, where batching the chains saves nothing and lockstep wastes steps.
    """
    if chains <= 1:
        return "sequential"
    n_dev = jax.local_device_count()
    if n_dev >= 2 and chains % min(n_dev, chains) == 0:
        return "parallel"
    return "sequential" if jax.default_backend() == "cpu" else "vectorized"


def _node_draws(tree: HDPTree, samples: dict) -> np.ndarray:
    """(chains, draws, n_nodes, K) node probabilities in the tree's node order."""
    parts = [np.asarray(samples[name]) for name in tree.site_names()]
    return np.concatenate(parts, axis=2)


def fit(
    tree: ContextTree,
    *,
    tying: str = "level",
    n_chains: int = 4,
    burn_in: int = 1000,
    samples: int = 1000,
    seed: int = 0,
    alpha0: float = 2.0,
    concentration_shape: float = 2.0,
    concentration_rate: float = 1.0,
    target_accept: float = 0.95,
    max_tree_depth: int = 10,
    dense_mass: bool = False,
    chain_method: str = "auto",
    retries: tuple = (),
    reparam: str = "ratio",
    warn: bool = True,
) -> PPLResult:
    """Run NUTS on the tree's hierarchical Dirichlet model and summarise it.

    Parameters
    ----------
    tree : ContextTree
    tying : {"level", "same-parent", "single", "none"}
    n_chains, burn_in, samples : int
        ``samples`` draws per chain are kept after ``burn_in`` steps, NUTS's warm-up (its step
        size and mass matrix adapted, the draws discarded). The names are those of
        :class:`fastpath.HDPOptions` for the same quantities.
    seed : int
    alpha0, concentration_shape, concentration_rate : float
        Root concentration (fixed) and the Gamma(shape, rate) prior of the concentrations.
    target_accept : float
        NUTS target acceptance probability (0.95: smaller steps than the default 0.8, which
        removes the rare divergences of sparse trees for a few more leapfrog steps;
        docs/model.md, "Acceptance on the validation suite").
    chain_method : {"auto", "sequential", "vectorized", "parallel"}
        See :func:`choose_chain_method`.
    retries : sequence of (target_accept, burn_in_factor, max_tree_depth)
        While a run has more divergent transitions than the diagnostics allow (0.1 % of the
        draws), run again with the next settings: smaller steps, longer adaptation and deeper
        trees, the standard remedies for the funnel necks of sparse trees. ``RETRIES`` is the
        setting of ``python -m hdpbn_ppl``. The result reports the run that was kept and
        ``diagnostics.attempts`` every run's (target_accept, burn_in, divergences, seconds).
    reparam : {"ratio", "split"}
        The reparameterisation of the internal nodes (:mod:`hdpbn_ppl.reparam`); ``split`` is
        the earlier formulation, kept for comparison.
    warn : bool
        Emit :class:`UntrustworthyRunWarning` when a check fails.

    Returns
    -------
    PPLResult

    Notes
    -----
    The run is in double precision (:func:`hdpbn_ppl.model.double_precision`), whatever the
    process's JAX setting, which is left as it was.
    """
    if n_chains < 1 or burn_in < 1 or samples < 1:
        raise ValueError("n_chains, burn_in and samples must be >= 1")
    chains, warmup = n_chains, burn_in
    if tree.depth == 0:
        return _fit_root_only(tree, tying, alpha0)
    model_tree = HDPTree.from_tree(
        tree, tying, alpha0=alpha0, concentration_shape=concentration_shape,
        concentration_rate=concentration_rate,
    )
    method = choose_chain_method(chains) if chain_method == "auto" else chain_method
    # scoped: the model needs double precision (hdpbn_ppl.model), the caller's setting stays
    with double_precision():
        potential_fn, postprocess_fn, init = _prepare(model_tree, chains, seed, reparam)
        settings = [(target_accept, 1, max_tree_depth), *retries]
        attempts = []
        for i, (target, factor, depth) in enumerate(settings):
            start = time.perf_counter()
            unconstrained, extra = _run_nuts(
                potential_fn, init, chains=chains, warmup=int(warmup * factor), samples=samples,
                seed=seed + i, target_accept=target, max_tree_depth=depth, method=method,
                dense_mass=dense_mass,
            )
            seconds = time.perf_counter() - start
            divergences = int(np.asarray(extra["diverging"]).sum())
            attempts.append({"target_accept": target, "burn_in": int(warmup * factor),
                             "max_tree_depth": depth, "divergences": divergences,
                             "seconds": round(seconds, 3)})
            if divergences <= DIVERGENCE_FRACTION_MAX * chains * samples:
                break
        post = _constrain(postprocess_fn, unconstrained)
    total = sum(a["seconds"] for a in attempts)
    return _summarise(tree, tying, model_tree, post, extra, total, depth, warn,
                      tuple(attempts))


#: retry settings of the command line: (target acceptance, burn-in factor, max tree depth)
RETRIES = ((0.99, 2, 12),)


def _run_nuts(potential_fn, init, *, chains, warmup, samples, seed, target_accept,
              max_tree_depth, method, dense_mass=False):
    """NUTS (NumPyro's kernel) driven by one jitted function: initialisation, warmup
    (step size by dual averaging, diagonal mass matrix by Welford windows) and sampling.

    NumPyro's ``MCMC`` runs the initialisation eagerly, operation by operation, and recompiles
    its loop for every sequential chain; on a CPU that costs more than the sampling itself.
    Here everything is traced once: ``vectorized`` vmaps the chains, ``sequential`` runs them
    one after another with ``lax.map`` (same compiled body), ``parallel`` pmaps them over
    devices.
    """
    init_kernel, sample_kernel = hmc(potential_fn=potential_fn, algo="NUTS")
    n_iter = warmup + samples

    def record(state):
        """What is kept of each transition: the position and the sample statistics."""
        return {
            "z": state.z,
            "diverging": state.diverging,
            "energy": state.energy,
            "num_steps": state.num_steps,
            "accept_prob": state.accept_prob,
            "potential_energy": state.potential_energy,
            "step_size": state.adapt_state.step_size,
        }

    def one_chain(z0, key):
        state = init_kernel(
            z0, warmup, target_accept_prob=target_accept, max_tree_depth=max_tree_depth,
            dense_mass=dense_mass, rng_key=key,
        )

        def step(carry, i):
            state, buf = carry
            state = sample_kernel(state)
            row = record(state)
            j = jnp.maximum(i - warmup, 0)
            keep = i >= warmup
            buf = jax.tree.map(
                lambda b, v: b.at[j].set(jnp.where(keep, v, b[j])), buf, row
            )
            return (state, buf), None

        proto = record(state)
        buf = jax.tree.map(lambda v: jnp.zeros((samples, *jnp.shape(v)), jnp.result_type(v)),
                           proto)
        (_, buf), _ = jax.lax.scan(step, (state, buf), jnp.arange(n_iter))
        return buf

    keys = jax.random.split(jax.random.PRNGKey(seed), chains)
    if method == "vectorized":
        run = jax.jit(jax.vmap(one_chain))
    elif method == "sequential":
        run = jax.jit(lambda z, k: jax.lax.map(lambda a: one_chain(*a), (z, k)))
    elif method == "parallel":
        n_dev = min(jax.local_device_count(), chains)
        if chains % n_dev:
            raise ValueError(f"parallel needs chains ({chains}) divisible by devices ({n_dev})")
        per = chains // n_dev
        mapped = jax.pmap(lambda z, k: jax.lax.map(lambda a: one_chain(*a), (z, k)))

        def run(z, k):
            split = jax.tree.map(lambda x: x.reshape(n_dev, per, *x.shape[1:]), (z, k))
            out = mapped(*split)
            return jax.tree.map(lambda x: x.reshape(chains, *x.shape[2:]), out)
    else:
        raise ValueError(f"chain_method must be auto, sequential, vectorized or parallel, "
                         f"got {method!r}")
    out = run(init, keys)
    out = jax.tree.map(np.asarray, out)
    unconstrained = out.pop("z")
    return unconstrained, out


def _latent_sites(model_tree: HDPTree, model) -> dict:
    """Name -> (shape, support) of the sampler's latent sites, found by an abstract trace.

    ``jax.eval_shape`` runs the model on abstract values: nothing is compiled or computed (an
    eager trace would compile every small operation of the model separately).
    """
    sites = {}

    def run(key):
        tr = numpyro.handlers.trace(numpyro.handlers.seed(model, key)).get_trace(model_tree)
        for name, site in tr.items():
            if site["type"] == "sample" and not site["is_observed"]:
                sites[name] = (tuple(site["value"].shape), site["fn"].support)
        return 0

    jax.eval_shape(run, jax.random.PRNGKey(0))
    return sites


def _prepare(model_tree: HDPTree, chains: int, seed: int, reparam: str = "ratio"):
    """Potential and postprocessing functions, and initial points (one per chain).

    Initial points are uniform in (-1, 1) on the unconstrained scale (NumPyro's
    ``init_to_uniform`` with radius 1). Every site of the sampling model is finite with finite
    gradients there (the concentrations are floored, see :mod:`hdpbn_ppl.reparam`); a chain that
    nevertheless produced non-finite values is reported by the diagnostics.
    """
    model = partial(sampling_model, kind=reparam)
    sites = _latent_sites(model_tree, model)
    transforms = {name: biject_to(support) for name, (_, support) in sites.items()}
    potential_fn, postprocess_fn = get_potential_fn(
        model, transforms, replay_model=True, model_args=(model_tree,)
    )
    rng = np.random.default_rng([seed, 0x1D1])
    init = {
        name: rng.uniform(-1.0, 1.0, size=(chains, *shape)) for name, (shape, _) in sites.items()
    }
    return potential_fn, postprocess_fn, init


def _constrain(postprocess_fn, unconstrained: dict) -> dict:
    """Constrained values and deterministic sites of every draw, (chains, draws, ...)."""
    leaves = jax.tree.leaves(unconstrained)
    chains, draws = leaves[0].shape[:2]
    flat = {k: np.asarray(v).reshape(chains * draws, *v.shape[2:])
            for k, v in unconstrained.items()}
    out = jax.jit(jax.vmap(postprocess_fn))(flat)
    return {k: np.asarray(v).reshape(chains, draws, *np.shape(v)[1:]) for k, v in out.items()}


def _summarise(tree, tying, model_tree, post, extra, seconds, max_tree_depth, warn,
               attempts=()) -> PPLResult:
    chains, draws = np.asarray(post["alpha"]).shape[:2]
    p = _node_draws(model_tree, post)
    alpha = np.asarray(post["alpha"])

    dims = {"alpha": ["group"], "p": ["node", "value"]}
    coords = {"group": np.arange(model_tree.n_groups), "node": np.arange(tree.n_nodes),
              "value": np.arange(tree.n_values)}
    posterior = {"alpha": alpha, "p": p}
    for name, value in post.items():
        if name not in posterior and name != "n":
            posterior[name] = np.asarray(value)
    for name in model_tree.site_names():
        dims[name] = [f"{name}_node", "value"]
    n_steps = np.asarray(extra["num_steps"])
    sample_stats = {
        "diverging": np.asarray(extra["diverging"]),
        "energy": np.asarray(extra["energy"]),
        "lp": -np.asarray(extra["potential_energy"]),
        "n_steps": n_steps,
        "tree_depth": np.floor(np.log2(np.maximum(n_steps, 1))).astype(np.int64) + 1,
        "acceptance_rate": np.asarray(extra["accept_prob"]),
        "step_size": np.asarray(extra["step_size"]),
    }
    dt = az.from_dict(
        {"posterior": posterior, "sample_stats": sample_stats}, coords=coords, dims=dims
    )

    quantities = {"alpha": alpha, "p": p}
    rhat, ess_b, ess_t = [], [], []
    for x in quantities.values():
        flat = x.reshape(chains, draws, -1)
        varying = flat.std(axis=(0, 1)) > 0
        if not varying.any():
            continue
        flat = flat[:, :, varying]
        if chains > 1:
            rhat.append(np.asarray(az.rhat(flat, chain_axis=0, draw_axis=1)))
        ess_b.append(np.asarray(az.ess(flat, method="bulk", chain_axis=0, draw_axis=1)))
        ess_t.append(np.asarray(
            az.ess(flat, method="tail", prob=(0.05, 0.95), chain_axis=0, draw_axis=1)
        ))

    def _ext(parts, fn, default):
        vals = np.concatenate([np.ravel(v) for v in parts]) if parts else np.array([])
        vals = vals[np.isfinite(vals)]
        return float(fn(vals)) if vals.size else default

    max_rhat = _ext(rhat, np.max, math.nan)
    min_ess_bulk = _ext(ess_b, np.min, math.nan)
    min_ess_tail = _ext(ess_t, np.min, math.nan)
    energy = np.asarray(extra["energy"])
    bfmi = np.asarray(az.bfmi(energy, chain_axis=0, draw_axis=1)) if draws > 2 else np.nan
    min_bfmi = float(np.min(bfmi))
    divergences = int(np.asarray(extra["diverging"]).sum())
    depth_hits = int((n_steps >= 2**max_tree_depth - 1).sum())

    problems = []
    n_draws = chains * draws
    if divergences > DIVERGENCE_FRACTION_MAX * n_draws:
        problems.append(f"{divergences} divergent transitions")
    if chains < 2:
        problems.append("a single chain: R-hat cannot be computed")
    elif not max_rhat <= RHAT_MAX:
        problems.append(f"max R-hat {max_rhat:.3f} > {RHAT_MAX}")
    ess_min = ESS_PER_CHAIN_MIN * chains
    if not min_ess_bulk >= ess_min:
        problems.append(f"min bulk ESS {min_ess_bulk:.0f} < {ess_min:.0f}")
    if not min_ess_tail >= ess_min:
        problems.append(f"min tail ESS {min_ess_tail:.0f} < {ess_min:.0f}")
    if not min_bfmi >= BFMI_MIN:
        problems.append(f"min E-BFMI {min_bfmi:.2f} < {BFMI_MIN}")
    notes = []
    if depth_hits:
        # an efficiency warning (Stan's convention), not a validity failure unless frequent
        msg = f"{depth_hits} transitions hit the maximum tree depth"
        (problems if depth_hits > 0.01 * n_draws else notes).append(msg)
    diag = NUTSDiagnostics(
        divergences=divergences,
        n_draws=n_draws,
        max_rhat=max_rhat,
        min_ess_bulk=min_ess_bulk,
        min_ess_tail=min_ess_tail,
        min_bfmi=min_bfmi,
        max_tree_depth_hits=depth_hits,
        seconds=seconds,
        trustworthy=not problems,
        problems=tuple(problems),
        notes=tuple(notes),
        attempts=tuple(attempts),
    )
    if warn and problems:
        warnings.warn(
            "NUTS run NOT TRUSTWORTHY: " + "; ".join(problems), UntrustworthyRunWarning,
            skip_file_prefixes=(_PACKAGE_DIR,),  # the caller's line, however deep the call
        )

    probabilities = p.mean(axis=(0, 1))
    mcse = mcse_mean(p)
    return PPLResult(
        tree=tree,
        tying=tying,
        groups=model_tree.groups,
        probabilities=probabilities,
        mcse=mcse,
        concentration_mean=alpha.mean(axis=(0, 1)),
        concentration_mcse=mcse_mean(alpha),
        diagnostics=diag,
        datatree=dt,
    )


def _fit_root_only(tree: ContextTree, tying: str, alpha0: float) -> PPLResult:
    """A tree without conditioning variables: phi_root | n ~ Dir(n + alpha0 / K), in closed form."""
    k = tree.n_values
    post = tree.counts[0] + alpha0 / k
    # exact: no concentration is sampled and the posterior is conjugate
    diag = NUTSDiagnostics(0, 0, math.nan, math.inf, math.inf, math.inf, 0, 0.0, True)
    return PPLResult(
        tree=tree,
        tying=tying,
        groups=np.full(1, -1, dtype=np.int64),
        probabilities=(post / post.sum())[None, :],
        mcse=np.zeros((1, k)),
        concentration_mean=np.zeros(0),
        concentration_mcse=np.zeros(0),
        diagnostics=diag,
        datatree=None,
    )
