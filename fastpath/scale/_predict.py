"""Tables to predict on, read in chunks: memory follows the chunk, not the file.

:func:`prediction_chunks` reads a CSV/TSV file (optionally compressed), a binary stream of CSV
(standard input), a Parquet file or an ARFF file, and yields :class:`PredictionChunk` objects:
the model's columns typed as the model codes them, the columns the caller keeps (as the file
writes them), and where the chunk sits in the file (for error messages). Only the model's
columns and the kept ones are parsed.

**Typed by the model, as the whole table is.** A column the model codes by its text labels is
read as text (the exact strings of the file), a column it codes as numbers by pandas' parser (a
chunk whose column holds text leaves it to the encoder, which applies the model's policy:
``na_values``, ``numeric_errors``, the tokens the training read as missing), and a nominal
column whose labels are numbers as :func:`fastpath.io.read_table` reads a column. Every chunk is
then checked and coded as ``predict_proba`` checks and codes a DataFrame, so predictions equal,
bit for bit, those of the whole table read by ``read_table`` (tests at chunk sizes 1, 7 and
larger than the file; pandas' parser and ``pandas.to_numeric`` give the same float for every
number). Two cases differ, where the whole-table reader typed a column against the model: a
test column of labels that happen to be all numbers (read as numbers, whose text need not be
the label's), and, with ``numeric_errors="raise"``, a numeric column with fewer than 5 % of
non-numbers (read_table made them missing before the model saw them; here they are refused).
A warning the encoder gives for a chunk is shown once, for the first chunk that gives it.

Parquet files (typed by their schema, as read_table types them), ARFF files (read whole: ARFF
has no chunked reader) and iterators of DataFrames are predicted chunk by chunk as
``predict_proba(chunk)`` would; their error messages are given the chunk and the row in the
whole stream (:func:`relabel_rows`).
"""

from __future__ import annotations

import collections.abc
import io
import os
import re
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..encode._encoder import AttributeCoding
from ..io._column_types import NUMERIC_SHARE, is_numeric_dtype, parse_numbers
from ..io._tables import (
    decompression_error,
    raw_csv_header,
    read_table,
)
from ..utils._dtypes import duplicates, to_float64
from ..utils._validation import missing_columns_message
from ._errors import StreamError, Where
from ._sources import _arrow_to_frame, data_file, malformed_chunk

#: how a model column is read: by its text labels, as numbers, or as read_table reads it
TEXT, NUMBERS, AS_READ = "text", "numbers", "as-read"


@dataclass(frozen=True)
class ColumnPlan:
    """How one of the model's columns is read (:func:`column_plans`)."""

    name: str
    kind: str  # TEXT, NUMBERS or AS_READ


def column_plans(codings: Sequence[Sequence[AttributeCoding]], names: Sequence[str], *,
                 excluded: Sequence[str] = ()) -> list[ColumnPlan]:
    """The plan of each column of ``names`` from every member's codings (an ensemble's members
    code a column alike but for the numeric cut points); the ``excluded`` columns (left out by
    the fit, still checked for) are read as text."""
    plans = []
    j = -1
    for name in names:
        if name in set(excluded):
            plans.append(ColumnPlan(str(name), TEXT))
            continue
        j += 1
        column = [member[j] for member in codings]
        if any(c.kind == "numeric" for c in column):
            kind = NUMBERS
        elif all(isinstance(v, str) for c in column for v in c.categories):
            kind = TEXT
        else:  # labels that are numbers (a numeric column listed in categorical_features)
            kind = AS_READ
        plans.append(ColumnPlan(str(name), kind))
    return plans


@dataclass
class PredictionChunk:
    """One chunk of the table: the model's columns and the kept ones."""

    where: Where
    features: pd.DataFrame
    kept: pd.DataFrame


class EncodingError(StreamError):
    """A file read as UTF-8 is not UTF-8 after its first chunks were yielded; read it again
    from the start with ``encoding="latin-1"`` (what :func:`fastpath.io.read_table` does)."""


def _is_stream(X: Any) -> bool:
    return hasattr(X, "read") and not isinstance(X, str | os.PathLike)


