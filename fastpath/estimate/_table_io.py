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

:func:`count_estimate_table` reads and counts such a file chunk by chunk, so that memory follows
the chunk and the number of distinct paths, never the number of rows: a first pass collects each
column's distinct values (as text for CSV/TSV, as Arrow values for Parquet) and types them as
reading the whole column would, a second pass codes each chunk with those fixed codes and adds
it to a :class:`~fastpath.counts.CountAccumulator`. The result is the tree of
``tree_from_frame(read_estimate_table(path))``: the same codes, labels and nodes.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..counts._context_tree import ContextTree
from ..counts._counting import CountAccumulator, TreeSpec, count_tree

#: rows per chunk of :func:`count_estimate_table`
DEFAULT_CHUNKSIZE = 1 << 18


@dataclass(frozen=True)
class CodedTree:
    """A context tree with the labels of the values behind its integer codes."""

    tree: ContextTree
    child_name: str
    child_labels: tuple
    conditioning_names: tuple[str, ...]
    conditioning_labels: tuple[tuple, ...]


def _sorted_labels(present) -> list:
    labels = list(pd.unique(present))
    try:
        return sorted(labels)
    except TypeError:  # mixed types: sort by text
        return sorted(labels, key=str)


def _code_column(series: pd.Series) -> tuple[np.ndarray, tuple]:
    missing = series.isna().to_numpy()
    present = series[~missing]
    labels = _sorted_labels(present)
    codes = np.empty(len(series), dtype=np.int64)
    codes[~missing] = pd.Categorical(present, categories=labels).codes
    if missing.any():
        codes[missing] = len(labels)
        labels.append(None)  # missing is a value of its own
    return codes, tuple(labels)


def tree_from_frame(frame: pd.DataFrame) -> CodedTree:
    """Code a child-first table and count it into a context tree."""
    _check_shape(frame.shape[1], frame.shape[0])
    names = _checked_names(frame.columns)
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


def _check_shape(n_columns: int, n_rows: int) -> None:
    if n_columns < 1 or n_rows < 1:
        raise ValueError("the table needs at least one column (the child) and one row")


def _checked_names(columns) -> list[str]:
    names = [str(c) for c in columns]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"duplicated column names: {dup}")
    return names


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


