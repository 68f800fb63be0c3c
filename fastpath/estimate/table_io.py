"""The single-table convention of ``hdpbn estimate`` and ``python -m hdpbn_ppl estimate``.

Input: a table whose first column is the child variable and whose other columns are the
conditioning variables in branching order (the reference implementation's convention, e.g. the
synthetic benchmark files). Every column is treated as nominal; values are coded in sorted order
(numbers numerically, strings lexicographically), missing values as a value of their own.

Output: one row per node of the context tree with ``depth``, one column per conditioning variable
(its value on the node's path, empty below the node's depth), ``n`` (the node's count total) and
``p_<value>`` for each child value, plus ``mcse_<value>`` when Monte-Carlo standard errors are
given. Both the fast sampler and the NumPyro model write this layout so that any two runs can be
compared node by node.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..counts.context_tree import ContextTree
from ..counts.counting import count_tree

__all__ = ["CodedTree", "node_frame", "read_estimate_table", "tree_from_frame"]


@dataclass(frozen=True)
class CodedTree:
    """A context tree with the labels of the values behind its integer codes."""

    tree: ContextTree
    child_name: str
    child_labels: tuple
    conditioning_names: tuple[str, ...]
    conditioning_labels: tuple[tuple, ...]


def _code_column(series: pd.Series) -> tuple[np.ndarray, tuple]:
    missing = series.isna().to_numpy()
    present = series[~missing]
    labels = list(pd.unique(present))
    try:
        labels = sorted(labels)
    except TypeError:  # mixed types: sort by text
        labels = sorted(labels, key=str)
    codes = np.empty(len(series), dtype=np.int64)
    codes[~missing] = pd.Categorical(present, categories=labels).codes
    if missing.any():
        codes[missing] = len(labels)
        labels.append(None)  # missing is a value of its own
    return codes, tuple(labels)


def tree_from_frame(frame: pd.DataFrame) -> CodedTree:
    """Code a child-first table and count it into a context tree."""
    if frame.shape[1] < 1 or frame.shape[0] < 1:
        raise ValueError("the table needs at least one column (the child) and one row")
    names = [str(c) for c in frame.columns]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"duplicated column names: {dup}")
    coded = [_code_column(frame.iloc[:, j]) for j in range(frame.shape[1])]
    child_codes, child_labels = coded[0]
    cond_codes = np.stack([c for c, _ in coded[1:]], axis=1) if len(coded) > 1 else np.zeros(
        (frame.shape[0], 0), np.int64
    )
    cond_labels = tuple(labels for _, labels in coded[1:])
    tree = count_tree(
        child_codes,
        cond_codes,
        len(child_labels),
        [len(lab) for lab in cond_labels],
        child_name=names[0],
        conditioning_names=names[1:],
    )
    return CodedTree(tree, names[0], child_labels, tuple(names[1:]), cond_labels)


def _label(value) -> str:
    return "NA" if value is None else str(value)


def node_frame(
    coded: CodedTree,
    probabilities: np.ndarray,
    mcse: np.ndarray | None = None,
) -> pd.DataFrame:
    """One row per node: depth, path values, n, p_<value> (and mcse_<value>)."""
    tree = coded.tree
    probabilities = np.asarray(probabilities, dtype=float)
    if probabilities.shape != (tree.n_nodes, tree.n_values):
        raise ValueError(
            f"probabilities must have shape {(tree.n_nodes, tree.n_values)}, "
            f"got {probabilities.shape}"
        )
    out: dict[str, object] = {"depth": tree.node_depth}
    paths = tree.paths()
    for d, (name, labels) in enumerate(
        zip(coded.conditioning_names, coded.conditioning_labels, strict=True)
    ):
        col = paths[:, d]
        values = np.array([labels[v] if v >= 0 else None for v in col], dtype=object)
        out[name] = pd.array(values, dtype="object")
    out["n"] = tree.counts.sum(axis=1)
    value_names = [_label(v) for v in coded.child_labels]
    for k, v in enumerate(value_names):
        out[f"p_{v}"] = probabilities[:, k]
    if mcse is not None:
        mcse = np.asarray(mcse, dtype=float)
        if mcse.shape != probabilities.shape:
            raise ValueError("mcse must have the same shape as probabilities")
        for k, v in enumerate(value_names):
            out[f"mcse_{v}"] = mcse[:, k]
    return pd.DataFrame(out)


def read_estimate_table(path: str) -> pd.DataFrame:
    """The table of ``hdpbn estimate`` (CSV, TSV or Parquet), values as read: the first column is
    the child, the others the conditioning variables in branching order. Shared with
    ``python -m hdpbn_ppl estimate`` so that both code values, hence order nodes, alike."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"no such file: {path!r}")
    suffixes = [s.lower() for s in p.suffixes]
    if suffixes and suffixes[-1] in (".parquet", ".pq"):
        return pd.read_parquet(p)
    sep = "\t" if ".tsv" in suffixes else ","
    return pd.read_csv(p, sep=sep, keep_default_na=True)