def prediction_chunks(X: Any, plans: Sequence[ColumnPlan] | None, *, chunksize: int,
                      keep: Sequence[str] = (), encoding: str | None = None,
                      sep: str | None = None) -> Iterator[PredictionChunk]:
    """The chunks of ``X`` to predict on.

    Parameters
    ----------
    X : str, os.PathLike, binary file object, or iterator of DataFrames
        A CSV/TSV (any compression pandas infers), Parquet or ARFF file; a binary stream of CSV
        (``sys.stdin.buffer``); or DataFrame chunks (a callable returning them is called once).
    plans : list of ColumnPlan, or None
        The model's columns (:func:`column_plans`), or ``None`` for a model fitted without
        column names: every column of the file but the kept ones, by position.
    chunksize : int
        Rows per chunk read from a file or stream.
    keep : sequence of str
        Columns to carry through, read as text (files and streams); ``ValueError`` naming a
        column the source lacks.
    encoding : str, optional
        Of a file; default UTF-8, and Latin-1 when the file is not UTF-8 (as ``read_table``);
        when that shows only after chunks were yielded, :class:`EncodingError`.
    sep : str, optional
        The field separator of a CSV/TSV file or stream (default: ``","``, a tab for
        ``.tsv``).
    """
    if isinstance(X, str | os.PathLike):
        path, fmt = data_file(X)
        if sep is not None and fmt not in ("csv", "tsv"):
            raise ValueError(f"sep applies to CSV/TSV files only, not to {fmt} ({str(path)!r})")
        if fmt in ("csv", "tsv"):
            try:
                yield from _CsvChunks(path, sep or ("," if fmt == "csv" else "\t"), plans,
                                      keep, chunksize, encoding).chunks()
            except Exception as exc:  # a damaged compressed file: an error naming it
                err = decompression_error(path, exc)
                if err is None:
                    raise
                raise err from exc
        elif fmt == "parquet":
            yield from _parquet_chunks(path, plans, keep, chunksize)
        else:  # ARFF: no chunked reader; the whole table, then predicted a chunk at a time
            frame = read_table(path).frame
            _check_present(list(frame.columns), plans, keep, repr(str(path)))
            yield from _frame_slices(frame, plans, keep, chunksize)
        return
    if _is_stream(X):
        yield from _CsvChunks(X, sep or ",", plans, keep, chunksize, "utf-8").chunks()
        return
    if keep:
        raise ValueError("keep applies to files and streams of CSV; an iterator's chunks are "
                         "the caller's own")
    if callable(X) and not isinstance(X, collections.abc.Iterator):
        X = X()
    if isinstance(X, pd.DataFrame) or not isinstance(X, collections.abc.Iterable):
        raise TypeError(f"cannot read chunks from X of type {type(X).__name__}: give a path, a "
                        "binary stream of CSV, or an iterator of DataFrames")
    start = 0
    for i, obj in enumerate(X):
        where = Where("chunk", i, start, 0)
        if not isinstance(obj, pd.DataFrame):
            raise StreamError(f"{where}: expected a pandas DataFrame, got {type(obj).__name__}")
        where = Where("chunk", i, start, len(obj))
        start += len(obj)
        yield PredictionChunk(where, obj, obj.iloc[:, :0])


def _frame_slices(frame: pd.DataFrame, plans: Sequence[ColumnPlan] | None,
                  keep: Sequence[str], chunksize: int) -> Iterator[PredictionChunk]:
    names = ([p.name for p in plans] if plans is not None
             else [c for c in frame.columns if c not in set(keep)])
    for i, start in enumerate(range(0, len(frame), chunksize)):
        part = frame.iloc[start:start + chunksize]
        yield PredictionChunk(Where("chunk", i, start, len(part)), part[names],
                              part[list(keep)])


def _check_present(columns: Sequence[str], plans: Sequence[ColumnPlan] | None,
                   keep: Sequence[str], what: str, sep: str | None = None) -> None:
    if plans is not None:
        missing = [p.name for p in plans if p.name not in set(columns)]
        if missing:  # with the likely cause: another separator, renamed columns
            raise ValueError(missing_columns_message(missing, list(columns), what=what,
                                                     sep=sep))
    absent = [c for c in keep if c not in set(columns)]
    if absent:
        raise ValueError(f"{what} has no column(s) {absent} to keep; it has {list(columns)}")


