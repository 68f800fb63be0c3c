"""Weka ARFF files: a reader (dense and sparse rows, quoting, escapes) and a writer.

The data section is parsed with pandas' C reader whenever that is exact (no backslash escapes,
no sparse rows, a single quote character, ...); otherwise, and whenever the fast reader reports
anything unusual, a line-by-line tokenizer re-parses it and reports errors with their line
number (1-based, counted in the decompressed file). :func:`read_arff` is reached through
:func:`fastpath.io.read_table`.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import lzma
import math
import os
import re
import warnings
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..utils._dtypes import as_nominal, duplicates, to_float64
from ._column_types import is_numeric_dtype
from ._typed_table import NOMINAL, NUMERIC, TableWithTypes

# ----------------------------------------------------------------------------- ARFF


@dataclass
class _Attr:
    name: str
    kind: str  # "numeric" | "nominal" | "string" | "date"
    categories: list[str] | None  # declared values for "nominal"
    line: int


class _ArffError(ValueError):
    pass


def _err(source: str, line: int, msg: str) -> _ArffError:
    return _ArffError(f"{source}: line {line}: {msg}")


def _read_text(path: Path, compression: str | None) -> str:
    if compression is None:
        raw = path.read_bytes()
    elif compression == ".gz":
        with gzip.open(path, "rb") as f:
            raw = f.read()
    elif compression == ".bz2":
        with bz2.open(path, "rb") as f:
            raw = f.read()
    elif compression == ".xz":
        with lzma.open(path, "rb") as f:
            raw = f.read()
    elif compression == ".zip":
        with zipfile.ZipFile(path) as z:
            members = [n for n in z.namelist() if not n.endswith("/")]
            if len(members) != 1:
                raise ValueError(
                    f"{str(path)!r}: a zipped ARFF must hold exactly one file, found {members}"
                )
            raw = z.read(members[0])
    else:
        raise ValueError(
            f"{str(path)!r}: {compression} compression is not supported for ARFF; "
            "supported: .gz, .bz2, .xz, .zip"
        )
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}


def _scan_quoted(s: str, i: int, source: str, lineno: int) -> tuple[str, int]:
    """``s[i]`` is a quote; returns (decoded value, index after the closing quote)."""
    q = s[i]
    i += 1
    n = len(s)
    out = []
    start = i
    while i < n:
        ch = s[i]
        if ch == q:
            out.append(s[start:i])
            return "".join(out), i + 1
        if ch == "\\":
            out.append(s[start:i])
            if i + 1 >= n:
                break
            nxt = s[i + 1]
            if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", s[i + 2 : i + 6] or ""):
                out.append(chr(int(s[i + 2 : i + 6], 16)))
                i += 6
            else:
                out.append(_ESCAPES.get(nxt, nxt))
                i += 2
            start = i
            continue
        i += 1
    raise _err(source, lineno, f"unterminated quoted string starting with {q}")


def _scan_value(
    s: str, i: int, stops: str, source: str, lineno: int
) -> tuple[str | None, bool, int]:
    """Scan one value starting at ``s[i]`` (leading whitespace allowed).

    Returns ``(value, quoted, index of the stop character or len(s))``; an unquoted value ends
    at a character of ``stops`` or at ``%`` (comment); it is stripped. ``None`` for an empty
    unquoted value.
    """
    n = len(s)
    while i < n and s[i] in " \t":
        i += 1
    if i < n and s[i] in "'\"":
        val, i = _scan_quoted(s, i, source, lineno)
        while i < n and s[i] in " \t":
            i += 1
        if i < n and s[i] not in stops and s[i] != "%":
            raise _err(source, lineno, f"unexpected {s[i]!r} after the quoted value {val!r}")
        return val, True, i
    start = i
    while i < n and s[i] not in stops and s[i] != "%":
        if s[i] in "'\"":
            raise _err(
                source,
                lineno,
                f"quote character {s[i]} inside an unquoted value "
                f"{s[start : i + 1]!r}... (quote the whole value)",
            )
        i += 1
    val = s[start:i].strip()
    return (val if val else None), False, i


def _split_fields(line: str, source: str, lineno: int) -> list[tuple[str | None, bool]]:
    """Comma-separated fields of a dense data line (comment removed)."""
    if "'" not in line and '"' not in line and "\\" not in line:
        body = line.split("%", 1)[0]
        if body.strip() == "":
            return []
        out = []
        for v in body.split(","):
            v = v.strip()
            out.append((v if v else None, False))
        return out
    fields = []
    i, n = 0, len(line)
    while True:
        val, quoted, i = _scan_value(line, i, ",", source, lineno)
        fields.append((val, quoted))
        if i >= n or line[i] == "%":
            break
        i += 1  # the comma
    if len(fields) == 1 and fields[0] == (None, False):
        return []
    return fields


def _parse_sparse(line: str, n_attr: int, source: str, lineno: int) -> dict[int, tuple]:
    i = line.index("{") + 1
    n = len(line)
    out: dict[int, tuple] = {}
    while True:
        while i < n and line[i] in " \t":
            i += 1
        if i < n and line[i] == "}":
            i += 1
            break
        m = re.compile(r"\d+").match(line, i)
        if not m:
            raise _err(source, lineno, "sparse row: expected an attribute index")
        idx = int(m.group())
        if idx >= n_attr:
            raise _err(source, lineno, f"sparse row: attribute index {idx} >= {n_attr} attributes")
        if idx in out:
            raise _err(source, lineno, f"sparse row: attribute index {idx} given twice")
        i = m.end()
        if i >= n or line[i] not in " \t":
            raise _err(source, lineno, "sparse row: expected whitespace after the attribute index")
        val, quoted, i = _scan_value(line, i, ",}", source, lineno)
        if val is None and not quoted:
            raise _err(source, lineno, f"sparse row: no value for attribute index {idx}")
        out[idx] = (val, quoted)
        if i >= n:
            raise _err(source, lineno, "sparse row: missing closing '}'")
        if line[i] == "}":
            i += 1
            break
        if line[i] != ",":
            raise _err(source, lineno, f"sparse row: unexpected {line[i]!r}")
        i += 1
    rest = line[i:].split("%", 1)[0].strip()
    if rest:
        if rest.lstrip(",").strip().startswith("{"):
            raise _err(source, lineno, "instance weights ({w} after a row) are not supported")
        raise _err(source, lineno, f"unexpected text after a sparse row: {rest!r}")
    return out


_NUMERIC_TYPES = {"numeric", "real", "integer"}


def _parse_attribute(body: str, source: str, lineno: int) -> _Attr:
    """``body`` is the text after ``@attribute``."""
    s = body
    n = len(s)
    i = 0
    while i < n and s[i] in " \t":
        i += 1
    if i >= n:
        raise _err(source, lineno, "@attribute without a name")
    if s[i] in "'\"":
        name, i = _scan_quoted(s, i, source, lineno)
    else:
        start = i
        while i < n and s[i] not in " \t{%":
            i += 1
        name = s[start:i]
    rest = s[i:].strip()
    if rest.startswith("{"):
        cats = []
        j = 1
        m = len(rest)
        while True:
            while j < m and rest[j] in " \t":
                j += 1
            if j < m and rest[j] == "}" and not cats:
                j += 1
                break
            val, quoted, j = _scan_value(rest, j, ",}", source, lineno)
            if val is None and not quoted:
                raise _err(source, lineno, f"attribute {name!r}: empty nominal value")
            cats.append(val)
            if j >= m or rest[j] == "%":
                raise _err(source, lineno, f"attribute {name!r}: missing closing '}}'")
            if rest[j] == "}":
                j += 1
                break
            j += 1
        tail = rest[j:].split("%", 1)[0].strip()
        if tail:
            raise _err(source, lineno, f"attribute {name!r}: unexpected {tail!r} after '}}'")
        dup = duplicates(cats)
        if dup:
            raise _err(source, lineno, f"attribute {name!r}: nominal values declared twice: {dup}")
        return _Attr(name, "nominal", cats, lineno)
    rest = rest.split("%", 1)[0].strip()
    if not rest:
        raise _err(source, lineno, f"attribute {name!r} has no type")
    word = rest.split(None, 1)[0].lower()
    if word in _NUMERIC_TYPES:
        if rest.split(None, 1)[1:]:
            raise _err(source, lineno, f"attribute {name!r}: unexpected text after {word!r}")
        return _Attr(name, "numeric", None, lineno)
    if word == "string":
        return _Attr(name, "string", None, lineno)
    if word == "date":
        return _Attr(name, "date", None, lineno)
    if word == "relational":
        raise _err(source, lineno, f"attribute {name!r}: relational attributes are not supported")
    raise _err(
        source,
        lineno,
        f"attribute {name!r}: unknown type {rest!r} (expected numeric, real, integer, string, "
        "date or {...})",
    )


def _parse_header(text: str, source: str) -> tuple[str | None, list[_Attr], int, int]:
    """Returns (relation, attributes, offset of the data section, line number of @data)."""
    relation = None
    attrs: list[_Attr] = []
    pos = 0
    lineno = 0
    n = len(text)
    while pos < n:
        end = text.find("\n", pos)
        if end < 0:
            end = n
        line = text[pos:end].rstrip("\r")
        lineno += 1
        pos = end + 1
        stripped = line.strip()
        if not stripped or stripped.startswith("%"):
            continue
        if not stripped.startswith("@"):
            raise _err(source, lineno, f"expected @relation, @attribute or @data, got {stripped!r}")
        kw = re.match(r"@([A-Za-z]+)", stripped)
        key = kw.group(1).lower() if kw else ""
        body = stripped[kw.end() :] if kw else ""
        if key == "relation":
            if relation is not None:
                raise _err(source, lineno, "a second @relation")
            if attrs:
                raise _err(source, lineno, "@relation after @attribute")
            b = body.strip()
            if b and b[0] in "'\"":
                relation, _ = _scan_quoted(b, 0, source, lineno)
            else:
                relation = b.split("%", 1)[0].strip()
        elif key == "attribute":
            attrs.append(_parse_attribute(body, source, lineno))
        elif key == "data":
            if body.split("%", 1)[0].strip():
                raise _err(source, lineno, "unexpected text after @data")
            if not attrs:
                raise _err(source, lineno, "@data before any @attribute")
            dup = duplicates(a.name for a in attrs)
            if dup:
                raise ValueError(f"{source}: duplicated attribute names: {dup}")
            return relation, attrs, min(pos, n), lineno
        elif key == "end":
            raise _err(source, lineno, "@end outside a relational attribute")
        else:
            raise _err(source, lineno, f"unknown keyword @{key}")
    raise ValueError(f"{source}: no @data section")


class _FastPathFailed(Exception):
    pass


_QUOTED_MISSING_LOOKALIKE = re.compile(r"'\?'|\"\?\"|''|\"\"")
_TRAILING_WS = re.compile(r"[ \t]+(?:,|%|\r?\n|\r|$)", re.MULTILINE)


def _read_data_csv(data, dtype, na_values, has_sq, quoted, nrows) -> pd.DataFrame:
    return pd.read_csv(
        io.StringIO(data),
        sep=",",
        header=None,
        index_col=False,
        dtype=dtype,
        na_values=na_values,
        keep_default_na=False,
        quotechar="'" if has_sq else '"',
        quoting=csv.QUOTE_MINIMAL if quoted else csv.QUOTE_NONE,
        doublequote=False,
        comment="%",
        skipinitialspace=True,
        skip_blank_lines=True,
        nrows=nrows,
        low_memory=False,
        engine="c",
    )


def _arff_fast(data: str, attrs: list[_Attr], nrows: int | None) -> dict[str, object] | None:
    """Parse the dense data section with pandas' C reader.

    Returns ``None`` (or raises _FastPathFailed) whenever the result might differ from the
    line-by-line parser's, which then re-parses the section (and reports errors precisely).
    """
    if "\\" in data or "{" in data:
        return None  # escapes, sparse rows, instance weights
    has_sq, has_dq = "'" in data, '"' in data
    if has_sq and has_dq:
        return None
    if _TRAILING_WS.search(data):
        return None  # pandas would keep whitespace before a separator in the value
    if _QUOTED_MISSING_LOOKALIKE.search(data):
        return None  # quoted '?' / '' are values, but pandas would make them missing
    for a in attrs:
        if a.kind == "nominal" and ("" in a.categories or "?" in a.categories):
            return None  # quoted '?' / '' would be indistinguishable from missing
    k = len(attrs)
    dtype: dict[int, object] = {}
    na_values: dict[int, list[str]] = {}
    for j, a in enumerate(attrs):
        last = j == k - 1
        if a.kind == "nominal":
            # undeclared values get code -1; '?' and '' get the two extra codes
            dtype[j] = pd.CategoricalDtype([*a.categories, "?", ""])
        elif a.kind == "numeric" and not last:
            dtype[j] = np.float64
            na_values[j] = ["?", ""]
        else:
            dtype[j] = str  # string/date, or the numeric last column (kept raw, see below)
            if not last:
                na_values[j] = ["?", ""]
    quoted = has_sq or has_dq
    try:
        with warnings.catch_warnings():
            # undeclared nominal values become code -1 (detected below); pandas warns that this
            # will raise in a future version, which the except clause also handles
            warnings.simplefilter("ignore")
            df = _read_data_csv(data, dtype, na_values, has_sq, quoted, nrows)
    except pd.errors.EmptyDataError:
        return None  # no rows: the line parser is as fast and keeps the declared categories
    except Exception:
        raise _FastPathFailed from None
    if df.shape[1] != k:
        raise _FastPathFailed
    out: dict[str, object] = {}
    for j, a in enumerate(attrs):
        col = df[j]
        last = j == k - 1
        if a.kind == "nominal":
            codes = np.asarray(col.cat.codes, dtype=np.int64)
            nd = len(a.categories)
            if (codes < 0).any():
                raise _FastPathFailed  # an undeclared value
            if last and (codes == nd + 1).any():
                raise _FastPathFailed  # '' in the last column: maybe a short row
            codes[codes >= nd] = -1
            out[a.name] = pd.Categorical.from_codes(codes, categories=pd.Index(a.categories))
        elif a.kind == "numeric" and not last:
            out[a.name] = col.to_numpy(dtype=np.float64)
        elif last:
            raw = col.to_numpy(dtype=object)
            if len(raw) and (raw == "").any():
                raise _FastPathFailed  # '' in the last column: maybe a short row
            miss = raw == "?"
            if a.kind == "numeric":
                vals = pd.to_numeric(pd.Series(np.where(miss, "nan", raw)), errors="coerce")
                if (vals.isna().to_numpy() & ~miss).any():
                    raise _FastPathFailed
                out[a.name] = vals.to_numpy(dtype=np.float64)
            else:
                raw = raw.copy()
                raw[miss] = None
                out[a.name] = pd.Categorical(raw)
        else:
            out[a.name] = pd.Categorical(col.to_numpy(dtype=object, na_value=None))
    return out


def _arff_slow(
    data: str, first_line: int, attrs: list[_Attr], nrows: int | None, source: str
) -> dict[str, object]:
    k = len(attrs)
    cols: list[list] = [[] for _ in range(k)]
    nominal_sets = [set(a.categories) if a.kind == "nominal" else None for a in attrs]
    lineno = first_line
    nrow = 0
    for line in data.splitlines():
        lineno += 1
        if nrows is not None and nrow >= nrows:
            break
        s = line.strip()
        if not s or s.startswith("%"):
            continue
        if s.startswith("{"):
            sparse = _parse_sparse(line, k, source, lineno)
            fields = []
            for j, a in enumerate(attrs):
                if j in sparse:
                    fields.append(sparse[j])
                elif a.kind == "numeric":
                    fields.append(("0", False))
                elif a.kind == "nominal":
                    if not a.categories:
                        raise _err(
                            source,
                            lineno,
                            f"sparse row omits nominal attribute {a.name!r}"
                            " which has no declared values",
                        )
                    fields.append((a.categories[0], True))
                else:
                    raise _err(
                        source,
                        lineno,
                        f"sparse row omits {a.kind} attribute {a.name!r} (not supported)",
                    )
        else:
            fields = _split_fields(line, source, lineno)
            if not fields:
                continue
            if len(fields) > k and fields[k][0] is not None and fields[k][0].startswith("{"):
                raise _err(source, lineno, "instance weights ({w} after a row) are not supported")
            if len(fields) != k:
                raise _err(
                    source,
                    lineno,
                    f"expected {k} comma-separated values, found {len(fields)}",
                )
        for j, ((val, quoted), a) in enumerate(zip(fields, attrs, strict=True)):
            missing = val is None or (val == "?" and not quoted)
            if a.kind == "numeric":
                if missing:
                    cols[j].append(math.nan)
                    continue
                try:
                    if "_" in val:
                        raise ValueError
                    cols[j].append(float(val))
                except ValueError:
                    raise _err(
                        source, lineno, f"attribute {a.name!r}: {val!r} is not a number"
                    ) from None
            else:
                if missing:
                    cols[j].append(None)
                    continue
                if nominal_sets[j] is not None and val not in nominal_sets[j]:
                    raise _err(
                        source,
                        lineno,
                        f"attribute {a.name!r}: value {val!r} is not among the declared values "
                        f"{a.categories}",
                    )
                cols[j].append(val)
        nrow += 1
    out: dict[str, object] = {}
    for j, a in enumerate(attrs):
        if a.kind == "numeric":
            out[a.name] = np.asarray(cols[j], dtype=np.float64)
        elif a.kind == "nominal":
            out[a.name] = pd.Categorical(
                np.asarray(cols[j], dtype=object), categories=pd.Index(a.categories)
            )
        else:
            out[a.name] = pd.Categorical(np.asarray(cols[j], dtype=object))
    return out


def _parse_arff_text(text: str, source: str, *, columns=None, nrows=None) -> TableWithTypes:
    relation, attrs, offset, data_line = _parse_header(text, source)
    names = [a.name for a in attrs]
    if columns is not None:
        have = set(names)
        missing = [c for c in columns if c not in have]
        if missing:
            raise ValueError(f"{source} has no column(s) {missing}; it has {names}")
    data = text[offset:]
    out = None
    try:
        out = _arff_fast(data, attrs, nrows)
    except _FastPathFailed:
        out = None
    if out is None:
        out = _arff_slow(data, data_line, attrs, nrows, source)
    order = list(columns) if columns is not None else names
    types = {}
    frame_data = {}
    kinds = {a.name: a.kind for a in attrs}
    for c in order:
        v = out[c]
        if kinds[c] == "numeric":
            frame_data[c] = np.asarray(v, dtype=np.float64)
            types[c] = NUMERIC
        else:
            if not isinstance(v, pd.Categorical):
                v = pd.Categorical(np.asarray(v, dtype=object))
            frame_data[c] = _str_categories(v)
            types[c] = NOMINAL
    frame = pd.DataFrame(frame_data)
    return TableWithTypes(frame=frame, types=types, relation=relation, source_format="arff")


def _str_categories(cat: pd.Categorical) -> pd.Categorical:
    return pd.Categorical.from_codes(
        np.asarray(cat.codes), categories=pd.Index([str(c) for c in cat.categories])
    )


def read_arff(path: Path, *, compression, columns, nrows) -> TableWithTypes:
    text = _read_text(path, compression)
    return _parse_arff_text(text, str(path), columns=columns, nrows=nrows)


# ----------------------------------------------------------------------------- writing

_QUOTE_TRIGGERS = set("\n\r'\"\\\t% ,{}\x1e")


def _arff_quote(s: str) -> str:
    """Weka's ``Utils.quote``: single quotes plus backslash escapes, only where needed."""
    # any white space (Unicode too: str.strip would eat it when reading back) needs quotes
    if s == "" or s == "?" or any(ch in _QUOTE_TRIGGERS or ch.isspace() for ch in s):
        esc = (
            s.replace("\\", "\\\\")
            .replace("'", "\\'")
            .replace('"', '\\"')
            .replace("%", "\\%")
            .replace("\n", "\\n")
            .replace("\r", "\\r")
            .replace("\t", "\\t")
            .replace("\x1e", "\\u001E")
        )
        return "'" + esc + "'"
    return s


