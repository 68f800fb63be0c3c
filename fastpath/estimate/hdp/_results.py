"""What the HDP sampler returns for one tree: :class:`HDPResult` and its traces."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd

from ...counts._context_tree import ContextTree, _read_only
from .._convergence import effective_sample_size, split_rhat
from ._options import HDPOptions
from ._stopping import StopCheck, rows_mcse


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
        log P(data, t, alpha) of the augmented model (paper, eq. 11, root treatment included, up
        to the data's multinomial coefficient; the concentrations' Gamma prior when they are
        sampled).
    node_ids : (n_traced,) int64
    node_probabilities : (n_chains, n_trace, n_traced, K)
        Rao-Blackwellised estimates of the traced nodes at each trace point.
    rows_probability : (n_chains, n_kept)
        At every post-burn-in iteration (not thinned), the mean over the training rows of the
        Rao-Blackwellised probability each row reads at its leaf: what predictions read, in
        one number per iteration (its split R-hat is the fit's check that the chains agree).
    """

    iterations: np.ndarray
    burn_in: int
    concentrations: np.ndarray
    log_joint: np.ndarray
    node_ids: np.ndarray
    node_probabilities: np.ndarray
    rows_probability: np.ndarray = field(default_factory=lambda: np.zeros((1, 0)))

    @property
    def kept(self) -> np.ndarray:
        """Boolean mask of the post-burn-in trace points."""
        return self.iterations > self.burn_in


@dataclass(frozen=True, eq=False)
class HDPResult:
    """HDP estimate of one context tree (all arrays read-only; with one chain,
    ``probabilities`` is a view of ``chain_probabilities``).

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
    n_iterations : int
        Iterations each chain ran (``options.n_iter``, or where ``n_iter="auto"`` stopped).
    stop_reason : {"n_iter", "tolerance", "max_iter"}
        Why the chains stopped: a fixed length, the adaptive rule met, or ``max_iter`` reached
        with the rule unmet (:mod:`fastpath.estimate.hdp._stopping`).
    stop_check : StopCheck or None
        The stopping rule at the last block boundary (``n_iter="auto"`` only).
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
    n_iterations: int = 0
    stop_reason: str = "n_iter"
    stop_check: StopCheck | None = None

    @cached_property
    def rows_mcse(self) -> float:
        """Root mean square over the training rows of the MCSE of the probability each row
        reads at its leaf, with two or more chains at least their between-chain standard
        error (:func:`~fastpath.estimate.hdp._stopping.rows_mcse`; NaN when the run was too
        short to estimate it): what ``mcse_tolerance`` bounds by default."""
        return rows_mcse(self.tree, self.mcse, self.chain_probabilities)

    @property
    def rows_rhat(self) -> float:
        """Split R-hat of the rows' probability trace over the chains (NaN with one chain or a
        trace that never moves)."""
        rows = np.asarray(self.trace.rows_probability, dtype=float)
        if rows.shape[0] < 2 or rows.shape[1] < 4:
            return math.nan
        return split_rhat(rows)

    def without_traces(self) -> HDPResult:
        """This result with traces of no points (:attr:`HDPOptions.keep_traces`): every other
        array shared with this one. The traces' arrays keep their other dimensions (chains,
        groups, traced nodes), so that what reads them finds nothing rather than fails."""
        tr = self.trace
        n_chains = tr.log_joint.shape[0]
        empty = HDPTrace(
            iterations=_read_only(np.zeros(0, dtype=np.int64)),
            burn_in=tr.burn_in,
            concentrations=_read_only(np.zeros((n_chains, 0, *tr.concentrations.shape[2:]))),
            log_joint=_read_only(np.zeros((n_chains, 0))),
            node_ids=tr.node_ids,
            node_probabilities=_read_only(
                np.zeros((n_chains, 0, *tr.node_probabilities.shape[2:]))),
            rows_probability=_read_only(np.zeros((n_chains, 0))),
        )
        return dataclasses.replace(self, trace=empty)

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

        Raises
        ------
        ValueError
            When the result kept no trace (``HDPOptions(keep_traces=False)``): there is
            nothing to export, and ArviZ would build a posterior of zero draws.
        """
        if self.trace.iterations.size == 0:
            raise ValueError(
                "to_arviz needs the chains' traces, and this result kept none "
                "(HDPOptions(keep_traces=False)): fit with keep_traces=True to export them")
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
            f"HDPResult({self.tree!r}, n_iter={self.n_iterations}, "
            f"chains={self.options.n_chains}, seconds={self.seconds:.3f})"
        )
