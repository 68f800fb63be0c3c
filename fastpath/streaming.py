"""Out-of-core fits: a few passes over chunks of rows, in memory that does not grow with N.

Paper, "Efficiency of BNC learning" and "Out-of-core capacity": BNCs learn out of core because
every statistic they need is a *count*, and counts of chunks add up. A streaming fit of
:class:`~fastpath.classifier.BayesNetClassifier` makes these passes over the data:

1. **schema** (every structure): the columns, the class labels, the values of every nominal
   column, missing values, and for every numeric column a class-conditional histogram
   (:class:`fastpath.sketch.ClassHistogram`) from which MDL cut points are computed without
   holding the column;
2. **structure statistics** (TAN, kDB, SkDB): the (attribute, class) and (attribute,
   attribute, class) count tables, from which ``I(X_j; Y)`` and ``I(X_i; X_j | Y)`` give the
   structure (:func:`fastpath.structure.tan_from_scores`, :func:`~fastpath.structure.
   kdb_from_scores`);
3. **counts** of every context tree (:class:`fastpath.counting.CountAccumulator`), with the
   rows of the m holdout (at most 5,000) kept aside in memory;
4. **leave-one-out** (SkDB only): the incremental leave-one-out RMSE of every ``(n*, k*)``
   (:mod:`fastpath.selective`), from the kDB-K counts of pass 3.

Naive Bayes therefore reads the data twice, TAN and kDB three times, SkDB four times (the
paper's one, two and three passes plus the discretisation pass). When the pairwise tables of
pass 2 would not fit in ``pair_memory`` bytes, pass 2 is split into several passes over groups
of attribute pairs.

**Identical to the in-memory fit.** Counts are integers, so every count table equals the one
the in-memory fit computes; the mutual informations are summed in the same order as
:mod:`fastpath.structure` sums them, the leave-one-out errors in the same order as
:mod:`fastpath.selective`, and the m holdout is the same set of rows (:func:`holdout_rows`: the
``min(N/10, 5000)`` rows with the smallest seeded hash of their row index, used by the in-memory
fit too). So on nominal data, and on numeric columns with at most ``max_bins`` distinct values,
a streaming fit with the same ``random_state`` gives the same model, bit for bit, as
``fit(pandas.concat(chunks))``. Numeric columns with more distinct values get approximate cut
points (see :mod:`fastpath.sketch` and ``docs/scale.md``).

**Sources.** ``fit`` streams when ``X`` is

* a path (``str`` or ``os.PathLike``) to a CSV/TSV file (optionally compressed: ``.gz``,
  ``.bz2``, ``.xz``, ``.zip``, ``.zst``, read with pandas in chunks of ``chunksize`` rows) or a
  Parquet file (read with pyarrow in record batches of ``chunksize`` rows);
* a callable returning a fresh iterator of DataFrame chunks (e.g.
  ``functools.partial(pd.read_csv, path, chunksize=10**5)``): called once per pass;
* an iterator (a generator, a ``pandas`` chunked reader) of DataFrames (or pyarrow record
  batches). An iterator can be read only once, but a fit needs several passes: its chunks are
  written during the first pass to a temporary directory (``tempfile.gettempdir()``, pickled
  DataFrames, removed when the fit ends) and the later passes read them back. Memory stays
  bounded; the disk holds a copy of the data. Pass a path or a callable to avoid the copy;
* a ``dask.dataframe.DataFrame`` (:mod:`fastpath.distributed`).

Every chunk holds the feature columns *and* the target column (``y`` names it; default: the
last column). Column types are fixed by the first chunk (CSV: a column is numeric when pandas
reads every field of its first chunk as a number, as :func:`fastpath.io.read_table` decides for
the whole file; Parquet: by the file's schema; DataFrames: by their dtypes, and
``categorical_features`` as for in-memory fits).

**Bad input** stops the fit with a ``ValueError`` that names the chunk (0-based, with its rows),
the row (0-based over the whole stream) and the column: a malformed CSV row, a column that is
missing or new, a non-number in a numeric column, an infinite value, a missing class label.
The estimator is fitted on a private copy and updated only when every pass has succeeded, so
after an error it is exactly as before the call (unfitted, or still holding its previous fit).
"""

from __future__ import annotations

import collections.abc
import copy
import itertools
import math
import numbers
import os
import pickle
import re
import tempfile
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numba import njit

from . import structure as structure_mod
from .counting import CountAccumulator, TreeSpec
from .encoding import AttributeCoding, TableEncoder, _python_scalar
from .selective import loo_row_errors
from .sketch import DEFAULT_MAX_BINS, ClassHistogram

__all__ = [
    "DEFAULT_CHUNKSIZE",
    "MAX_HOLDOUT",
    "StreamError",
    "declare_schema",
    "fit_stream",
    "holdout_key",
    "holdout_rows",
    "holdout_size",
    "holdout_threshold",
    "is_stream_source",
    "row_hashes",
]

#: rows per chunk when reading a file
DEFAULT_CHUNKSIZE = 100_000
#: largest m holdout (paper: min(N/10, 5000) rows)
MAX_HOLDOUT = 5000
#: rows per thread and block of the leave-one-out pass (their errors are buffered)
_LOO_BLOCK = 2048
#: memory for the pairwise (attribute, attribute, class) tables of one pass over the data
DEFAULT_PAIR_MEMORY = 256 * 2**20


class StreamError(ValueError):
    """Bad input in a stream; the message names the chunk, the row and the column."""


# ====================================================================== m holdout rows
# The holdout that chooses m is a seeded hash of the row *index*, not a permutation: a stream
# can select it chunk by chunk (a row is held out when its hash is below a threshold that only
# depends on N), and the in-memory fit selects the very same rows.
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@njit(cache=True, nogil=True)
def _splitmix_rows(start, n, key):
    out = np.empty(n, dtype=np.uint64)
    k = np.uint64(key)
    for i in range(n):
        # splitmix64 (Steele, Lea & Flood 2014) of key + (index + 1) * golden: a bijection of
        # the index for a fixed key, so no two rows share a hash
        z = k + np.uint64(start + i + 1) * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        out[i] = z ^ (z >> np.uint64(31))
    return out


def holdout_key(rng: np.random.Generator) -> int:
    """The hash key of the m holdout, drawn from the fit's random generator."""
    return int(rng.integers(0, 2**63 - 1, dtype=np.int64))