def relabel_rows(message: str, where: Where) -> str:
    """An error message about one chunk, with its rows counted in the whole stream: the
    encoder's ``(row N)`` and ``row N:`` become rows of the stream, after the chunk's name."""
    start = where.start or 0
    text = re.sub(r"\(row (\d+)\)", lambda m: f"(row {start + int(m.group(1))})", message)
    text = re.sub(r"\brow (\d+):", lambda m: f"row {start + int(m.group(1))}:", text)
    return f"{where}: {text}"


# ---------------------------------------------------------------------- typing a chunk
class _Typer:
    """Types the model's columns of each CSV chunk by their plans (module doc)."""

    def __init__(self, plans: Sequence[ColumnPlan]) -> None:
        self.plans = plans

    def frame(self, chunk: pd.DataFrame) -> pd.DataFrame:
        return pd.DataFrame({p.name: self.column(chunk[p.name], p) for p in self.plans},
                            index=chunk.index, copy=False)

    @staticmethod
    def column(col: pd.Series, plan: ColumnPlan) -> Any:
        if plan.kind == NUMBERS:
            # pandas' numbers; a chunk holding text is the encoder's to read, by the model's
            # policy (na_values, numeric_errors, the tokens it read as missing in training)
            return to_float64(col) if is_numeric_dtype(col.dtype) else col
        if plan.kind == AS_READ:  # read_table's rule for one column, on this chunk
            if is_numeric_dtype(col.dtype):
                return to_float64(col)
            values, stray = parse_numbers(col)
            present = int(col.notna().sum())
            if not stray.any() or present - int(stray.sum()) >= NUMERIC_SHARE * present:
                return values
        return col


# ---------------------------------------------------------------------- CSV
class _CsvChunks:
    """A CSV/TSV file or a binary stream of CSV, read ``chunksize`` rows at a time with
    :func:`fastpath.io.read_table`'s conventions (only an empty field is missing, a blank
    header cell is ``Unnamed: <position>``, duplicated names are refused)."""

    def __init__(self, source: Path | IO[bytes], sep: str, plans: Sequence[ColumnPlan] | None,
                 keep: Sequence[str], chunksize: int, encoding: str | None) -> None:
        self.source = source
        self.is_file = isinstance(source, Path)
        self.what = repr(str(source)) if self.is_file else "standard input"
        self.sep = sep
        self.plans = plans
        self.keep = list(keep)
        self.chunksize = chunksize
        self.encoding = encoding

    def chunks(self) -> Iterator[PredictionChunk]:
        if not self.is_file:
            yield from self._read("utf-8")
            return
        if self.encoding is not None:
            yield from self._read(self.encoding)
            return
        try:
            yielded = False
            for chunk in self._read("utf-8"):
                yielded = True
                yield chunk
        except UnicodeDecodeError as exc:
            if yielded:
                raise EncodingError(
                    f"{self.what} is not UTF-8 ({exc}); its first chunks were read as UTF-8: "
                    "convert it to UTF-8, or read it again as Latin-1 from the start") from None
            yield from self._read("latin-1")

    def _header(self, encoding: str) -> tuple[list[str], Any]:
        """The header's names, and what pandas reads the rows from."""
        if self.is_file:
            raw = raw_csv_header(self.source, dict(sep=self.sep, compression="infer",
                                                   encoding=encoding))
            return raw, self.source
        # a stream cannot be read twice: the header's lines (a quoted field may hold a line
        # break), then pandas reads on from there
        stream = self.source
        lines = stream.readline()
        while lines.count(b'"') % 2 and (more := stream.readline()):
            lines += more
        if not lines.strip():
            raise ValueError(f"{self.what} is empty (no header row)")
        # parsed as raw_csv_header parses a file's: one row of strings
        first = pd.read_csv(io.StringIO(lines.decode(encoding)), header=None, nrows=1,
                            dtype=str, na_filter=False, sep=self.sep)
        return [str(v) for v in first.iloc[0].tolist()], stream

    def _read(self, encoding: str) -> Iterator[PredictionChunk]:
        raw, source = self._header(encoding)
        dup = duplicates(h for h in raw if h != "")
        if dup:
            raise ValueError(f"{self.what} has duplicated column names: {dup}")
        header = [h if h != "" else f"Unnamed: {i}" for i, h in enumerate(raw)]
        _check_present(header, self.plans, self.keep, self.what, self.sep)
        plans = self.plans if self.plans is not None else [
            ColumnPlan(c, AS_READ) for c in header if c not in set(self.keep)]
        # text columns, kept ones and those the model does not read as the file writes them,
        # numeric ones by pandas' parser. Every column is parsed: with usecols, pandas would
        # drop a row's extra fields without a word, where the whole table's reader refuses
        # the row
        numeric = {p.name for p in plans if p.kind == NUMBERS} - set(self.keep)
        dtype = {c: str for c in header if c not in numeric}
        kw = dict(sep=self.sep, encoding=encoding, names=header, dtype=dtype,
                  keep_default_na=False, na_values=[""], index_col=False,
                  chunksize=self.chunksize, low_memory=False)
        if self.is_file:
            kw.update(header=0, compression="infer")
        else:
            kw.update(header=None)
        typer = _Typer(plans)
        start = 0
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", pd.errors.ParserWarning)
                reader = pd.read_csv(source, **kw)
        except pd.errors.EmptyDataError:
            raise ValueError(f"{self.what} has no data rows (only a header?)") from None
        with reader:
            i = 0
            while True:
                try:
                    # a ParserWarning (a first row longer than the header) is an error; the
                    # filter is set around pandas' call only, never across a yield
                    with warnings.catch_warnings():
                        warnings.simplefilter("error", pd.errors.ParserWarning)
                        frame = next(reader)
                except StopIteration:
                    break
                except pd.errors.ParserError as exc:
                    raise self._malformed(i, exc) from None
                except pd.errors.ParserWarning:
                    raise StreamError(f"{self.what}: chunk {i}, row {start}: the row has more "
                                      "fields than the header") from None
                where = Where("chunk", i, start, len(frame))
                yield PredictionChunk(where, typer.frame(frame), frame[self.keep])
                start += len(frame)
                i += 1
        if i == 0:  # a header only: zero rows in, zero rows out
            empty = pd.DataFrame({c: pd.Series([], dtype=object) for c in header})
            yield PredictionChunk(Where("chunk", 0, 0, 0), typer.frame(empty), empty[self.keep])

    def _malformed(self, i: int, exc: Exception) -> StreamError:
        return malformed_chunk(i, self.chunksize, exc, self.what)


