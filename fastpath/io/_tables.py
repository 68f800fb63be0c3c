"""Reading tables (CSV, Parquet, Weka ARFF) with the declared type of every column.

Entry points
------------
:func:`read_table` reads a file and returns a :class:`TableWithTypes`: a
:class:`pandas.DataFrame` plus a ``types`` mapping ``column -> "nominal" | "numeric"``.
:func:`write_arff` writes a data frame as ARFF (handy for tests and for handing data to Weka).

Column conventions (every format)
---------------------------------
* **numeric** columns are ``float64`` (integers included, so that a missing value is ``NaN``).
* **nominal** columns are :class:`pandas.Categorical` whose categories are ``str``.
  ARFF nominal attributes keep the *declared* category order, so a value that is declared but
  never occurs is still a category. Otherwise (CSV, Parquet, ARFF ``string``/``date``) the
  categories are the distinct observed strings in lexicographic order (a Parquet dictionary /
  pandas categorical column keeps its own category order).
* A missing value is ``NaN`` in a numeric column and a missing entry (code ``-1``) in a
  categorical one.

Formats
-------
The format is taken from the file name (or the ``format=`` argument):

=============================  ==========================================================
``.csv``, ``.tsv``             header row required; compressed variants ``.gz``, ``.bz2``,
                               ``.xz``, ``.zip``, ``.zst`` as pandas infers them
``.parquet``, ``.pq``          read with pyarrow
``.arff`` (+ ``.gz``/``.bz2``  Weka's attribute-relation file format; parsed here
/``.xz``/``.zip``)
=============================  ==========================================================

CSV / TSV: a column is numeric when pandas' C parser reads every non-empty field of it as a
number, or when at least 95 % of its non-empty fields are numbers: then the other fields (the
*stray tokens*, such as ``"?"``) are missing values and a ``DataWarning`` names the column, the
tokens and their counts (rule 3 of :mod:`fastpath.io._column_types`, which
:class:`~fastpath.encode.TableEncoder` and streamed fits follow too); ``na_values=[...]`` declares
tokens missing up front, without the warning. Every other column is nominal and keeps its fields
as the exact strings of the file (``"t"``/``"f"``, ``"True"``, ``"01"`` in a column with a
non-number stay strings). Only an empty field, and the ``na_values``, are missing (by default
``"NA"``, ``"?"``, ``"nan"`` are ordinary strings). A column of numeric codes is therefore read as
numeric: callers that know better override the type. A blank header
cell is named ``"Unnamed: <position>"`` (as pandas does); a row with fewer fields than the
header is padded with missing values, one with more raises ``ValueError``. The file is decoded
as UTF-8, falling back to Latin-1 (ARFF too).

Parquet: numeric (integer, floating, decimal) columns are numeric, everything else (string,
bool, dictionary/categorical, timestamps, ...) is nominal with ``str(value)`` as the category.

ARFF (https://waikato.github.io/weka-wiki/formats_and_processing/arff_stable/):

* ``@relation``, ``@attribute``, ``@data`` (keywords case-insensitive); ``%`` starts a comment
  (a whole line, or the rest of a line outside quotes).
* Names and values may be quoted with ``'`` or ``"``; inside quotes ``\\`` escapes
  (``\\'``, ``\\"``, ``\\\\``, ``\\%``, ``\\n``, ``\\t``, ``\\r``, ``\\uXXXX``) are decoded.
* Types: ``numeric``, ``real``, ``integer`` -> numeric (float64); ``{a, b, ...}`` -> nominal
  with the declared categories; ``string`` and ``date [format]`` -> nominal (the date is kept as
  its string, the format is ignored). ``relational`` attributes raise ``ValueError``.
* Data: values separated by commas; an unquoted ``?`` (or an empty field) is missing, a quoted
  ``'?'`` is the string ``?``. A nominal value that was not declared is an error.
* Sparse rows ``{0 x, 3 y}`` are supported: an omitted numeric value is ``0`` and an omitted
  nominal value is the first declared category (Weka's convention); a sparse row that omits a
  ``string``/``date`` attribute raises ``ValueError``. Instance weights (``..., {w}``) raise.
* Deviations from Weka: values must be separated by commas (Weka also accepts whitespace
  alone), and an unquoted value may contain inner spaces (Weka would split it).

The data section of an ARFF file is parsed with pandas' C reader whenever that is exact (no
backslash escapes, no sparse rows, a single quote character, ...); otherwise, and whenever
the fast reader reports anything unusual, a line-by-line tokenizer re-parses it and reports
errors with their line number (1-based, counted in the decompressed file).

Errors: a missing file raises :class:`FileNotFoundError` naming the path; an unsupported
extension raises :class:`ValueError` listing the supported formats; malformed ARFF raises
:class:`ValueError` naming the line; a compressed file that cannot be decompressed (not in the
format its name says, truncated, corrupt) raises :class:`ValueError` naming it
(:func:`decompression_error`); duplicated column names raise :class:`ValueError` naming
them (CSV headers are checked before pandas can rename ``a`` to ``a.1``).
"""

