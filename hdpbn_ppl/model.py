"""The hierarchical Dirichlet model of one context tree, written as the paper writes it.

Paper (Petitjean et al. 2018, Machine Learning 107, doi:10.1007/s10994-018-5718-0), section 4.1
("Model"): for the conditional probability table P(X_c | y, x_1, ..., x_n) -- n parents besides
the class, so a context tree of depth n + 1: the root at depth 0, the nodes of y at depth 1, of
x_i at depth i + 1, the leaves at depth n + 1 --

    phi_{X_c}                  ~ Dir(1/|X_c| * 1, alpha_0)                      (root, depth 0)
    phi_{X_c | y}              ~ Dir(phi_{X_c}, alpha_y)                        (depth 1)
    phi_{X_c | y, x_1..x_i}    ~ Dir(phi_{X_c | y, x_1..x_{i-1}}, alpha_{y, x_1..x_i})   i = 1..n-1
    theta_{X_c | y, x_1..x_n}  ~ Dir(phi_{X_c | y, x_1..x_{n-1}}, alpha_{y, x_1..x_n})   (leaves)
    n_{X_c | y, x_1..x_n}      ~ Multinomial(theta_{X_c | y, x_1..x_n}, n_{. | y, x_1..x_n})

with the paper's two-argument Dirichlet Dir(mean, concentration) = Dirichlet(concentration * mean)
and the concentrations tied into groups (none / same-parent / level / single, see
:func:`fastpath.counts.tying_groups`). Two choices are not the paper's but its reference code's:
each group's concentration is drawn from Gamma(shape, rate) with shape 2, rate 1 by default (the
paper's experiments use nu_0 = mu_0 = 0, an improper empirical-Bayes prior, section 4.4.2), and
alpha_0 is fixed at 2 by default (the paper gives no value).

:func:`hdp_model` is that model and nothing else: one batched Dirichlet per depth of the tree,
gathered by parent index, so a tree with thousands of nodes is a handful of vectorised sample
statements and compiles once. It is the *readable* model; NUTS does not run on it directly. The
two exact transformations that make NUTS reliable on deep, sparse trees -- integrating the leaves
out (:func:`hdpbn_ppl.reparam.collapse_leaves`) and a per-node split of each Dirichlet by what
the node's subtree observed (:class:`hdpbn_ppl.reparam.RatioDirichletReparam`) -- are applied
to it from the outside, as NumPyro effect handlers (see :func:`hdpbn_ppl.reparam.sampling_model`).

Double precision is part of the model: never-observed categories of deep, sparse trees sit at
probabilities near 1e-40, which single precision flushes to zero. The module does not switch it
on for the whole process; :func:`hdp_model` refuses to run in single precision, and
:func:`double_precision` switches it on for a block of code (``hdpbn_ppl.infer.fit`` runs inside
it).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from fastpath.counts import ContextTree, tying_groups

__all__ = ["OBSERVED", "HDPTree", "check_double_precision", "double_precision", "hdp_model"]

#: default for ``hdp_model(..., counts=OBSERVED)``: condition on the tree's leaf counts
OBSERVED = "observed"


def double_precision():
    """Run JAX in double precision inside a ``with`` block, whatever the process's setting.

    The setting of the rest of the program is left as it was (JAX's scoped ``enable_x64``
    context manager). :func:`hdpbn_ppl.infer.fit` runs inside it; use it to trace the model
    yourself::

        with double_precision():
            trace = handlers.trace(handlers.seed(hdp_model, 0)).get_trace(tree)

    A program that uses double precision throughout can instead switch it on once, at its
    start: ``jax.config.update("jax_enable_x64", True)`` (or ``numpyro.enable_x64()``, or the
    environment variable ``JAX_ENABLE_X64=1`` set before JAX starts).

    Returns
    -------
    context manager
    """
    if hasattr(jax, "enable_x64"):  # recent JAX
        return jax.enable_x64(True)
    from jax.experimental import enable_x64  # earlier JAX: the same context manager

    return enable_x64()


def check_double_precision() -> None:
    """Raise ``RuntimeError`` unless JAX computes in double precision here.

    Raises
    ------
    RuntimeError
        With the ways to switch double precision on (see :func:`double_precision`).
    """
    # the dtype a float64 array gets here: follows the global setting and a scoped one alike
    if jax.dtypes.canonicalize_dtype(np.float64) != np.float64:
        raise RuntimeError(
            "hdpbn_ppl's model needs JAX in double precision (never-observed categories of "
            "deep, sparse trees sit near 1e-40, which single precision flushes to zero). "
            "hdpbn_ppl.infer.fit switches it on for its own run; to run the model yourself, "
            "do it inside `with hdpbn_ppl.model.double_precision():`, or switch it on for the "
            "whole program with jax.config.update('jax_enable_x64', True) (or set "
            "JAX_ENABLE_X64=1 before JAX starts)."
        )


@dataclass(frozen=True, eq=False)
class HDPTree:
    """The static inputs of :func:`hdp_model`: a context tree cut into levels, plus the prior.

    Build with :meth:`from_tree`. Everything is a NumPy array or a Python number: the model
    closes over them, so they are compile-time constants of the jitted sampler.

    Attributes
    ----------
    tree : ContextTree
    tying : str
    groups : ndarray of int64, shape (n_nodes,)
        Concentration group of every node (``-1`` for the root), as in fastpath.
    n_groups : int
    parent : tuple of ndarray
        ``parent[d]``: for the nodes of depth ``d`` (``d >= 1``), the index of their parent among
        the nodes of depth ``d - 1``. ``parent[0]`` is an empty array.
    group : tuple of ndarray
        ``group[d]``: concentration group of the nodes of depth ``d`` (``group[0]`` is ``[-1]``).
    observed : tuple of ndarray of bool
        ``observed[d]``, shape (nodes at depth d, K): whether the node's subtree has data for the
        category. Only the internal depths 0..depth-1 are listed.
    reference : tuple of ndarray of int
        ``reference[d]``: the most frequent category of each node of depth ``d`` (internal
        depths only), used as the reference of the reparameterisation's log-ratios.
    node_total : tuple of ndarray of float
        ``node_total[d]``: the number of rows under each node of depth ``d`` (internal depths).
    leaf_counts : ndarray of int64, shape (n_leaves, K)
    alpha0, concentration_shape, concentration_rate : float
    """

    tree: ContextTree
    tying: str
    groups: np.ndarray
    n_groups: int
    parent: tuple[np.ndarray, ...]
    group: tuple[np.ndarray, ...]
    observed: tuple[np.ndarray, ...]
    reference: tuple[np.ndarray, ...]
    node_total: tuple[np.ndarray, ...]
    leaf_counts: np.ndarray
    alpha0: float = 2.0
    concentration_shape: float = 2.0
    concentration_rate: float = 1.0

    @classmethod
    def from_tree(
        cls,
        tree: ContextTree,
        tying: str = "level",
        *,
        alpha0: float = 2.0,
        concentration_shape: float = 2.0,
        concentration_rate: float = 1.0,
    ) -> HDPTree:
        if tree.depth < 1:
            raise ValueError("the model needs a tree of depth >= 1 (at least the class)")
        if tree.n_rows == 0:
            raise ValueError("the tree holds no data")
        if not (alpha0 > 0 and concentration_shape > 0 and concentration_rate > 0):
            raise ValueError("alpha0, concentration_shape and concentration_rate must be positive")
        groups = tying_groups(tree, tying)
        parent, group = [np.zeros(0, np.int64)], [np.array([-1])]
        observed, reference, node_total = [], [], []
        for d in range(tree.depth + 1):
            lo, hi = int(tree.level_offsets[d]), int(tree.level_offsets[d + 1])
            if d:
                parent.append(np.asarray(tree.level(d).parent, dtype=np.int64))
                group.append(np.asarray(groups[lo:hi], dtype=np.int64))
            if d < tree.depth:
                observed.append(np.asarray(tree.counts[lo:hi] > 0))
                reference.append(np.asarray(tree.counts[lo:hi].argmax(axis=1), dtype=np.int64))
                node_total.append(np.asarray(tree.counts[lo:hi].sum(axis=1), dtype=float))
        return cls(
            tree=tree,
            tying=tying,
            groups=groups,
            n_groups=int(groups.max()) + 1,
            parent=tuple(parent),
            group=tuple(group),
            observed=tuple(observed),
            reference=tuple(reference),
            node_total=tuple(node_total),
            leaf_counts=np.asarray(tree.counts[tree.leaves], dtype=np.int64),
            alpha0=float(alpha0),
            concentration_shape=float(concentration_shape),
            concentration_rate=float(concentration_rate),
        )

    @property
    def depth(self) -> int:
        return self.tree.depth

    @property
    def n_values(self) -> int:
        return self.tree.n_values

    @property
    def leaf_totals(self) -> np.ndarray:
        return self.leaf_counts.sum(axis=1)

    def site_names(self) -> list[str]:
        """Node-probability sites in node order: ``phi_0`` (root) .. ``phi_{depth-1}``, ``theta``.
        """
        return [f"phi_{d}" for d in range(self.depth)] + ["theta"]


def hdp_model(tree: HDPTree, counts=OBSERVED):
    """The hierarchical Dirichlet model of a context tree (paper, section 4.1).

    Parameters
    ----------
    tree : HDPTree
    counts : array (n_leaves, K), None, or OBSERVED
        Leaf counts to condition on; ``OBSERVED`` (default) uses the tree's own counts and
        ``None`` samples them (prior predictive, with the tree's leaf totals).

    Raises
    ------
    RuntimeError
        When JAX runs in single precision (see :func:`double_precision`).
    """
    check_double_precision()  # at trace time: a Python check, not part of the compiled model
    if isinstance(counts, str) and counts == OBSERVED:
        counts = tree.leaf_counts
    # `depth` is the tree's depth, n + 1 in the paper's notation (n parents besides y)
    K, depth = tree.n_values, tree.depth

    # concentrations, one per tying group: alpha_g ~ Gamma(shape, rate)
    alpha = numpyro.sample(
        "alpha",
        dist.Gamma(tree.concentration_shape, tree.concentration_rate)
        .expand([tree.n_groups]).to_event(1),
    )

    # root: phi_{X_c} ~ Dir(1/|X_c| * 1, alpha_0)  (one node, kept as a batch of one)
    phi = numpyro.sample("phi_0", dist.Dirichlet(jnp.full((1, K), tree.alpha0 / K)))

    # internal depths d = 1..depth-1: phi_{X_c|y} (d = 1) and phi_{X_c|y,x_1..x_{d-1}} (d >= 2),
    # each ~ Dir(phi_{parent}, alpha_{group})
    for d in range(1, depth):
        a = alpha[tree.group[d]][:, None]
        phi = numpyro.sample(f"phi_{d}", dist.Dirichlet(a * phi[tree.parent[d]]))

    # leaves, depth n + 1: theta_{X_c|y,x_1..x_n} ~ Dir(phi_{parent}, alpha_{group})
    a = alpha[tree.group[depth]][:, None]
    theta = numpyro.sample("theta", dist.Dirichlet(a * phi[tree.parent[depth]]))

    # data: n_{X_c|y,x_1..x_n} ~ Multinomial(theta, n_{.|y,x_1..x_n})
    totals = tree.leaf_totals
    numpyro.sample(
        "n",
        dist.Multinomial(totals, theta, total_count_max=int(totals.max())),
        obs=counts,
    )