# ---------------------------------------------------------------------- Parquet
def _parquet_chunks(path: Path, plans: Sequence[ColumnPlan] | None, keep: Sequence[str],
                    chunksize: int) -> Iterator[PredictionChunk]:
    try:
        # no pre-buffering, as the streamed fit: memory follows chunksize, not the file
        file = pq.ParquetFile(path, pre_buffer=False, buffer_size=1 << 20)
    except pa.ArrowInvalid as e:
        raise ValueError(f"{str(path)!r} is not a readable Parquet file: {e}") from None
    names = list(file.schema_arrow.names)
    dup = duplicates(names)
    if dup:
        raise ValueError(f"{str(path)!r} has duplicated column names: {dup}")
    _check_present(names, plans, keep, repr(str(path)))
    if plans is None:
        plans = [ColumnPlan(c, AS_READ) for c in names if c not in set(keep)]
    wanted = [c for c in names if c in {p.name for p in plans} | set(keep)]
    start = 0
    batches = file.iter_batches(batch_size=chunksize, columns=wanted)
    if file.metadata.num_rows == 0:  # no rows in, no rows out: one empty chunk of the schema
        batches = iter([pa.RecordBatch.from_pylist(
            [], schema=pa.schema([file.schema_arrow.field(c) for c in wanted]))])
    for i, batch in enumerate(batches):
        frame = _arrow_to_frame(batch)
        # typed by the file's schema, as read_table types it: the encoder reads the columns;
        # the kept ones as pandas reads them (an integer id stays an integer)
        kept = pd.DataFrame({c: batch.column(c).to_pandas() for c in keep}, index=frame.index)
        yield PredictionChunk(Where("chunk", i, start, len(frame)),
                              frame[[p.name for p in plans]], kept)
        start += len(frame)