from __future__ import annotations

import lzma
import os
import warnings
import zipfile
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..utils._dtypes import as_nominal, duplicates, to_float64
from ..utils._validation import other_separator
from ..utils._warn import DataWarning, warn
from ._arff import read_arff
from ._column_types import is_numeric_dtype, parse_numbers, stray_message, stray_tokens
from ._typed_table import NOMINAL, NUMERIC, TableWithTypes

_COMPRESSION_SUFFIXES = (".gz", ".bz2", ".xz", ".zip", ".zst")
_COMPRESSION_NAMES = {".gz": "gzip", ".bz2": "bzip2", ".xz": "xz", ".zip": "zip",
                      ".zst": "Zstandard"}
_FORMAT_SUFFIXES = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".arff": "arff",
}
SUPPORTED_FORMATS: tuple[str, ...] = (
    ".csv",
    ".tsv",
    ".parquet",
    ".pq",
    ".arff",
    "plus .gz/.bz2/.xz/.zip/.zst compression of .csv, .tsv (.zst not for .arff)",
)


# ----------------------------------------------------------------------------- dispatch


def detect_format(path: Path) -> tuple[str, str | None]:
    """``(format, compression suffix or None)`` from the file name."""
    name = path.name.lower()
    compression = None
    for suf in _COMPRESSION_SUFFIXES:
        if name.endswith(suf):
            compression = suf
            name = name[: -len(suf)]
            break
    for suf, fmt in _FORMAT_SUFFIXES.items():
        if name.endswith(suf):
            if fmt == "parquet" and compression is not None:
                break
            return fmt, compression
    raise ValueError(
        f"unsupported file type for {str(path)!r}; supported formats: "
        + ", ".join(SUPPORTED_FORMATS)
    )


