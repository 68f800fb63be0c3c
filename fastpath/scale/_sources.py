"""Streams of DataFrame chunks that can be read several times: files, factories, iterators.

A fit out of core reads its data in a few passes. :func:`open_source` turns what the user passed
into a :class:`Source`: a CSV/TSV file (optionally compressed; column types by
:func:`fastpath.io.read_table`'s rule on the first chunk), a Parquet file (record batches), a
callable returning a fresh iterator of chunks (called once per pass), or a one-shot iterator
(spilled to a temporary directory on the first pass). Dask DataFrames have their own runner
(:mod:`fastpath.scale._dask`).
"""

from __future__ import annotations

import collections.abc
import os
import pickle
import re
import tempfile
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..io._column_types import is_numeric_dtype
from ..io._tables import check_not_binary, detect_format, raw_csv_header
from ..utils._dtypes import as_nominal, duplicates
from ..utils._validation import check_int
from ._errors import StreamError, Where

#: rows per chunk when reading a file
DEFAULT_CHUNKSIZE = 100_000


def is_dask_frame(X: Any) -> bool:
    mod = type(X).__module__ or ""
    return mod.startswith(("dask", "dask_expr")) and hasattr(X, "npartitions")


def is_stream_source(X: Any) -> bool:
    """Whether ``fit`` streams ``X``: a path, a chunk iterator or factory, a Dask DataFrame."""
    if isinstance(X, str | os.PathLike):
        return True
    if isinstance(X, pd.DataFrame | pd.Series | np.ndarray):
        return False
    if is_dask_frame(X):
        return True
    if isinstance(X, collections.abc.Iterator):
        return True
    return callable(X) and not isinstance(X, type)


class Restart(Exception):
    """A source asks to restart the first pass (e.g. with another text encoding)."""


def as_frame_chunk(obj: Any, where: Where) -> pd.DataFrame:
    if isinstance(obj, pd.DataFrame):
        return obj
    if type(obj).__module__.startswith("pyarrow") and hasattr(obj, "to_pandas"):
        return obj.to_pandas()
    raise StreamError(
        f"{where}: expected a pandas DataFrame (or pyarrow record batch), got "
        f"{type(obj).__name__}"
    )


class Source:
    """A stream of DataFrame chunks that can be read several times."""

    kind = "chunk"

    def frames(self, first_pass: bool) -> Iterator[pd.DataFrame]:
        raise NotImplementedError

    def close(self) -> None:
        pass


class _FactorySource(Source):
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


class _SpillSource(Source):
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
                frame = as_frame_chunk(obj, Where("chunk", i, None, 0))
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


class _CsvSource(Source):
    """CSV/TSV read in chunks with the column conventions of :func:`fastpath.io.read_table`."""

    def __init__(self, path: Path, sep: str, chunksize: int) -> None:
        self.path = path
        self.sep = sep
        self.chunksize = chunksize
        self.encoding = "utf-8"
        self.text_columns: list[str] | None = None
        self.header: list[str] | None = None

    def _kw(self) -> dict:
        common = dict(sep=self.sep, compression="infer", encoding=self.encoding)
        if self.header is None:
            raw = raw_csv_header(self.path, common)
            dup = duplicates(h for h in raw if h != "")
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
        try:
            kw = self._kw()
            with warnings.catch_warnings():
                warnings.simplefilter("error", pd.errors.ParserWarning)
                if self.text_columns is None:
                    # column types from the first chunk, by read_table's rule
                    head = pd.read_csv(self.path, nrows=self.chunksize, low_memory=False, **kw)
                    self.text_columns = [
                        c for c in self.header if not is_numeric_dtype(head[c].dtype)
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
                raise Restart() from None
            raise

    def _malformed(self, i: int, exc: Exception) -> StreamError:
        return malformed_chunk(i, self.chunksize, exc, repr(str(self.path)), " of the file")


class _ParquetSource(Source):
    """Parquet read in record batches with :func:`fastpath.io.read_table`'s column rules."""

    def __init__(self, path: Path, chunksize: int) -> None:
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
            data[name] = s.to_numpy(float) if is_numeric_dtype(s.dtype) else as_nominal(s)
    return pd.DataFrame(data)


def malformed_chunk(i: int, chunksize: int, exc: Exception, what: str,
                    of_file: str = "") -> StreamError:
    """The error of pandas' reader on chunk ``i`` of ``what``, naming the chunk, and the row and
    line when pandas says which line (the header is line 1: rows are 0-based; quoted line
    breaks would shift this)."""
    start = i * chunksize
    text = str(exc).strip()
    found = re.search(r"line (\d+)", text)
    where = f"chunk {i} (rows {start}-{start + chunksize - 1})"
    if found:
        line = int(found.group(1))
        where += f", row {line - 2} (line {line}{of_file})"
    return StreamError(f"{where} of {what}: malformed CSV row: {text}")


def data_file(X: str | os.PathLike) -> tuple[Path, str]:
    """The path of a data file to read in chunks, and its format (:func:`detect_format`):
    ``FileNotFoundError`` for a missing file, ``ValueError`` for a directory or for binary
    content under a text format's name."""
    p = Path(os.fspath(X))
    if not p.exists():
        raise FileNotFoundError(f"no such file: {str(p)!r}")
    if p.is_dir():
        raise ValueError(f"{str(p)!r} is a directory, not a data file")
    fmt, compression = detect_format(p)
    if fmt in ("csv", "tsv") and compression is None:
        check_not_binary(p, fmt)
    return p, fmt


def open_source(X: Any, chunksize: int, sep: str | None = None) -> Source:
    """The source of a streamed fit; ``sep``: a CSV/TSV file's field separator (``","``, a tab
    for ``.tsv``, by default), refused for any other source."""
    if sep is not None:
        check_separator(sep)
        if not isinstance(X, str | os.PathLike):
            raise ValueError("sep is the field separator of a CSV/TSV file: it applies when X "
                             "is a path")
    if isinstance(X, str | os.PathLike):
        p, fmt = data_file(X)
        if sep is not None and fmt not in ("csv", "tsv"):
            raise ValueError(f"sep applies to CSV/TSV files only, not to {fmt} ({str(p)!r})")
        if fmt in ("csv", "tsv"):
            return _CsvSource(p, sep or ("," if fmt == "csv" else "\t"), chunksize)
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


def check_separator(sep: Any) -> str:
    """``sep``, a CSV's field separator: one character other than a quote or a line end
    (``ValueError`` naming it otherwise)."""
    if not isinstance(sep, str) or len(sep) != 1 or sep in "\"\r\n":
        raise ValueError(f"sep must be one character (e.g. ';' or '\\t'), not a quote or a "
                         f"line end; got {sep!r}")
    return sep


def check_chunksize(chunksize: Any) -> int:
    """Rows per chunk: :data:`DEFAULT_CHUNKSIZE` for None, else a positive integer."""
    return DEFAULT_CHUNKSIZE if chunksize is None else check_int("chunksize", chunksize, 1)


def target_name(y: Any, columns: Sequence[str]) -> str:
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