def holdout_size(n_rows: int) -> int:
    """``min(N // 10, 5000)``, the paper's holdout size."""
    return min(int(n_rows) // 10, MAX_HOLDOUT)


def row_hashes(start: int, stop: int, key: int) -> np.ndarray:
    """Seeded 64-bit hashes of the row indices ``start..stop-1`` (all distinct)."""
    return _splitmix_rows(np.int64(start), np.int64(max(stop - start, 0)), np.int64(key))


def holdout_threshold(n_rows: int, n_hold: int, key: int, block: int = 1 << 20) -> np.uint64:
    """Largest hash of the ``n_hold`` smallest among rows ``0..n_rows-1`` (O(n_hold) memory)."""
    if not 1 <= n_hold <= n_rows:
        raise ValueError(f"n_hold must lie in [1, {n_rows}], got {n_hold}")
    best = np.empty(0, dtype=np.uint64)
    for s in range(0, n_rows, block):
        cand = np.concatenate([best, row_hashes(s, min(s + block, n_rows), key)])
        if cand.size > n_hold:
            cand = np.partition(cand, n_hold - 1)[:n_hold]
        best = cand
    return np.uint64(best.max())


def holdout_rows(n_rows: int, n_hold: int, key: int) -> np.ndarray:
    """Indices (sorted) of the ``n_hold`` rows of ``0..n_rows-1`` with the smallest hashes."""
    if not 1 <= n_hold <= n_rows:
        raise ValueError(f"n_hold must lie in [1, {n_rows}], got {n_hold}")
    h = row_hashes(0, n_rows, key)
    return np.sort(np.argpartition(h, n_hold - 1)[:n_hold]).astype(np.int64)


# ====================================================================== positions and errors
@dataclass(frozen=True)
class Where:
    """Position of a chunk in a stream, for error messages."""

    kind: str  # "chunk" or "partition"
    index: int
    start: int | None  # first row in the whole stream, when known
    n_rows: int
    offset: int = 0  # first row within the chunk/partition (a block of a partition)

    def __str__(self) -> str:
        if self.start is None or self.n_rows == 0:
            return f"{self.kind} {self.index}"
        return f"{self.kind} {self.index} (rows {self.start}-{self.start + self.n_rows - 1})"

    def row(self, local: int) -> str:
        if self.start is None:
            return f"row {self.offset + local} of {self.kind} {self.index}"
        return f"row {self.start + local}"

    def sub(self, offset: int, n_rows: int) -> Where:
        """A block of ``n_rows`` rows starting ``offset`` rows into this one."""
        start = None if self.start is None else self.start + offset
        return Where(self.kind, self.index, start, n_rows, self.offset + offset)


def _fail(where: Where, column: Any, local_row: int | None, msg: str) -> StreamError:
    parts = [str(where)]
    if local_row is not None:
        parts.append(where.row(local_row))
    if column is not None:
        parts.append(f"column {column!r}")
    return StreamError(", ".join(parts) + ": " + msg)


def _check_columns(frame: pd.DataFrame, expected: Sequence[str], where: Where) -> pd.DataFrame:
    names = [str(c) for c in frame.columns]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise _fail(where, None, None, f"duplicated column names {dup}")
    have = set(names)
    extra = [c for c in names if c not in set(expected)]
    if extra:
        raise _fail(where, extra[0], None, "a new column that the first chunk did not have")
    missing = [c for c in expected if c not in have]
    if missing:
        raise _fail(where, missing[0], None, "missing (the first chunk had it)")
    if names != list(frame.columns):
        frame = frame.set_axis(names, axis=1)
    if names != list(expected):
        frame = frame[list(expected)]
    return frame


def _first_true(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


# ====================================================================== sources
def _is_dask_frame(X: Any) -> bool:
    mod = type(X).__module__ or ""
    return mod.startswith(("dask", "dask_expr")) and hasattr(X, "npartitions")


def is_stream_source(X: Any) -> bool:
    """Whether ``fit`` streams ``X``: a path, a chunk iterator or factory, a Dask DataFrame."""
    if isinstance(X, str | os.PathLike):
        return True
    if isinstance(X, pd.DataFrame | pd.Series | np.ndarray):
        return False
    if _is_dask_frame(X):
        return True
    if isinstance(X, collections.abc.Iterator):
        return True
    return callable(X) and not isinstance(X, type)


class _Restart(Exception):
    """A source asks to restart the first pass (e.g. with another text encoding)."""


def _as_frame_chunk(obj: Any, where: Where) -> pd.DataFrame:
    if isinstance(obj, pd.DataFrame):
        return obj
    if type(obj).__module__.startswith("pyarrow") and hasattr(obj, "to_pandas"):
        return obj.to_pandas()
    raise StreamError(
        f"{where}: expected a pandas DataFrame (or pyarrow record batch), got "
        f"{type(obj).__name__}"
    )


class _Source:
    """A stream of DataFrame chunks that can be read several times."""

    kind = "chunk"

    def frames(self, first_pass: bool) -> Iterator[pd.DataFrame]:
        raise NotImplementedError

    def close(self) -> None:
        pass


class _FactorySource(_Source):
    def __init__(self, factory: Callable[[], Any]) -> None:
        self.factory = factory

    def frames(self, first_pass: bool) -> Iterator[pd.DataFrame]:
        it = self.factory()
        if isinstance(it, pd.DataFrame) or not isinstance(it, collections.abc.Iterable):
            raise TypeError(
                "X is a callable, so it must return a fresh iterator of DataFrame chunks; "
                f"it returned {type(it).__name__}"
            )
        yield from it


class _SpillSource(_Source):
    """A one-shot iterator: chunks are spilled to a temporary directory on the first pass."""

    def __init__(self, iterator: Iterator) -> None:
        self.iterator = iterator
        self.tmp: tempfile.TemporaryDirectory | None = None
        self.n_chunks = 0
        self.consumed = False

    def frames(self, first_pass: bool) -> Iterator[pd.DataFrame]:
        if not self.consumed:
            if self.tmp is None:
                self.tmp = tempfile.TemporaryDirectory(prefix="hdpbn-stream-")
            self.consumed = True
            for i, obj in enumerate(self.iterator):
                frame = _as_frame_chunk(obj, Where("chunk", i, None, 0))
                with open(Path(self.tmp.name) / f"{i}.pkl", "wb") as fh:
                    pickle.dump(frame, fh, protocol=pickle.HIGHEST_PROTOCOL)
                self.n_chunks = i + 1
                yield frame
            return
        if not first_pass and self.tmp is not None:
            for i in range(self.n_chunks):
                # our own spill files, written above in this process
                with open(Path(self.tmp.name) / f"{i}.pkl", "rb") as fh:
                    yield pickle.load(fh)
            return
        raise RuntimeError("a one-shot iterator was read twice")

    def close(self) -> None:
        if self.tmp is not None:
            self.tmp.cleanup()
            self.tmp = None


class _CsvSource(_Source):
    """CSV/TSV read in chunks with the column conventions of :func:`fastpath.io.read_table`."""

    def __init__(self, path: Path, sep: str, chunksize: int) -> None:
        self.path = path
        self.sep = sep
        self.chunksize = chunksize
        self.encoding = "utf-8"
        self.text_columns: list[str] | None = None
        self.header: list[str] | None = None

    def _kw(self) -> dict:
        from .io import _duplicates, _raw_csv_header

        common = dict(sep=self.sep, compression="infer", encoding=self.encoding)
        if self.header is None:
            raw = _raw_csv_header(self.path, common)
            dup = _duplicates(h for h in raw if h != "")
            if dup:
                raise ValueError(f"{str(self.path)!r} has duplicated column names: {dup}")
            self.header = [h if h != "" else f"Unnamed: {i}" for i, h in enumerate(raw)]
        return dict(
            common,
            header=0,
            names=self.header,
            keep_default_na=False,
            na_values=[""],
            index_col=False,
        )

    def frames(self, first_pass: bool) -> Iterator[pd.DataFrame]:
        from .io import _is_numeric_dtype

        try:
            kw = self._kw()
            with warnings.catch_warnings():
                warnings.simplefilter("error", pd.errors.ParserWarning)
                if self.text_columns is None:
                    # column types from the first chunk, by read_table's rule
                    head = pd.read_csv(self.path, nrows=self.chunksize, low_memory=False, **kw)
                    self.text_columns = [
                        c for c in self.header if not _is_numeric_dtype(head[c].dtype)
                    ]
                    del head
                reader = pd.read_csv(
                    self.path,
                    chunksize=self.chunksize,
                    dtype={c: str for c in self.text_columns},
                    **kw,
                )
                i = 0
                with reader:
                    while True:
                        try:
                            frame = next(reader)
                        except StopIteration:
                            return
                        except pd.errors.ParserError as exc:
                            raise self._malformed(i, exc) from None
                        i += 1
                        yield frame
        except pd.errors.ParserWarning:
            raise StreamError(
                f"{str(self.path)!r}: chunk 0, row 0: the first data row has more fields than the "
                "header"
            ) from None
        except UnicodeDecodeError:
            if first_pass and self.encoding == "utf-8":
                self.encoding = "latin-1"  # read_table's fallback
                self.text_columns = None
                self.header = None
                raise _Restart() from None
            raise


    def _malformed(self, i: int, exc: Exception) -> StreamError:
        start = i * self.chunksize
        text = str(exc).strip()
        found = re.search(r"line (\d+)", text)
        where = f"chunk {i} (rows {start}-{start + self.chunksize - 1})"
        if found:
            line = int(found.group(1))
            # the header is line 1 (rows are 0-based; quoted line breaks would shift this)
            where += f", row {line - 2} (line {line} of the file)"
        return StreamError(f"{where} of {str(self.path)!r}: malformed CSV row: {text}")


class _ParquetSource(_Source):
    """Parquet read in record batches with :func:`fastpath.io.read_table`'s column rules."""

    def __init__(self, path: Path, chunksize: int) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            # no pre-buffering: pyarrow would otherwise read whole column chunks ahead and
            # keep them, so memory would follow the file's size instead of chunksize
            self.file = pq.ParquetFile(path, pre_buffer=False, buffer_size=1 << 20)
        except pa.ArrowInvalid as e:
            raise ValueError(f"{str(path)!r} is not a readable Parquet file: {e}") from None
        self.path = path
        self.chunksize = chunksize

    def frames(self, first_pass: bool) -> Iterator[pd.DataFrame]:
        for batch in self.file.iter_batches(batch_size=self.chunksize):
            yield _arrow_to_frame(batch)


def _arrow_to_frame(batch) -> pd.DataFrame:
    import pyarrow as pa

    from .io import _as_nominal, _is_numeric_dtype

    data = {}
    for name, arr in zip(batch.schema.names, batch.columns, strict=True):
        t = arr.type
        if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
            data[name] = arr.cast(pa.float64()).to_numpy(zero_copy_only=False)
        elif pa.types.is_string(t) or pa.types.is_large_string(t):
            data[name] = arr.to_pandas()
        elif pa.types.is_dictionary(t) and (
            pa.types.is_string(t.value_type) or pa.types.is_large_string(t.value_type)
        ):
            data[name] = arr.to_pandas()
        else:
            s = arr.to_pandas()
            data[name] = s.to_numpy(float) if _is_numeric_dtype(s.dtype) else _as_nominal(s)
    return pd.DataFrame(data)


def _open_source(X: Any, chunksize: int) -> _Source:
    if isinstance(X, str | os.PathLike):
        from .io import _detect_format

        p = Path(os.fspath(X))
        if not p.exists():
            raise FileNotFoundError(f"no such file: {str(p)!r}")
        if p.is_dir():
            raise ValueError(f"{str(p)!r} is a directory, not a data file")
        fmt, _ = _detect_format(p)
        if fmt in ("csv", "tsv"):
            return _CsvSource(p, "," if fmt == "csv" else "\t", chunksize)
        if fmt == "parquet":
            return _ParquetSource(p, chunksize)
        raise ValueError(
            f"streaming fits read CSV/TSV (optionally compressed) and Parquet files; "
            f"{str(p)!r} is {fmt}: load it with fastpath.io.read_table, or convert it"
        )
    if isinstance(X, collections.abc.Iterator):
        return _SpillSource(X)
    if callable(X):
        return _FactorySource(X)
    raise TypeError(f"cannot stream X of type {type(X).__name__}")


def _check_chunksize(chunksize: Any) -> int:
    if chunksize is None:
        return DEFAULT_CHUNKSIZE
    if isinstance(chunksize, bool) or not isinstance(chunksize, numbers.Integral) or chunksize < 1:
        raise ValueError(f"chunksize must be a positive integer, got {chunksize!r}")
    return int(chunksize)


def _target_name(y: Any, columns: Sequence[str]) -> str:
    if y is None:
        if len(columns) < 2:
            raise ValueError(
                "a streamed table needs at least one feature column and the target column; "
                f"the first chunk has columns {list(columns)}"
            )
        return str(columns[-1])
    if not isinstance(y, str):
        raise TypeError(
            "when X is a path, a chunk iterator or a Dask DataFrame, y must be the name of the "
            f"target column (default: the last column), got {type(y).__name__}"
        )
    if y not in columns:
        raise ValueError(f"target column {y!r} is not in the data; columns: {list(columns)}")
    return y


# ====================================================================== pass 1: schema
def _labels_of(y: pd.Series, where: Where, numeric: bool) -> tuple[np.ndarray, list]:
    """Per-row index into the chunk's distinct labels, and those labels (Python scalars).

    ``numeric``: the target was numeric in the first chunk, so every label must be a number.
    """
    from .io import _is_numeric_dtype

    missing = y.isna().to_numpy()
    if missing.any():
        row = _first_true(missing)
        raise _fail(
            where, y.name, row,
            f"the target has a missing value ({int(missing.sum())} in this chunk); drop those "
            "rows before fitting",
        )
    if numeric and not _is_numeric_dtype(y.dtype):
        bad = (pd.to_numeric(y, errors="coerce").isna() & ~y.isna()).to_numpy()
        if bad.any():
            row = _first_true(bad)
            raise _fail(
                where, y.name, row,
                f"class label {y.iloc[row]!r} is not a number, but the target column held "
                "numbers in the first chunk (its type is fixed by the first chunk)",
            )
    if pd.api.types.is_float_dtype(y.dtype):
        v = y.to_numpy(dtype=float)
        bad = ~np.isfinite(v) | (np.mod(v, 1) != 0)
        if bad.any():
            row = _first_true(bad)
            raise _fail(
                where, y.name, row,
                f"class label {v[row]!r}: the target holds continuous or infinite values; a "
                "classifier needs class labels",
            )
    codes, uniques = pd.factorize(y, use_na_sentinel=True)
    return codes.astype(np.int64), [_python_scalar(u) for u in list(uniques)]


def _numeric_column(col: pd.Series, where: Where) -> np.ndarray:
    """float64 values of a numeric column (NaN = missing), naming the first bad value."""
    from .io import _is_numeric_dtype

    if not _is_numeric_dtype(col.dtype):
        coerced = pd.to_numeric(col, errors="coerce")
        bad = (coerced.isna() & ~col.isna()).to_numpy()
        if pd.api.types.is_bool_dtype(col.dtype) or bad.any():
            row = _first_true(bad) if bad.any() else 0
            raise _fail(
                where, col.name, row,
                f"value {col.iloc[row]!r} is not a number, but the column is numeric (column "
                "types are fixed by the first chunk: a CSV column whose first chunk is all "
                "numbers is read as numbers; read it as text with a callable returning "
                "pandas.read_csv(path, dtype={column: str}, chunksize=...), or fix the data)",
            )
        col = coerced
    values = col.to_numpy(dtype=np.float64, na_value=np.nan)
    inf = np.isinf(values)
    if inf.any():
        row = _first_true(inf)
        raise _fail(
            where, col.name, row,
            f"value {values[row]} is infinite; use NaN for a missing value or a finite number",
        )
    return values


class SchemaStats:
    """Pass 1: what the encoder and the class labels need, mergeable (chunks, partitions).

    Parameters
    ----------
    features : sequence of str
        Feature columns, in order.
    target : str
    nominal : array of bool
        Which features are nominal (the others are numeric).
    max_bins : int
        Bound of each numeric column's :class:`~fastpath.sketch.ClassHistogram`.
    """

    def __init__(self, features, target, nominal, max_bins=DEFAULT_MAX_BINS) -> None:
        self.features = [str(c) for c in features]
        self.target = str(target)
        self.nominal = np.asarray(nominal, dtype=bool)
        self.n_rows = 0
        self.n_missing = np.zeros(len(self.features), dtype=np.int64)
        self.values: list[dict | None] = [{} if nom else None for nom in self.nominal]
        # declared categories of categorical chunks: None = none seen yet, False = not all
        # chunks are categorical with the same categories
        self.declared: list[Any] = [None] * len(self.features)
        self.hists = [None if nom else ClassHistogram(0, max_bins) for nom in self.nominal]
        self.labels: dict[Any, int] = {}
        self.lengths: dict[int, int] = {}
        self.target_numeric = False  # set from the first chunk (or the Dask meta)

    def fresh(self) -> SchemaStats:
        """An empty copy with the same columns."""
        out = SchemaStats(self.features, self.target, self.nominal, DEFAULT_MAX_BINS)
        out.hists = [None if h is None else ClassHistogram(0, h.max_bins) for h in self.hists]
        out.has_names = getattr(self, "has_names", True)
        out.target_numeric = self.target_numeric
        return out

    # ------------------------------------------------------------------ chunks
    def update(self, frame: pd.DataFrame, where: Where) -> SchemaStats:
        """Add a chunk (all feature columns and the target, any column order)."""
        frame = _check_columns(frame, [*self.features, self.target], where)
        n = len(frame)
        self.lengths[where.index] = self.lengths.get(where.index, 0) + n
        if n == 0:
            return self
        local, uniques = _labels_of(frame[self.target], where, self.target_numeric)
        ids = np.empty(len(uniques), dtype=np.int64)
        for i, u in enumerate(uniques):
            ids[i] = self.labels.setdefault(u, len(self.labels))
        y_ids = ids[local]
        for j, name in enumerate(self.features):
            col = frame[name]
            if self.nominal[j]:
                missing = col.isna().to_numpy()
                self.n_missing[j] += int(missing.sum())
                self._add_nominal(j, col, missing)
            else:
                values = _numeric_column(col, where)
                finite = ~np.isnan(values)
                self.n_missing[j] += int(n - finite.sum())
                self.hists[j].update(values[finite], y_ids[finite])
        self.n_rows += n
        return self

    def _add_nominal(self, j: int, col: pd.Series, missing: np.ndarray) -> None:
        seen = self.values[j]
        if isinstance(col.dtype, pd.CategoricalDtype):
            cats = tuple(_python_scalar(c) for c in col.cat.categories)
            self._declare(j, cats)
            present = np.unique(col.cat.codes.to_numpy())
            for c in present[present >= 0]:
                seen.setdefault(cats[c], None)
        else:
            self.declared[j] = False
            for v in pd.unique(col[~missing]):
                seen.setdefault(_python_scalar(v), None)

    def _declare(self, j: int, cats: Any) -> None:
        cur = self.declared[j]
        if cur is None:
            self.declared[j] = cats
        elif cur is not False and (cats is False or cur != cats):
            self.declared[j] = False

    # ------------------------------------------------------------------ merge
    def merge(self, other: SchemaStats) -> SchemaStats:
        """Add another partial's statistics (same columns); returns self."""
        if other.features != self.features or other.target != self.target:
            raise ValueError("cannot merge statistics of different columns")
        mapping = np.asarray(
            [self.labels.setdefault(u, len(self.labels)) for u in other.labels], dtype=np.int64
        )
        for j in range(len(self.features)):
            if self.nominal[j]:
                for v in other.values[j]:
                    self.values[j].setdefault(v, None)
                if other.declared[j] is not None:
                    self._declare(j, other.declared[j])
            else:
                theirs = copy.deepcopy(other.hists[j])
                theirs._grow(len(other.labels))
                theirs.remap_classes(mapping, len(self.labels))
                self.hists[j].merge(theirs)
        self.n_missing += other.n_missing
        self.n_rows += other.n_rows
        for k, v in other.lengths.items():
            self.lengths[k] = self.lengths.get(k, 0) + v
        return self

    # ------------------------------------------------------------------ result
    def classes(self) -> tuple[np.ndarray, np.ndarray]:
        """The sorted classes (as the in-memory fit sorts them) and, for each final class, its
        provisional index."""
        from .classifier import BayesNetClassifier

        labels = list(self.labels)
        arr = pd.Series(labels).to_numpy() if labels else np.empty(0)
        classes, final_of_label = BayesNetClassifier._validate_y(arr, arr.shape[0])
        class_order = np.empty(classes.size, dtype=np.int64)
        class_order[final_of_label] = np.arange(len(labels))
        return classes, class_order

    def encoder(self, categorical_features: Any, class_order: np.ndarray) -> TableEncoder:
        """The encoder ``TableEncoder.fit`` would learn from all the rows (module doc)."""
        codings = []
        n = self.n_rows
        for j, name in enumerate(self.features):
            n_missing = int(self.n_missing[j])
            if n_missing == n:
                warnings.warn(
                    f"column {name!r} is missing in every training row; it is kept as a "
                    "constant attribute that carries no information",
                    UserWarning,
                    stacklevel=3,
                )
                codings.append(AttributeCoding(name=name, kind="nominal", missing_code=0))
            elif self.nominal[j]:
                declared = self.declared[j]
                if declared not in (None, False):
                    categories = tuple(declared)
                else:
                    uniq = list(self.values[j])
                    try:
                        categories = tuple(sorted(uniq))
                    except TypeError:  # mixed types: order by their text
                        categories = tuple(sorted(uniq, key=str))
                n_present = len(categories)
                if n_present > 1 and n_present >= n and n > 10:
                    warnings.warn(
                        f"nominal column {name!r} has {n_present} distinct values for "
                        f"{n} rows (an identifier?); each value will be seen about once",
                        UserWarning,
                        stacklevel=3,
                    )
                codings.append(
                    AttributeCoding(
                        name=name,
                        kind="nominal",
                        categories=categories,
                        missing_code=n_present if n_missing else None,
                    )
                )
            else:
                hist = self.hists[j]
                hist._grow(len(self.labels))
                cuts = hist.cut_points(class_order, name=name)
                codings.append(
                    AttributeCoding(
                        name=name,
                        kind="numeric",
                        cut_points=tuple(float(c) for c in cuts),
                        missing_code=len(cuts) + 1 if n_missing else None,
                    )
                )
        enc = TableEncoder(categorical_features)
        enc.codings_ = tuple(codings)
        enc.feature_names_ = tuple(self.features)
        return enc


# ====================================================================== passes 2-4: codes
class Coder:
    """Chunk -> (codes, class codes) with a fixed encoder; names what does not fit it."""

    def __init__(self, encoder: TableEncoder, target: str, classes: np.ndarray) -> None:
        self.encoder = encoder
        self.features = list(encoder.feature_names_)
        self.target = target
        self.classes = classes
        self._class_index = pd.Index(classes)

    def encode(self, frame: pd.DataFrame, where: Where) -> tuple[np.ndarray, np.ndarray]:
        frame = _check_columns(frame, [*self.features, self.target], where)
        X = frame[self.features]
        try:
            codes = self.encoder.transform(X)
        except ValueError as exc:
            raise _fail(where, None, None, str(exc)) from None
        if codes.size and codes.min() < 0:
            r, j = np.argwhere(codes < 0)[0]
            value = X.iloc[int(r), int(j)]
            raise _fail(
                where, self.features[j], int(r),
                f"value {value!r} was not in the data of the first pass (the source changed "
                "between passes?)",
            )
        y = frame[self.target]
        y_codes = self._class_index.get_indexer(y)
        if (y_codes < 0).any():
            r = _first_true(y_codes < 0)
            raise _fail(
                where, self.target, r,
                f"class label {y.iloc[r]!r} was not in the data of the first pass (the source "
                "changed between passes?)",
            )
        return codes, y_codes.astype(np.int64)


# ---------------------------------------------------------------------- pass 2: pair tables
@njit(cache=True, nogil=True)
def _pair_update(Xt, y, n_classes, pair_i, pair_j, cards, table_off, tables, first_off, first,
                 row0, p_lo, p_hi):
    """Add rows to the (x_i, class, x_j) tables of pairs p_lo..p_hi-1 (layout of structure)."""
    n = Xt.shape[1]
    for p in range(p_lo, p_hi):
        i = pair_i[p]
        j = pair_j[p]
        cj = cards[j]
        base = table_off[p]
        fb = first_off[p]
        xi = Xt[i]
        xj = Xt[j]
        if fb < 0:
            for r in range(n):
                tables[base + (np.int64(xi[r]) * n_classes + y[r]) * cj + np.int64(xj[r])] += 1
        else:
            # the first row of every cell, for the summation order of structure's sparse scan
            for r in range(n):
                idx = (np.int64(xi[r]) * n_classes + y[r]) * cj + np.int64(xj[r])
                if tables[base + idx] == 0:
                    first[fb + idx] = row0 + r
                tables[base + idx] += 1


@njit(cache=True, nogil=True)
def _pair_cmi_from_table(table, first, ci, cj, n_classes, joint_i, joint_j, class_counts, n,
                         sparse):
    """``I(X_i; X_j | Y)`` from the pair's counts, summed in structure._pair_cmi's order."""
    s = 0.0
    if not sparse:
        for a in range(ci):
            for c in range(n_classes):
                nac = joint_i[a * n_classes + c]
                if nac == 0:
                    continue
                nc = float(class_counts[c])
                row = (a * n_classes + c) * cj
                for b in range(cj):
                    nacb = table[row + b]
                    if nacb > 0:
                        nbc = joint_j[b * n_classes + c]
                        s += nacb * math.log((nacb * nc) / (float(nac) * float(nbc)))
    else:
        # the in-memory kernel visits the occupied cells in the order of their first row
        occupied = np.flatnonzero(table)
        order = np.argsort(first[occupied])
        for t in range(order.shape[0]):
            idx = occupied[order[t]]
            b = idx % cj
            c = (idx // cj) % n_classes
            a = idx // (cj * n_classes)
            nacb = table[idx]
            nac = joint_i[a * n_classes + c]
            nbc = joint_j[b * n_classes + c]
            s += nacb * math.log((nacb * float(class_counts[c])) / (float(nac) * float(nbc)))
    return max(s / n, 0.0)


def _narrow_transpose(codes: np.ndarray, max_card: int) -> np.ndarray:
    dtype = np.uint8 if max_card <= 256 else np.uint16 if max_card <= 65536 else np.int32
    out = np.empty((codes.shape[1], codes.shape[0]), dtype=dtype)
    for r0 in range(0, codes.shape[0], 1024):
        out[:, r0 : r0 + 1024] = codes[r0 : r0 + 1024].T
    return out


class PairStats:
    """Pass 2: class, (attribute, class) and (attribute, attribute, class) counts, mergeable.

    Parameters
    ----------
    cards : sequence of int
    n_classes : int
    n_rows : int
        Rows of the whole data (known after pass 1): a pair whose table has more cells than
        rows is summed in first-occurrence order by :mod:`fastpath.structure`, so those pairs
        also record the first row of each cell (a min, hence still mergeable).
    pairs : (pair_i, pair_j)
        The pairs ``i < j`` this pass counts (all of them unless memory asks for groups).
    n_threads : int
        Threads over pairs (the kernel releases the GIL).
    """

    def __init__(self, cards, n_classes, n_rows, pairs, n_threads=1) -> None:
        self.cards = np.asarray(cards, dtype=np.int64)
        self.n_classes = int(n_classes)
        self.n_total = int(n_rows)
        self.pair_i = np.asarray(pairs[0], dtype=np.int64)
        self.pair_j = np.asarray(pairs[1], dtype=np.int64)
        self.n_threads = max(1, int(n_threads))
        k = self.n_classes
        self.class_counts = np.zeros(k, dtype=np.int64)
        self.joint_offsets = np.zeros(self.cards.size + 1, dtype=np.int64)
        np.cumsum(self.cards * k, out=self.joint_offsets[1:])
        self.joint = np.zeros(int(self.joint_offsets[-1]), dtype=np.int64)
        cells = self.cards[self.pair_i] * k * self.cards[self.pair_j]
        self.table_off = np.zeros(cells.size + 1, dtype=np.int64)
        np.cumsum(cells, out=self.table_off[1:])
        self.tables = np.zeros(int(self.table_off[-1]), dtype=np.int64)
        self.sparse = cells > self.n_total
        sizes = np.where(self.sparse, cells, 0)
        starts = np.concatenate([[0], np.cumsum(sizes)])
        self.first_off = np.where(self.sparse, starts[:-1], -1).astype(np.int64)
        self.first = np.full(int(starts[-1]), np.iinfo(np.int64).max, dtype=np.int64)

    def fresh(self) -> PairStats:
        """An empty copy with the same configuration."""
        out = copy.copy(self)
        out.class_counts = np.zeros_like(self.class_counts)
        out.joint = np.zeros_like(self.joint)
        out.tables = np.zeros_like(self.tables)
        out.first = np.full_like(self.first, np.iinfo(np.int64).max)
        return out

    @staticmethod
    def cell_bytes(cards, n_classes, n_rows, pair_i, pair_j) -> np.ndarray:
        """Bytes each pair's tables take (counts, plus first rows when summed sparsely)."""
        cards = np.asarray(cards, dtype=np.int64)
        cells = cards[pair_i] * int(n_classes) * cards[pair_j]
        return cells * 8 * np.where(cells > int(n_rows), 2, 1)

    def update(self, codes: np.ndarray, y: np.ndarray, start: int) -> PairStats:
        n = y.shape[0]
        if n == 0:
            return self
        k = self.n_classes
        self.class_counts += np.bincount(y, minlength=k)
        for j in range(self.cards.size):
            lo, hi = self.joint_offsets[j], self.joint_offsets[j + 1]
            self.joint[lo:hi] += np.bincount(codes[:, j] * k + y, minlength=int(hi - lo))
        n_pairs = self.pair_i.size
        if n_pairs == 0:
            return self
        Xt = _narrow_transpose(codes, int(self.cards.max()))
        y = np.ascontiguousarray(y, dtype=np.int64)
        args = (Xt, y, k, self.pair_i, self.pair_j, self.cards, self.table_off, self.tables,
                self.first_off, self.first, np.int64(start))
        n_threads = min(self.n_threads, n_pairs)
        if n_threads == 1:
            _pair_update(*args, 0, n_pairs)
        else:
            # balance the threads by cells x rows is overkill: pairs cost about the same
            bounds = np.linspace(0, n_pairs, n_threads + 1).round().astype(np.int64)
            with ThreadPoolExecutor(n_threads) as pool:
                list(pool.map(lambda b: _pair_update(*args, b[0], b[1]),
                              itertools.pairwise(bounds)))
        return self

    def merge(self, other: PairStats) -> PairStats:
        self.class_counts += other.class_counts
        self.joint += other.joint
        self.tables += other.tables
        np.minimum(self.first, other.first, out=self.first)
        return self

    def mutual_information(self) -> np.ndarray:
        return structure_mod._mi_from_counts(
            self.joint, self.cards, self.class_counts, self.joint_offsets, self.n_total
        )

    def cmi_values(self) -> np.ndarray:
        """``I(X_i; X_j | Y)`` of this pass's pairs, in nats."""
        out = np.zeros(self.pair_i.size)
        k = self.n_classes
        for p in range(self.pair_i.size):
            i, j = int(self.pair_i[p]), int(self.pair_j[p])
            t0, t1 = self.table_off[p], self.table_off[p + 1]
            fb = self.first_off[p]
            first = self.first[fb : fb + (t1 - t0)] if fb >= 0 else self.first[:0]
            out[p] = _pair_cmi_from_table(
                self.tables[t0:t1], first, self.cards[i], self.cards[j], k,
                self.joint[self.joint_offsets[i] : self.joint_offsets[i + 1]],
                self.joint[self.joint_offsets[j] : self.joint_offsets[j + 1]],
                self.class_counts, self.n_total, bool(self.sparse[p]),
            )
        return out


def _pair_groups(cards, n_classes, n_rows, budget) -> list[tuple[np.ndarray, np.ndarray]]:
    """All pairs ``i < j`` (structure's order), in groups whose tables fit ``budget`` bytes."""
    pair_i, pair_j = np.triu_indices(len(cards), k=1)
    nbytes = PairStats.cell_bytes(cards, n_classes, n_rows, pair_i, pair_j)
    groups, lo, used = [], 0, 0
    for p, b in enumerate(nbytes):
        if p > lo and used + b > budget:
            groups.append((pair_i[lo:p], pair_j[lo:p]))
            lo, used = p, 0
        used += int(b)
    groups.append((pair_i[lo:], pair_j[lo:]))
    return groups


# ---------------------------------------------------------------------- pass 3: counts
class CountStats:
    """Pass 3: counts of every context tree, the m-holdout rows kept aside (mergeable)."""

    def __init__(self, specs: Sequence[TreeSpec], key: int | None, threshold: Any) -> None:
        self.accumulator = CountAccumulator(specs)  # rows outside the holdout
        self.key = key
        self.threshold = threshold
        self.hold: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def fresh(self) -> CountStats:
        """An empty copy with the same configuration."""
        return CountStats(self.accumulator.specs, self.key, self.threshold)

    def update(self, codes: np.ndarray, y: np.ndarray, start: int) -> CountStats:
        if self.key is None:
            self.accumulator.update(codes, y)
            return self
        held = row_hashes(start, start + y.shape[0], self.key) <= self.threshold
        if held.any():
            rows = np.flatnonzero(held)
            self.hold.append((start + rows, codes[rows], y[rows]))
            self.accumulator.update(codes[~held], y[~held])
        else:
            self.accumulator.update(codes, y)
        return self

    def merge(self, other: CountStats) -> CountStats:
        self.accumulator.merge(other.accumulator)
        self.hold.extend(other.hold)
        return self

    def holdout(self, n_attributes: int) -> tuple[np.ndarray, np.ndarray]:
        """Held-out codes and classes, in row order."""
        if not self.hold:
            return np.empty((0, n_attributes), np.int64), np.empty(0, np.int64)
        rows = np.concatenate([h[0] for h in self.hold])
        order = np.argsort(rows, kind="stable")
        codes = np.concatenate([h[1] for h in self.hold])[order]
        y = np.concatenate([h[2] for h in self.hold])[order]
        return codes, y


# ---------------------------------------------------------------------- pass 4: leave-one-out
@njit(cache=True, nogil=True)
def _loo_errors_kernel(
    codes, y, child_col, cond_ptr, cond_cols, node_offset, lookup_offsets, lookup_base,
    child_lookup, n_values, count_offset, counts, totals, class_counts, m, max_k,
    n_total, r_lo, r_hi, out,
):
    """Squared leave-one-out errors of rows r_lo..r_hi-1: out[r - r_lo, tree, k*].

    Each row is :func:`fastpath.selective.loo_row_errors` with the number of rows of the whole
    data (``n_total``); the errors are stored, not added: :func:`_add_errors` then adds them to
    their global chunk's sums in row order, as the in-memory kernel does, so the sums are the
    same floating-point numbers while the rows can be computed by several threads.
    """
    cum = np.empty((class_counts.shape[0], max_k + 1))
    logp = np.empty(max_k + 2)
    for r in range(r_lo, r_hi):
        loo_row_errors(
            codes, y, r, child_col, cond_ptr, cond_cols, node_offset, lookup_offsets,
            lookup_base, child_lookup, n_values, count_offset, counts, totals, class_counts,
            m, max_k, n_total, cum, logp, out[r - r_lo],
        )


@njit(cache=True, nogil=True)
def _add_errors(errors, r0, seg_lo, seg_hi, seg_id, sse):
    """sse[seg_id[s]] += errors of rows seg_lo[s]..seg_hi[s]-1, row after row."""
    for s_ in range(seg_lo.shape[0]):
        h = seg_id[s_]
        for r in range(seg_lo[s_], seg_hi[s_]):
            for a in range(errors.shape[1]):
                for k in range(errors.shape[2]):
                    sse[h, a, k] += errors[r - r0, a, k]


class LooStats:
    """Pass 4 (SkDB): leave-one-out squared errors of every (n*, k*), by global row chunk.

    ``trees`` are the kDB-K attribute trees in mutual-information order, counted on all rows;
    the flat arrays are built as :func:`fastpath.selective.loo_scores` builds them.
    """

    def __init__(self, specs, trees, class_counts, n_rows, max_k, m) -> None:
        self.n_total = int(n_rows)
        self.max_k = int(max_k)
        self.m = float(m)
        self.child_col = np.asarray([s.child for s in specs], np.int64)
        cond_ptr = np.zeros(len(specs) + 1, np.int64)
        cond_ptr[1:] = np.cumsum([len(s.conditioning) - 1 for s in specs])
        self.cond_ptr = cond_ptr
        self.cond_cols = np.asarray([c for s in specs for c in s.conditioning[1:]], np.int64)
        node_offset = np.zeros(len(trees) + 1, np.int64)
        node_offset[1:] = np.cumsum([t.n_nodes for t in trees])
        self.node_offset = node_offset
        lookup_base = np.zeros(len(trees), np.int64)
        lookup_base[1:] = np.cumsum([t.child_lookup.size for t in trees])[:-1]
        self.lookup_base = lookup_base
        count_offset = np.zeros(len(trees), np.int64)
        count_offset[1:] = np.cumsum([t.counts.size for t in trees])[:-1]
        self.count_offset = count_offset
        self.lookup_offsets = np.concatenate([t.lookup_offsets for t in trees]).astype(np.int64)
        self.child_lookup = np.concatenate([t.child_lookup for t in trees]).astype(np.int64)
        self.counts = np.concatenate([t.counts.ravel() for t in trees]).astype(np.int64)
        self.totals = np.concatenate([t.counts.sum(axis=1) for t in trees]).astype(np.int64)
        self.n_values = np.asarray([t.n_values for t in trees], np.int64)
        self.class_counts = np.asarray(class_counts, np.int64)
        # selective.loo_scores' fixed chunking of the rows
        n_chunks = max(1, min(self.n_total, 64))
        self.chunk_starts = np.linspace(0, self.n_total, n_chunks + 1).round().astype(np.int64)
        self.sse = np.zeros((n_chunks, len(specs), self.max_k + 1))

    def fresh(self) -> LooStats:
        """A copy with zero sums (the model arrays are shared, read-only)."""
        out = copy.copy(self)
        out.sse = np.zeros_like(self.sse)
        return out

    def update(self, codes: np.ndarray, y: np.ndarray, start: int) -> LooStats:
        n = y.shape[0]
        if n == 0:
            return self
        codes = np.ascontiguousarray(codes, dtype=np.int64)
        y = np.ascontiguousarray(y, dtype=np.int64)
        model = (self.child_col, self.cond_ptr, self.cond_cols, self.node_offset,
                 self.lookup_offsets, self.lookup_base, self.child_lookup, self.n_values,
                 self.count_offset, self.counts, self.totals, self.class_counts, self.m,
                 self.max_k, float(self.n_total))
        n_threads = max(1, int(getattr(self, "n_threads", 1)))
        block = _LOO_BLOCK * n_threads
        errors = np.empty((min(block, n), len(self.child_col), self.max_k + 1))
        cs = self.chunk_starts
        pool = ThreadPoolExecutor(n_threads) if n_threads > 1 else None
        try:
            for b0 in range(0, n, block):
                b1 = min(b0 + block, n)
                bounds = np.linspace(b0, b1, n_threads + 1).round().astype(np.int64)

                def rows(lo_hi, b0=b0):
                    lo, hi = int(lo_hi[0]), int(lo_hi[1])
                    if hi > lo:
                        _loo_errors_kernel(codes, y, *model, lo, hi, errors[lo - b0 : hi - b0])

                if pool is None:
                    rows((b0, b1))
                else:
                    list(pool.map(rows, itertools.pairwise(bounds)))
                g0, g1 = start + b0, start + b1
                first = int(np.searchsorted(cs, g0, side="right")) - 1
                last = int(np.searchsorted(cs, g1 - 1, side="right")) - 1
                seg_id = np.arange(first, last + 1, dtype=np.int64)
                seg_lo = (np.maximum(cs[seg_id], g0) - start).astype(np.int64)
                seg_hi = (np.minimum(cs[seg_id + 1], g1) - start).astype(np.int64)
                _add_errors(errors, np.int64(b0), seg_lo, seg_hi, seg_id, self.sse)
        finally:
            if pool is not None:
                pool.shutdown()
        return self

    def merge(self, other: LooStats) -> LooStats:
        self.sse += other.sse
        return self

    def rmse(self) -> np.ndarray:
        return np.sqrt(self.sse.sum(axis=0) / self.n_total)


class _ProjectedCounts:
    """Trees of the selected SkDB model read off kDB-K counts (nested parent sets).

    The kDB-k* tree of an attribute is the top ``1 + k*`` levels of its kDB-K tree, so its
    leaf counts are the kDB-K leaf counts summed over the deeper levels: the same integers a
    fresh count gives.
    """

    def __init__(self, accumulator: CountAccumulator, source_of: dict[int, int],
                 specs: Sequence[TreeSpec]) -> None:
        self.accumulator = accumulator
        self.source_of = source_of
        self.specs = list(specs)

    def tree(self, i: int, **names):
        from .context_tree import ContextTree

        spec = self.specs[i]
        paths, counts = self.accumulator.leaf_counts(self.source_of[i])
        depth = len(spec.cardinalities)
        return ContextTree.from_leaf_counts(
            paths[:, :depth], counts, spec.cardinalities, spec.n_values, **names
        )


# ====================================================================== runners
class LocalRunner:
    """Runs the passes over a :class:`_Source` in this process, chunk after chunk."""

    def __init__(self, source: _Source, n_threads: int = 1) -> None:
        self.source = source
        self.n_threads = n_threads
        self.n_passes = 0

    def _frames(self, first_pass: bool) -> Iterator[tuple[Where, pd.DataFrame]]:
        self.n_passes += 1
        start = 0
        for i, obj in enumerate(self.source.frames(first_pass)):
            frame = _as_frame_chunk(obj, Where("chunk", i, start, 0))
            yield Where("chunk", i, start, len(frame)), frame
            start += len(frame)

    def schema(self, categorical_features: Any, y: Any, max_bins: int) -> SchemaStats:
        for attempt in range(2):
            try:
                stats = None
                for where, frame in self._frames(first_pass=True):
                    if stats is None:
                        stats = _first_stats(frame, y, categorical_features, max_bins, where)
                    stats.update(frame, where)
                if stats is None:
                    raise ValueError("the stream holds no chunk")
                return stats
            except _Restart:
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def run(self, coder: Coder, state: Any) -> Any:
        for where, frame in self._frames(first_pass=False):
            if len(frame) == 0:
                continue
            codes, y = coder.encode(frame, where)
            state.update(codes, y, where.start)
        return state


def _first_stats(frame: pd.DataFrame, y: Any, categorical_features: Any, max_bins: int,
                 where: Where) -> SchemaStats:
    names = [str(c) for c in frame.columns]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise _fail(where, None, None, f"duplicated column names {dup}")
    target = _target_name(y, names)
    features = [c for c in names if c != target]
    X = frame.set_axis(names, axis=1)[features]
    nominal = TableEncoder(categorical_features)._nominal_mask(X)
    from .io import _is_numeric_dtype

    stats = SchemaStats(features, target, nominal, max_bins)
    stats.has_names = all(isinstance(c, str) for c in frame.columns)
    stats.target_numeric = _is_numeric_dtype(frame.iloc[:, names.index(target)].dtype)
    return stats


# ====================================================================== the fit
def _clone(est):
    return type(est)(**est.get_params())


def _commit(est, work) -> None:
    """Replace ``est``'s fitted state by ``work``'s (parameters untouched)."""
    params = set(est._param_names())
    for key in list(est.__dict__):
        if key not in params and (key.endswith("_") or key.startswith("_")) and not (
            key.startswith("__")
        ):
            del est.__dict__[key]
    for key, value in work.__dict__.items():
        if key not in params:
            est.__dict__[key] = value


def fit_passes(est, runner, y: Any, *, max_bins: int = DEFAULT_MAX_BINS,
               pair_memory: int = DEFAULT_PAIR_MEMORY):
    """The passes of a streaming fit over ``runner``; returns a fitted copy of ``est``.

    ``runner`` provides ``schema(categorical_features, y, max_bins)`` and ``run(coder, state)``
    (:class:`LocalRunner`, or :class:`fastpath.distributed.DaskRunner`).
    """
    from .classifier import _check_random_state
    from .selective import DEFAULT_LOO_M, SelectedStructure, _best, selective_structure

    work = _clone(est)
    work._validate_params()
    # pass 1: schema
    stats = runner.schema(work.categorical_features, y, max_bins)
    n = stats.n_rows
    if n == 0:
        raise ValueError("Found array with 0 sample(s) while a minimum of 1 is required.")
    classes, class_order = stats.classes()
    if classes.size < 2:
        raise ValueError(
            f"the target has only 1 class ({classes[0]!r}); a classifier needs at least 2"
        )
    work.classes_ = classes
    n_classes = classes.size
    work.encoder_ = stats.encoder(work.categorical_features, class_order)
    work.n_features_in_ = len(stats.features)
    if getattr(stats, "has_names", True):
        work.feature_names_in_ = np.asarray(stats.features, dtype=object)
    cards = work.encoder_.cardinalities_
    p = len(cards)
    coder = Coder(work.encoder_, stats.target, classes)

    # pass 2: structure statistics
    k = int(work.k)
    if work.structure == "nb":
        structure = structure_mod.naive_bayes(p)
    else:
        if work.structure == "skdb" and n < 2:
            raise ValueError(f"leave-one-out needs at least 2 rows, got {n}")
        n_threads = _n_threads(work.n_jobs)
        groups = _pair_groups(cards, n_classes, n, pair_memory)
        cmi = np.zeros((p, p))
        mi = None
        for pairs in groups:
            ps = runner.run(coder, PairStats(cards, n_classes, n, pairs, n_threads))
            if mi is None:
                mi = ps.mutual_information()
            values = ps.cmi_values()
            cmi[ps.pair_i, ps.pair_j] = values
            cmi[ps.pair_j, ps.pair_i] = values
        if work.structure == "tan":
            structure = structure_mod.tan_from_scores(mi, cmi)
        else:
            structure = structure_mod.kdb_from_scores(mi, cmi, k)
    work.structure_ = structure

    # pass 3: counts, with the m holdout aside
    rng = _check_random_state(work.random_state)
    key = threshold = None
    auto_m = isinstance(work.m, str) and work.m == "auto"
    if work.estimator != "m":
        pass  # HDP estimates: no m to choose (as in memory)
    elif not auto_m:
        work.m_ = float(work.m)
        work.m_scores_ = {}
    else:
        n_hold = holdout_size(n)
        if n_hold < 1 or n - n_hold < 1:
            work.m_ = 1.0
            work.m_scores_ = {}
        else:
            key = holdout_key(rng)
            threshold = holdout_threshold(n, n_hold, key)
    if work.structure == "skdb":
        order = structure.order
        count_specs = [TreeSpec(-1, (), n_classes, ())]
        for i in order:
            ps_ = structure.branching_order(i)
            count_specs.append(
                TreeSpec(i, (-1, *ps_), cards[i], (n_classes, *(cards[q] for q in ps_)))
            )
    else:
        work.tree_specs_ = work._tree_specs(cards, n_classes, range(p))
        count_specs = work.tree_specs_
    counted = runner.run(coder, CountStats(count_specs, key, threshold))
    hold_codes, hold_y = counted.holdout(p)
    train = counted.accumulator
    full = copy.deepcopy(train)
    if hold_y.size:
        full.update(hold_codes, hold_y)

    # pass 4 (SkDB): leave-one-out over the kDB-K counts
    if work.structure == "skdb":
        trees = [full.tree(t) for t in range(1, len(count_specs))]
        class_counts = full.tree(0).counts[0]
        loo_stats = LooStats(count_specs[1:], trees, class_counts, n, structure.k, DEFAULT_LOO_M)
        loo_stats.n_threads = _n_threads(work.n_jobs)
        loo = runner.run(coder, loo_stats)
        rmse = loo.rmse()
        rmse.flags.writeable = False
        n_sel, k_sel = _best(rmse)
        work.selection_ = SelectedStructure(
            structure=selective_structure(structure, n_sel, k_sel),
            attributes=tuple(structure.order[:n_sel]),
            n_selected=n_sel,
            k_selected=k_sel,
            max_k=structure.k,
            m=DEFAULT_LOO_M,
            rmse=rmse,
            full_structure=structure,
        )
        work.structure_ = work.selection_.structure
        work.tree_specs_ = work._tree_specs(cards, n_classes, sorted(work.selection_.attributes))
        position = {a: t + 1 for t, a in enumerate(order)}
        source_of = {0: 0}
        for t, spec in enumerate(work.tree_specs_[1:], start=1):
            source_of[t] = position[spec.child]
        train = _ProjectedCounts(train, source_of, work.tree_specs_)
        full = _ProjectedCounts(full, source_of, work.tree_specs_)

    if key is not None:
        work._score_m(train, hold_codes, hold_y)
    work._fit_tables(full, rng)
    work.n_passes_ = runner.n_passes
    return work


def _n_threads(n_jobs: Any) -> int:
    if n_jobs is None or n_jobs == -1:
        return os.cpu_count() or 1
    return max(1, int(n_jobs))


def fit_stream(est, X: Any, y: Any = None, *, chunksize: int | None = None,
               max_bins: int = DEFAULT_MAX_BINS, pair_memory: int = DEFAULT_PAIR_MEMORY):
    """Fit ``est`` (a :class:`~fastpath.classifier.BayesNetClassifier`) from a stream.

    ``X`` is a path, a callable returning an iterator of DataFrame chunks, an iterator of
    chunks, or a Dask DataFrame (module doc); ``y`` the target column's name (default: the
    last column). On error ``est`` is left as it was.
    """
    if _is_dask_frame(X):
        from .distributed import fit_dask

        return fit_dask(est, X, y, chunksize=chunksize, max_bins=max_bins,
                        pair_memory=pair_memory)
    chunksize = _check_chunksize(chunksize)
    est._validate_params()
    if y is not None and not isinstance(y, str):
        _target_name(y, [])  # raises the TypeError
    source = _open_source(X, chunksize)
    try:
        runner = LocalRunner(source, _n_threads(est.n_jobs))
        work = fit_passes(est, runner, y, max_bins=max_bins, pair_memory=pair_memory)
    finally:
        source.close()
    _commit(est, work)
    return est


# ====================================================================== partial_fit
@dataclass
class PartialState:
    """Counts gathered by ``partial_fit`` (private to the estimator).

    ``accumulator`` counts every row except those of the *reservoir*: the (at most 5,000)
    rows with the smallest holdout hashes seen so far, kept as codes. The m holdout of the
    in-memory fit is the ``min(N/10, 5000)`` rows with the smallest hashes among all ``N``
    rows, so it always lies in the reservoir.
    """

    accumulator: CountAccumulator
    key: int | None
    n_seen: int = 0
    stale: bool = True
    hashes: np.ndarray = field(default_factory=lambda: np.empty(0, np.uint64))
    rows: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    codes: np.ndarray | None = None
    y: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))

    def add(self, codes: np.ndarray, y: np.ndarray) -> None:
        start, n = self.n_seen, y.shape[0]
        if self.key is None:
            self.accumulator.update(codes, y)
        else:
            if self.codes is None:
                self.codes = np.empty((0, codes.shape[1]), np.int64)
            h = np.concatenate([self.hashes, row_hashes(start, start + n, self.key)])
            rows = np.concatenate([self.rows, np.arange(start, start + n, dtype=np.int64)])
            all_codes = np.concatenate([self.codes, codes])
            all_y = np.concatenate([self.y, y])
            if h.size > MAX_HOLDOUT:
                part = np.argpartition(h, MAX_HOLDOUT - 1)
                keep, out = part[:MAX_HOLDOUT], part[MAX_HOLDOUT:]
                self.accumulator.update(all_codes[out], all_y[out])
                h, rows, all_codes, all_y = h[keep], rows[keep], all_codes[keep], all_y[keep]
            self.hashes, self.rows, self.codes, self.y = h, rows, all_codes, all_y
        self.n_seen += n
        self.stale = True


def declare_schema(columns: Mapping[str, Any], *, missing: bool | Sequence[str] = True,
                   categorical_features: Any = "auto") -> TableEncoder:
    """A fitted :class:`~fastpath.encoding.TableEncoder` from declared categories/cut points.

    Parameters
    ----------
    columns : mapping column name -> declaration, in the column order of the data
        A sequence of categories (nominal column), or ``{"categories": [...]}``, or
        ``{"cut_points": [...]}`` (numeric column: sorted finite cut points, possibly empty;
        a value equal to a cut goes to the lower interval).
    missing : bool or sequence of str, default=True
        Reserve a code for a missing value in every column (True), none (False) or the listed
        columns.

    Returns
    -------
    TableEncoder
        Use it as ``partial_fit(..., schema=...)``.
    """
    if not isinstance(columns, Mapping) or not columns:
        raise ValueError("columns must be a non-empty mapping of column name -> declaration")
    with_missing = set(columns) if missing is True else set() if missing is False else set(
        missing
    )
    unknown = sorted(with_missing - set(columns))
    if unknown:
        raise ValueError(f"missing names columns that are not declared: {unknown}")
    codings = []
    for name, decl in columns.items():
        if isinstance(decl, Mapping):
            keys = set(decl)
            if keys == {"categories"}:
                decl = decl["categories"]
            elif keys == {"cut_points"}:
                cuts = np.asarray(decl["cut_points"], dtype=np.float64).ravel()
                if cuts.size and (not np.all(np.isfinite(cuts)) or np.any(np.diff(cuts) <= 0)):
                    raise ValueError(
                        f"column {name!r}: cut points must be finite and strictly increasing"
                    )
                codings.append(AttributeCoding(
                    name=str(name), kind="numeric", cut_points=tuple(float(c) for c in cuts),
                    missing_code=cuts.size + 1 if name in with_missing else None,
                ))
                continue
            else:
                raise ValueError(
                    f"column {name!r}: declare {{'categories': [...]}} or {{'cut_points': [...]}}"
                    f", got keys {sorted(map(str, keys))}"
                )
        if isinstance(decl, str) or not isinstance(decl, collections.abc.Iterable):
            raise ValueError(f"column {name!r}: categories must be a sequence, got {decl!r}")
        cats = tuple(_python_scalar(c) for c in decl)
        if len(set(cats)) != len(cats):
            raise ValueError(f"column {name!r}: categories are not distinct")
        codings.append(AttributeCoding(
            name=str(name), kind="nominal", categories=cats,
            missing_code=len(cats) if name in with_missing else None,
        ))
    enc = TableEncoder(categorical_features)
    enc.codings_ = tuple(codings)
    enc.feature_names_ = tuple(str(c) for c in columns)
    return enc


def _partial_codes(est, frame: pd.DataFrame, y_codes: np.ndarray, call: int) -> np.ndarray:
    codes = est.encoder_.transform(frame)
    if codes.size and codes.min() < 0:
        r, j = (int(v) for v in np.argwhere(codes < 0)[0])
        value = frame.iloc[r, j]
        what = "a missing value" if pd.isna(value) else f"value {value!r}"
        raise StreamError(
            f"partial_fit call {call}, row {r}, column {est.encoder_.feature_names_[j]!r}: "
            f"{what} is outside the schema fixed by the first call (declare it with "
            "schema=declare_schema(...) on the first call)"
        )
    return codes


def _partial_y(est, y: Any, n_rows: int, call: int) -> np.ndarray:
    from .classifier import BayesNetClassifier

    labels, codes = BayesNetClassifier._validate_y(y, n_rows)
    index = pd.Index(est.classes_).get_indexer(pd.Index(labels))
    if (index < 0).any():
        bad = labels[_first_true(index < 0)]
        raise StreamError(
            f"partial_fit call {call}: class label {bad!r} is not one of the classes fixed by "
            f"the first call {list(est.classes_)} (pass classes= on the first call)"
        )
    return index[codes].astype(np.int64)


def partial_fit(est, X: Any, y: Any, classes: Any = None, schema: Any = None):
    """Add a chunk of rows to ``est``'s counts (see ``BayesNetClassifier.partial_fit``)."""
    from .classifier import _check_random_state

    state = getattr(est, "_partial_state", None)
    if state is None:
        work = _clone(est)
        work._validate_params()
        frame = work._validate_X(X, fitting=True)
        if classes is not None:
            declared = np.asarray(classes).ravel()
            cls, _ = work._validate_y(declared, declared.shape[0])
            work.classes_ = cls
        else:
            cls, _ = work._validate_y(y, frame.shape[0])
            work.classes_ = cls
        if work.classes_.size < 2:
            raise ValueError(
                f"the target has only 1 class ({work.classes_[0]!r}); a classifier needs at "
                "least 2 (pass every class with classes= on the first partial_fit call)"
            )
        y_codes = _partial_y(work, y, frame.shape[0], 0)
        n_classes = work.classes_.size
        if schema is None:
            work.encoder_ = TableEncoder(work.categorical_features).fit(frame, y_codes, n_classes)
        else:
            enc = schema if isinstance(schema, TableEncoder) else declare_schema(
                schema, categorical_features=work.categorical_features
            )
            if not hasattr(enc, "codings_"):
                raise ValueError("schema must be a fitted TableEncoder or a declare_schema mapping")
            if len(enc.codings_) != frame.shape[1]:
                raise ValueError(
                    f"schema declares {len(enc.codings_)} columns, X has {frame.shape[1]}"
                )
            names = [str(c) for c in frame.columns]
            if getattr(work, "feature_names_in_", None) is not None and list(
                enc.feature_names_
            ) != names:
                raise ValueError(
                    f"schema declares columns {list(enc.feature_names_)}, X has {names}"
                )
            work.encoder_ = copy.deepcopy(enc)
        codes = _partial_codes(work, frame, y_codes, 0)
        work._learn_structure(codes, y_codes)
        rng = _check_random_state(work.random_state)
        auto_m = isinstance(work.m, str) and work.m == "auto"
        key = holdout_key(rng) if auto_m and work.estimator == "m" else None
        state = PartialState(CountAccumulator(work.tree_specs_), key)
        state.add(codes, y_codes)
        state.n_calls = 1
        work._partial_state = state
        _commit(est, work)
        return est
    frame = est._validate_X(X, fitting=False)
    call = state.n_calls
    y_codes = _partial_y(est, y, frame.shape[0], call)
    codes = _partial_codes(est, frame, y_codes, call)
    state.add(codes, y_codes)
    state.n_calls += 1
    return est


def refresh_partial(est) -> None:
    """Re-estimate the tables from the counts of every ``partial_fit`` call, if stale."""
    from .classifier import _check_random_state

    state: PartialState = est._partial_state
    if not state.stale:
        return
    acc = copy.deepcopy(state.accumulator)
    rng = _check_random_state(est.random_state)
    reservoir = state.codes is not None and state.y.size > 0
    if est.estimator != "m":
        pass  # HDP estimates: no m to choose
    elif state.key is None:
        est.m_ = float(est.m)
        est.m_scores_ = {}
    else:
        n = state.n_seen
        n_hold = holdout_size(n)
        if n_hold < 1 or n - n_hold < 1:
            est.m_ = 1.0
            est.m_scores_ = {}
        else:
            holdout_key(rng)  # keep the generator in step with fit()
            by_hash = np.argsort(state.hashes, kind="stable")
            hold, rest = by_hash[:n_hold], by_hash[n_hold:]
            hold = hold[np.argsort(state.rows[hold], kind="stable")]
            acc.update(state.codes[rest], state.y[rest])
            est._score_m(acc, state.codes[hold], state.y[hold])
            acc.update(state.codes[hold], state.y[hold])
            reservoir = False
    if reservoir:
        acc.update(state.codes, state.y)
    est._fit_tables(acc, rng)
    state.stale = False