def read_table(
    path: str | os.PathLike,
    *,
    columns: Sequence[str] | None = None,
    nrows: int | None = None,
    format: str | None = None,
    na_values: Sequence[str] | None = None,
    nominal_columns: Sequence[str | int] | None = None,
    keep_stray_tokens: bool = False,
    sep: str | None = None,
) -> TableWithTypes:
    """Read a CSV/TSV, Parquet or ARFF file with the type of each column.

    Parameters
    ----------
    path : str or path-like
    columns : sequence of str, optional
        Read only these columns, in this order. Unknown names raise ``ValueError``.
    nrows : int, optional
        Read only the first ``nrows`` data rows.
    format : {"csv", "tsv", "parquet", "arff"}, optional
        Overrides the format inferred from the file name (compression is still inferred).
    na_values : sequence of str, optional
        CSV/TSV only: fields that are missing values besides the empty field (e.g. ``["?"]``).
    nominal_columns : sequence of str or int, optional
        CSV/TSV: columns (names, or positions such as ``-1`` for the last) whose values are labels
        and are never read by the 95 % rule: a class column holding ``1``, ``2``, ``3`` and ``U``
        has four classes, not three and a missing value. A column of numbers only is still
        numeric (the caller turns its numbers into labels).
    keep_stray_tokens : bool, default False
        CSV/TSV: a column the 95 % rule reads as numeric keeps its fields as the file's strings
        (typed ``"numeric"`` all the same, without the warning), for a caller that applies the
        rule itself and remembers the tokens: a classifier fitted on it learns them as missing
        (``hdpbn fit``), as one fitted on ``pandas.read_csv``'s frame does.
    sep : str, optional
        CSV/TSV: the field separator (default ``","``, a tab for ``.tsv``), e.g. ``";"``.

    Returns
    -------
    TableWithTypes
        See the module docstring for the column conventions.
    """
    p = Path(os.fspath(path))
    if not p.exists():
        raise FileNotFoundError(f"no such file: {str(p)!r}")
    if p.is_dir():
        raise ValueError(f"{str(p)!r} is a directory, not a data file")
    if nrows is not None:
        nrows = int(nrows)
        if nrows < 0:
            raise ValueError(f"nrows must be >= 0, got {nrows}")
    if columns is not None:
        if isinstance(columns, str):
            columns = [columns]
        columns = list(columns)
        dup = duplicates(columns)
        if dup:
            raise ValueError(f"columns lists these names more than once: {dup}")
    if na_values is not None:
        na_values = [na_values] if isinstance(na_values, str) else list(na_values)
        if not all(isinstance(v, str) for v in na_values):
            raise ValueError(f"na_values must be a sequence of strings, got {na_values!r}")
    try:
        fmt, compression = detect_format(p)
    except ValueError:
        if format is None:
            raise
        fmt, compression = format, None
        for suf in _COMPRESSION_SUFFIXES:
            if p.name.lower().endswith(suf):
                compression = suf
    if format is not None:
        if format not in ("csv", "tsv", "parquet", "arff"):
            raise ValueError(f"format must be one of csv, tsv, parquet, arff; got {format!r}")
        fmt = format
    if sep is not None and (not isinstance(sep, str) or len(sep) != 1 or sep in "\"\r\n"):
        raise ValueError(f"sep must be one character (not a quote or a line break), got {sep!r}")
    if sep is not None and fmt not in ("csv", "tsv"):
        raise ValueError(f"sep applies to CSV/TSV files only, not to {fmt} ({str(p)!r})")
    if na_values and fmt not in ("csv", "tsv"):
        raise ValueError(f"na_values applies to CSV/TSV files only, not to {fmt} ({str(p)!r})")
    if compression is None and fmt != "parquet":
        check_not_binary(p, fmt)
    try:
        if fmt in ("csv", "tsv"):
            return _read_csv(
                p, sep=sep or ("," if fmt == "csv" else "\t"), columns=columns, nrows=nrows,
                fmt=fmt,
                na_values=na_values or [], nominal_columns=nominal_columns or [],
                keep_stray_tokens=keep_stray_tokens,
            )
        if fmt == "parquet":
            return _read_parquet(p, columns=columns, nrows=nrows)
        return read_arff(p, compression=compression, columns=columns, nrows=nrows)
    except Exception as exc:
        err = decompression_error(p, exc)
        if err is None:
            raise
        raise err from exc


#: leading bytes of binary formats a text reader would otherwise tokenise into nonsense
_MAGIC = {
    b"PAR1": "a Parquet file",
    b"PK\x03\x04": "a zip archive",
    b"\x1f\x8b": "a gzip-compressed file",
    b"\xfd7zXZ\x00": "an xz-compressed file",
    b"\x28\xb5\x2f\xfd": "a Zstandard file",
}


def check_not_binary(path: Path, fmt: str) -> None:
    """A file named as text that is binary (a Parquet file named .csv, a .csv.gz without its
    suffix): a ``ValueError`` naming the file and what it is, not a tokenizer error."""
    with open(path, "rb") as fh:
        head = fh.read(8)
    for magic, what in _MAGIC.items():
        if head.startswith(magic):
            raise ValueError(
                f"{str(path)!r} is named as {fmt.upper()} but is {what}; rename it with the right "
                "suffix (.parquet, .csv.gz, ...) or pass format="
            )