def _format_number(x: float) -> str:
    if math.isnan(x):
        return "?"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    return repr(x)


def write_arff(
    df: pd.DataFrame,
    path: str | os.PathLike,
    relation: str = "data",
    *,
    types: Mapping[str, str] | None = None,
) -> None:
    """Write ``df`` as a (dense) ARFF file; ``.gz``/``.bz2``/``.xz`` names are compressed.

    Column types are ``types[c]`` when given, else numeric for numeric dtypes (bool excluded)
    and nominal otherwise. A nominal column declares its categories in order when it is a
    Categorical, else its distinct non-missing values as strings, sorted. Missing values are
    written as ``?``; names and values are quoted as Weka's ``Utils.quote`` does. Integral
    numbers are written without a decimal point, others with ``repr`` (round-trip exact).
    """
    p = Path(os.fspath(path))
    names = [str(c) for c in df.columns]
    dup = duplicates(names)
    if dup:
        raise ValueError(f"duplicated column names: {dup}")
    types = dict(types or {})
    unknown = [c for c in types if c not in set(names)]
    if unknown:
        raise ValueError(f"types names unknown columns: {unknown}")
    lines = [f"@relation {_arff_quote(str(relation))}", ""]
    col_strings = []
    for c, name in zip(df.columns, names, strict=True):
        s = df[c]
        kind = types.get(name)
        if kind is None:
            kind = NUMERIC if is_numeric_dtype(s.dtype) else NOMINAL
        if kind not in (NUMERIC, NOMINAL):
            raise ValueError(f"type of {name!r} must be 'nominal' or 'numeric', got {kind!r}")
        if kind == NUMERIC:
            try:
                vals = to_float64(s)
            except (TypeError, ValueError):
                raise ValueError(f"column {name!r} is declared numeric but is not") from None
            lines.append(f"@attribute {_arff_quote(name)} numeric")
            col_strings.append([_format_number(float(v)) for v in vals])
        else:
            cat = as_nominal(s)  # declared order, or sorted distinct strings
            cats = [str(x) for x in cat.categories]
            quoted = [_arff_quote(x) for x in cats]
            lines.append(f"@attribute {_arff_quote(name)} {{{','.join(quoted)}}}")
            lookup = np.array([*quoted, "?"], dtype=object)
            col_strings.append(lookup[np.asarray(cat.codes, dtype=np.int64)].tolist())
    lines += ["", "@data"]
    body = "\n".join(",".join(row) for row in zip(*col_strings, strict=True)) if col_strings else ""
    text = "\n".join(lines) + "\n" + (body + "\n" if body else "")
    name = p.name.lower()
    if name.endswith(".gz"):
        opener = gzip.open
    elif name.endswith(".bz2"):
        opener = bz2.open
    elif name.endswith(".xz"):
        opener = lzma.open
    else:
        opener = open
    with opener(p, "wt", encoding="utf-8", newline="\n") as f:
        f.write(text)