def _table_format(path: str) -> tuple[Path, str | None]:
    """The file and its CSV separator (``None``: Parquet)."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"no such file: {path!r}")
    suffixes = [s.lower() for s in p.suffixes]
    if suffixes and suffixes[-1] in (".parquet", ".pq"):
        return p, None
    return p, "\t" if ".tsv" in suffixes else ","


def read_estimate_table(path: str) -> pd.DataFrame:
    """The table of ``hdpbn estimate`` (CSV, TSV or Parquet), values as read: the first column is
    the child, the others the conditioning variables in branching order. Shared with
    ``python -m hdpbn_ppl estimate`` so that both code values, hence order nodes, alike."""
    p, sep = _table_format(path)
    if sep is None:
        return pd.read_parquet(p)
    return pd.read_csv(p, sep=sep, keep_default_na=True)


# ---------------------------------------------------------------------- chunked counting
@dataclass(frozen=True)
class _ColumnCodes:
    """Fixed codes of one column: ``lookup[i]`` is the code of its i-th distinct raw value."""

    raw: pd.Index | pa.Array  # distinct raw values (CSV: their text; Parquet: Arrow values)
    lookup: np.ndarray  # int64, the code of each raw value, then the missing code (at -1)
    missing_code: int  # the code of a missing value
    labels: tuple  # the label of each code (missing: None, last)


def _column_codes(raw, parsed: pd.Series, has_missing: bool) -> _ColumnCodes:
    """Codes of distinct raw values from their typed values (``parsed``, aligned with ``raw``):
    the typed values sorted, missing last, as :func:`tree_from_frame` codes a column."""
    na = parsed.isna().to_numpy()
    labels = _sorted_labels(parsed[~na])
    missing_code = len(labels)
    lookup = np.full(len(parsed) + 1, missing_code, dtype=np.int64)  # [-1]: missing
    lookup[:-1][~na] = pd.Categorical(parsed[~na], categories=labels).codes
    if has_missing or na.any():
        labels.append(None)  # missing is a value of its own
    return _ColumnCodes(raw, lookup, missing_code, tuple(labels))


def _csv_chunks(p: Path, sep: str, chunksize: int) -> Iterator[pd.DataFrame]:
    """The table as text (missing values as NaN), chunk by chunk."""
    with pd.read_csv(p, sep=sep, keep_default_na=True, dtype=str, chunksize=chunksize) as reader:
        yield from reader


def _csv_column_codes(p: Path, sep: str, chunksize: int) -> tuple[list[str], list[_ColumnCodes]]:
    names: list[str] = []
    seen: list[set] = []
    has_missing: list[bool] = []
    for chunk in _csv_chunks(p, sep, chunksize):
        if not seen:
            names = [str(c) for c in chunk.columns]
            seen = [set() for _ in names]
            has_missing = [False] * len(names)
        for j in range(chunk.shape[1]):
            col = chunk.iloc[:, j]
            na = col.isna()
            has_missing[j] |= bool(na.any())
            seen[j].update(pd.unique(col[~na]).tolist())
    codes = []
    for j in range(len(seen)):
        raw = sorted(seen[j])
        # type the distinct texts as pandas types a whole column holding them (int, float, bool
        # or text; a missing value makes whole numbers float), as reading the whole file does
        rows = [*raw, None] if has_missing[j] else raw
        text = pd.DataFrame({"v": rows, "w": 0}).to_csv(sep=sep, index=False)
        parsed = pd.read_csv(io.StringIO(text), sep=sep, keep_default_na=True)["v"]
        codes.append(_column_codes(pd.Index(raw, dtype=object), parsed.iloc[: len(raw)],
                                   has_missing[j]))
    return names, codes


def _csv_coded_chunks(p: Path, sep: str, chunksize: int,
                      codes: list[_ColumnCodes]) -> Iterator[np.ndarray]:
    for chunk in _csv_chunks(p, sep, chunksize):
        out = np.empty((chunk.shape[0], len(codes)), dtype=np.int64)
        for j, cc in enumerate(codes):
            out[:, j] = cc.lookup[cc.raw.get_indexer(chunk.iloc[:, j])]  # -1: missing
        yield out


def _parquet_fields(pf: pq.ParquetFile) -> tuple[list[str], list[str]]:
    """Names of the data columns as pandas reads them, and their Arrow field names."""
    schema = pf.schema_arrow
    index = {c for c in (schema.pandas_metadata or {}).get("index_columns", [])
             if isinstance(c, str)}
    fields = [f.name for f in schema if f.name not in index]
    names = [str(c) for c in schema.empty_table().to_pandas().columns]
    if len(names) != len(fields):  # pragma: no cover - an unusual pandas layout
        names = fields
    return names, fields


def _plain(arr: pa.Array) -> pa.Array:
    return arr.dictionary_decode() if pa.types.is_dictionary(arr.type) else arr


def _parquet_column_codes(pf: pq.ParquetFile, fields: list[str],
                          chunksize: int) -> list[_ColumnCodes]:
    uniques: list[list[pa.Array]] = [[] for _ in fields]
    for batch in pf.iter_batches(batch_size=chunksize, columns=fields):
        for j in range(len(fields)):
            uniques[j].append(pc.unique(_plain(batch.column(j))))
    schema = pf.schema_arrow
    codes = []
    for j, name in enumerate(fields):
        values = pc.unique(pa.concat_arrays(uniques[j]))
        has_null = values.null_count > 0
        values = values.drop_null()
        # type the values as pandas reads the whole column (with its pandas metadata: Int64...)
        typed = pa.concat_arrays([values, pa.nulls(1, values.type)]) if has_null else values
        field = schema.field(name)
        if pa.types.is_dictionary(field.type):
            parsed = typed.to_pandas()
        else:
            table = pa.Table.from_arrays(
                [typed], schema=pa.schema([field.with_type(values.type)],
                                          metadata=schema.metadata))
            parsed = table.to_pandas().iloc[:, 0].reset_index(drop=True)
        codes.append(_column_codes(values, parsed.iloc[: len(values)], has_null))
    return codes


def _parquet_coded_chunks(pf: pq.ParquetFile, fields: list[str], chunksize: int,
                          codes: list[_ColumnCodes]) -> Iterator[np.ndarray]:
    for batch in pf.iter_batches(batch_size=chunksize, columns=fields):
        out = np.empty((batch.num_rows, len(codes)), dtype=np.int64)
        for j, cc in enumerate(codes):
            pos = pc.index_in(_plain(batch.column(j)), value_set=cc.raw).fill_null(-1)
            out[:, j] = cc.lookup[pos.to_numpy(zero_copy_only=False)]  # -1: missing
        yield out


def count_estimate_table(path: str, *, chunksize: int = DEFAULT_CHUNKSIZE) -> CodedTree:
    """Read and count a child-first table (CSV, TSV, optionally compressed, or Parquet) chunk by
    chunk: the :class:`CodedTree` of ``tree_from_frame(read_estimate_table(path))`` (same codes,
    labels, nodes and counts) in memory that does not grow with the number of rows.

    Parameters
    ----------
    path : str
    chunksize : int
        Rows per chunk (each file is read twice: distinct values, then counts).
    """
    chunksize = int(chunksize)
    if chunksize < 1:
        raise ValueError(f"chunksize must be a positive number of rows, got {chunksize}")
    p, sep = _table_format(path)
    if sep is None:
        pf = pq.ParquetFile(p)
        names, fields = _parquet_fields(pf)
        _check_shape(len(fields), pf.metadata.num_rows)
        _checked_names(names)
        codes = _parquet_column_codes(pf, fields, chunksize)
        chunks = _parquet_coded_chunks(pf, fields, chunksize, codes)
    else:
        names, codes = _csv_column_codes(p, sep, chunksize)
        _checked_names(names)
        chunks = _csv_coded_chunks(p, sep, chunksize, codes)
    cards = [len(cc.labels) for cc in codes]
    if not cards:
        _check_shape(0, 0)
    spec = TreeSpec(child=0, conditioning=tuple(range(1, len(cards))), n_values=cards[0],
                    cardinalities=tuple(cards[1:]))
    acc = CountAccumulator([spec])
    for chunk in chunks:
        acc.update(chunk, np.zeros(chunk.shape[0], dtype=np.int64))
    _check_shape(len(cards), acc.n_rows)
    tree = acc.tree(0, child_name=names[0], conditioning_names=names[1:])
    return CodedTree(tree, names[0], codes[0].labels, tuple(names[1:]),
                     tuple(cc.labels for cc in codes[1:]))