def decompression_error(path: str | os.PathLike, exc: BaseException) -> ValueError | None:
    """A ``ValueError`` naming ``path`` when ``exc`` is what decompressing a damaged or
    mislabelled compressed file raises, else ``None``.

    ``path`` is compressed when its name ends in .gz, .bz2, .xz, .zip or .zst. The errors are
    gzip's ``BadGzipFile`` and bz2's ``OSError`` (both ``OSError`` without an ``errno``; a
    missing or unreadable file has one), ``EOFError`` (a truncated stream), ``zlib.error``,
    ``lzma.LZMAError``, ``zipfile.BadZipFile`` and Zstandard's errors.
    """
    name = os.fspath(path)
    suffix = next((s for s in _COMPRESSION_SUFFIXES if name.lower().endswith(s)), None)
    if suffix is None:
        return None
    decompression = isinstance(exc, EOFError | zlib.error | lzma.LZMAError | zipfile.BadZipFile)
    decompression |= isinstance(exc, OSError) and exc.errno is None
    decompression |= type(exc).__module__.partition(".")[0] in ("zstandard", "compression")
    if not decompression:
        return None
    kind = _COMPRESSION_NAMES[suffix]
    return ValueError(
        f"{name!r} is not a readable {kind} file ({exc}); is it damaged, or not {kind} "
        f"compressed as its name ({suffix}) says?"
    )


# ----------------------------------------------------------------------------- helpers


def _named_columns(wanted: Sequence[str | int], order: Sequence[str], path: Path) -> set[str]:
    """The names of ``wanted`` (names or positions in ``order``), checked."""
    out = set()
    for c in wanted:
        if isinstance(c, int | np.integer) and not isinstance(c, bool):
            if not -len(order) <= c < len(order):
                raise ValueError(
                    f"nominal_columns: position {int(c)} is out of range for {str(path)!r} "
                    f"({len(order)} columns)"
                )
            out.add(order[c])
        elif c in order:
            out.add(c)
        else:
            raise ValueError(f"nominal_columns: {str(path)!r} has no column {c!r}")
    return out


def _check_columns(available: Sequence[str], columns: Sequence[str] | None, path: Path) -> None:
    if columns is None:
        return
    have = set(available)
    missing = [c for c in columns if c not in have]
    if missing:
        raise ValueError(f"{str(path)!r} has no column(s) {missing}; it has {list(available)}")


# ----------------------------------------------------------------------------- CSV


def _read_csv(path: Path, *, sep: str, columns, nrows, fmt: str, na_values,
              nominal_columns, keep_stray_tokens: bool = False) -> TableWithTypes:
    try:
        table = _read_csv_encoded(
            path, sep=sep, columns=columns, nrows=nrows, fmt=fmt, encoding="utf-8",
            na_values=na_values, nominal_columns=nominal_columns,
            keep_stray_tokens=keep_stray_tokens,
        )
    except UnicodeDecodeError:
        table = _read_csv_encoded(
            path, sep=sep, columns=columns, nrows=nrows, fmt=fmt, encoding="latin-1",
            na_values=na_values, nominal_columns=nominal_columns,
            keep_stray_tokens=keep_stray_tokens,
        )
    _warn_if_another_separator(path, table, sep)
    return table


def _warn_if_another_separator(path: Path, table: TableWithTypes, sep: str) -> None:
    """One column whose name holds another separator: most likely a ``;``- or tab-separated
    file read with the wrong separator (the fit would then fail on "one column" alone)."""
    guess = other_separator(list(table.frame.columns), sep)
    if guess is not None:
        other, label = guess
        name = str(table.frame.columns[0])
        warn(
            f"{str(path)!r} was read as one column named {name[:60]!r}: is it "
            f"{label}-separated? CSV files are read with ',' and .tsv files with tabs; "
            f"give the separator (read_table(..., sep={other!r}), hdpbn --sep {other!r}), "
            "or convert the file",
            DataWarning)


def _read_csv_encoded(path: Path, *, sep, columns, nrows, fmt, encoding,
                      na_values, nominal_columns, keep_stray_tokens=False) -> TableWithTypes:
    common = dict(sep=sep, compression="infer", encoding=encoding)
    raw_header = raw_csv_header(path, common)
    dup = duplicates(h for h in raw_header if h != "")
    if dup:
        raise ValueError(f"{str(path)!r} has duplicated column names: {dup}")
    # pandas names a blank header cell "Unnamed: <position>"; so do we
    header = [h if h != "" else f"Unnamed: {i}" for i, h in enumerate(raw_header)]
    _check_columns(header, columns, path)
    kw = dict(
        common,
        header=0,
        names=header,
        usecols=columns,
        nrows=nrows,
        keep_default_na=False,
        na_values=["", *na_values],
        low_memory=False,
        index_col=False,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", pd.errors.ParserWarning)
        try:
            df = pd.read_csv(path, **kw)
        except pd.errors.ParserWarning:
            raise ValueError(
                f"{str(path)!r}: the first data row has more fields than the header"
            ) from None
    order = list(columns) if columns is not None else header
    labels = _named_columns(nominal_columns, order, path)
    reread = []
    for c in order:
        col = df[c]
        if is_numeric_dtype(col.dtype):
            continue
        if pd.api.types.is_string_dtype(col.dtype):
            if col.dtype != object or all(isinstance(v, str) for v in col.dropna()):
                continue
        reread.append(c)  # bool-like or mixed values: read the raw strings again
    if reread:
        raw = pd.read_csv(path, **dict(kw, usecols=reread, dtype=str))
        df = df.assign(**{c: raw[c] for c in reread})
    data = {}
    types = {}
    for c in order:
        col = df[c]
        labelled = c in labels
        tokens = None if is_numeric_dtype(col.dtype) or labelled else stray_tokens(col)
        if is_numeric_dtype(col.dtype):
            data[c] = to_float64(col)
            types[c] = NUMERIC
        elif tokens is not None and keep_stray_tokens:
            data[c] = col  # the file's strings: the classifier's encoder learns the tokens
            types[c] = NUMERIC
        elif tokens is not None:
            data[c] = parse_numbers(col)[0]
            types[c] = NUMERIC
            warn(
                stray_message(
                    c, tokens, int(col.notna().sum()),
                    f"pass na_values={list(tokens)[:5]!r} to read_table (hdpbn --na-values "
                    f"{','.join(list(tokens)[:5])!r}) to read them as missing without this "
                    "warning, or fix the file; declare the column categorical "
                    "(categorical_features, hdpbn --categorical) to code it as nominal",
                ), DataWarning)
        else:
            data[c] = as_nominal(col)
            types[c] = NOMINAL
    frame = pd.DataFrame({c: data[c] for c in order})
    return TableWithTypes(frame=frame, types=types, relation=None, source_format=fmt)


def raw_csv_header(path: Path, common: dict) -> list[str]:
    try:
        first = pd.read_csv(path, header=None, nrows=1, dtype=str, na_filter=False, **common)
    except pd.errors.EmptyDataError:
        raise ValueError(f"{str(path)!r} is empty (no header row)") from None
    return [str(v) for v in first.iloc[0].tolist()] if len(first) else []


# ----------------------------------------------------------------------------- Parquet


def _read_parquet(path: Path, *, columns, nrows) -> TableWithTypes:
    try:
        pf = pq.ParquetFile(path)
    except pa.ArrowInvalid as e:
        raise ValueError(f"{str(path)!r} is not a readable Parquet file: {e}") from None
    names = list(pf.schema_arrow.names)
    dup = duplicates(names)
    if dup:
        raise ValueError(f"{str(path)!r} has duplicated column names: {dup}")
    _check_columns(names, columns, path)
    cols = list(columns) if columns is not None else names
    if nrows is None:
        table = pf.read(columns=cols)
    else:
        batches, got = [], 0
        if nrows > 0:
            for b in pf.iter_batches(batch_size=min(max(nrows, 1), 65536), columns=cols):
                batches.append(b)
                got += b.num_rows
                if got >= nrows:
                    break
        if batches:
            table = pa.Table.from_batches(batches).slice(0, nrows)
        else:
            table = pf.schema_arrow.empty_table().select(cols)
    data, types = {}, {}
    for c in cols:
        arr = table.column(c)
        t = arr.type
        if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
            data[c] = arr.cast(pa.float64()).to_numpy(zero_copy_only=False).astype(np.float64)
            types[c] = NUMERIC
        else:
            s = arr.to_pandas()
            if is_numeric_dtype(s.dtype):  # e.g. pandas extension types
                data[c] = to_float64(s)
                types[c] = NUMERIC
            else:
                data[c] = as_nominal(s)
                types[c] = NOMINAL
    frame = pd.DataFrame({c: data[c] for c in cols})
    return TableWithTypes(frame=frame, types=types, relation=None, source_format="parquet")
