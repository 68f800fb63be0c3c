"""Tests for fastpath.io._tables: CSV / Parquet / ARFF reading with column types, and write_arff."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import math
import time
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastpath.io import NOMINAL, NUMERIC, TableWithTypes, read_table, write_arff
from fastpath.io import _arff as fio

DATA = Path(__file__).parent / "data"


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _values(cat) -> list:
    """Categorical -> list of str / None."""
    s = pd.Series(cat)
    return [None if pd.isna(v) else v for v in s.astype(object)]


# ----------------------------------------------------------------------------- ARFF


def test_iris_fixture():
    t = read_table(DATA / "io_iris.arff")
    assert isinstance(t, TableWithTypes)
    assert t.relation == "iris"
    assert t.source_format == "arff"
    assert list(t.types) == ["sepallength", "sepalwidth", "petallength", "petalwidth", "class"]
    assert t.types["class"] == NOMINAL
    assert t.numeric_columns == ["sepallength", "sepalwidth", "petallength", "petalwidth"]
    assert t.nominal_columns == ["class"]
    assert t.frame.shape == (150, 5)
    assert len(t) == 150
    for c in t.numeric_columns:
        assert t.frame[c].dtype == np.float64
    cls = t.frame["class"]
    assert isinstance(cls.dtype, pd.CategoricalDtype)
    assert list(cls.cat.categories) == ["Iris-setosa", "Iris-versicolor", "Iris-virginica"]
    assert cls.value_counts().tolist() == [50, 50, 50]
    assert t.frame.iloc[0, :4].tolist() == [5.1, 3.5, 1.4, 0.2]
    assert t.frame["petallength"].max() == 6.9


ARFF_FEATURES = """\
% a comment line
   % an indented comment
@RELATION 'test relation'

@attribute plain NUMERIC
@Attribute 'quoted name' real   % trailing comment
@ATTRIBUTE "double quoted" integer
@attribute colour {red, 'dark green', "blue,ish", '?', unused}
@attribute note string
@attribute when date "yyyy-MM-dd"
@attribute cls{a,b}

@data
% comment inside data
1.5, 2, 3, red, hello, 2020-01-01, a
?,-1e3,4,'dark green','it\\'s','2021-02-03',b % trailing comment
2,?,?,"blue,ish",'tab\\there',?,a

-0.25,0,7,'?',"say \\"hi\\"",2020-01-01,b
3,1,1,?,'50\\% off',?,?
"""


def test_arff_features(tmp_path):
    t = read_table(_write(tmp_path / "f.arff", ARFF_FEATURES))
    assert t.relation == "test relation"
    assert list(t.frame.columns) == [
        "plain",
        "quoted name",
        "double quoted",
        "colour",
        "note",
        "when",
        "cls",
    ]
    assert t.types == {
        "plain": NUMERIC,
        "quoted name": NUMERIC,
        "double quoted": NUMERIC,
        "colour": NOMINAL,
        "note": NOMINAL,
        "when": NOMINAL,
        "cls": NOMINAL,
    }
    f = t.frame
    np.testing.assert_array_equal(f["plain"], [1.5, np.nan, 2, -0.25, 3])
    np.testing.assert_array_equal(f["quoted name"], [2, -1000, np.nan, 0, 1])
    # declared order kept, declared-but-absent value kept, quoted '?' is a value
    assert list(f["colour"].cat.categories) == ["red", "dark green", "blue,ish", "?", "unused"]
    assert _values(f["colour"]) == ["red", "dark green", "blue,ish", "?", None]
    assert _values(f["note"]) == ["hello", "it's", "tab\there", 'say "hi"', "50% off"]
    assert _values(f["when"]) == ["2020-01-01", "2021-02-03", None, "2020-01-01", None]
    assert list(f["when"].cat.categories) == ["2020-01-01", "2021-02-03"]
    assert _values(f["cls"]) == ["a", "b", "a", "b", None]


def test_arff_fast_and_slow_paths_agree(tmp_path):
    text = """@relation r
@attribute x numeric
@attribute c {p,q,'r s'}
@attribute y {yes,no}
@data
1,p,yes
2.5,'r s',no
?,?,yes
% comment
-3,q,?
"""
    source = "mem"
    _rel, attrs, off, line = fio._parse_header(text, source)
    fast = fio._arff_fast(text[off:], attrs, None)
    assert fast is not None
    slow = fio._arff_slow(text[off:], line, attrs, None, source)
    for a in attrs:
        if a.kind == "numeric":
            np.testing.assert_array_equal(fast[a.name], slow[a.name])
        else:
            assert _values(fast[a.name]) == _values(slow[a.name])
            assert list(fast[a.name].categories) == list(slow[a.name].categories)


def test_arff_quoted_question_mark_is_a_value(tmp_path):
    text = "@relation r\n@attribute s string\n@attribute c {a}\n@data\n'?',a\n?,a\n'',a\n"
    t = read_table(_write(tmp_path / "q.arff", text))
    assert _values(t.frame["s"]) == ["?", None, ""]


def test_arff_crlf_gz_nrows_columns(tmp_path):
    text = "@relation r\r\n@attribute a numeric\r\n@attribute b {x,y}\r\n@data\r\n"
    text += "".join(f"{i},{'x' if i % 2 else 'y'}\r\n" for i in range(10))
    p = tmp_path / "r.arff.gz"
    with gzip.open(p, "wt", encoding="utf-8", newline="") as fh:
        fh.write(text)
    t = read_table(p)
    assert t.frame.shape == (10, 2)
    assert _values(t.frame["b"])[:3] == ["y", "x", "y"]
    t = read_table(p, nrows=3, columns=["b", "a"])
    assert list(t.frame.columns) == ["b", "a"]
    assert t.frame["a"].tolist() == [0.0, 1.0, 2.0]
    assert list(t.types) == ["b", "a"]
    # same with the slow path (a backslash-free quoted value with trailing blank forces it)
    p2 = _write(tmp_path / "s.arff", text.replace("\r\n0,y", "\r\n0 ,y"))
    t2 = read_table(p2, nrows=3)
    assert t2.frame["a"].tolist() == [0.0, 1.0, 2.0]


def test_arff_sparse(tmp_path):
    text = """@relation sp
@attribute a numeric
@attribute b {x,y,z}
@attribute c numeric
@data
{0 1.5, 2 3}
{1 z}
{}
1,y,2
"""
    t = read_table(_write(tmp_path / "sp.arff", text))
    np.testing.assert_array_equal(t.frame["a"], [1.5, 0, 0, 1])
    assert _values(t.frame["b"]) == ["x", "z", "x", "y"]  # omitted -> first declared value
    np.testing.assert_array_equal(t.frame["c"], [3, 0, 0, 2])


def test_arff_empty_data(tmp_path):
    t = read_table(
        _write(tmp_path / "e.arff", "@relation e\n@attribute a real\n@attribute b {u,v}\n@data\n")
    )
    assert t.frame.shape == (0, 2)
    assert t.types == {"a": NUMERIC, "b": NOMINAL}
    assert list(t.frame["b"].cat.categories) == ["u", "v"]


@pytest.mark.parametrize(
    ("body", "line", "fragment"),
    [
        # the header takes lines 1-3 and @data is line 4
        ("@data\n1,x\n2\n", 6, "expected 2 comma-separated values, found 1"),
        ("@data\n1,x\n2,x,3\n", 6, "expected 2 comma-separated values, found 3"),
        ("@data\n1,x\nabc,y\n", 6, "'abc' is not a number"),
        ("@data\n1,x\n2,w\n", 6, "value 'w' is not among the declared values"),
        ("@data\n% c\n\n1,x\n2 3,y\n", 8, "'2 3' is not a number"),
        ("@data\n1,'x\n", 5, "unterminated quoted string"),
        ("@data\n1,x,{2}\n", 5, "instance weights"),
        ("@data\n{5 1}\n", 5, "attribute index 5"),
        ("@data\n1,x\n{0 1, 1 x\n", 6, "missing closing"),
    ],
)
def test_arff_data_errors(tmp_path, body, line, fragment):
    text = "@relation r\n@attribute a numeric\n@attribute b {x,y}\n" + body
    with pytest.raises(ValueError) as ei:
        read_table(_write(tmp_path / "bad.arff", text))
    msg = str(ei.value)
    assert f"line {line}:" in msg
    assert fragment in msg
    assert "bad.arff" in msg


@pytest.mark.parametrize(
    ("header", "line", "fragment"),
    [
        ("@relation r\n@attribute a numbr\n@data\n", 2, "unknown type"),
        ("@relation r\n@attribute a {x,y\n@data\n", 2, "missing closing"),
        ("@relation r\n@attribute a {x,x}\n@data\n", 2, "declared twice"),
        ("@relation r\n@attribute a relational\n@data\n", 2, "relational"),
        ("@relation r\nhello\n@data\n", 2, "expected @relation"),
        ("@relation r\n@frobnicate\n@data\n", 2, "unknown keyword"),
        ("@relation r\n@data\n", 2, "@data before any @attribute"),
        ("@relation r\n\n@attribute\n@data\n", 3, "without a name"),
    ],
)
def test_arff_header_errors(tmp_path, header, line, fragment):
    with pytest.raises(ValueError) as ei:
        read_table(_write(tmp_path / "h.arff", header))
    assert f"line {line}:" in str(ei.value)
    assert fragment in str(ei.value)


def test_arff_no_data_section_and_duplicates(tmp_path):
    with pytest.raises(ValueError, match="no @data section"):
        read_table(_write(tmp_path / "n.arff", "@relation r\n@attribute a numeric\n"))
    text = "@relation r\n@attribute a numeric\n@attribute 'a' {x}\n@data\n1,x\n"
    with pytest.raises(ValueError, match=r"duplicated attribute names: \['a'\]"):
        read_table(_write(tmp_path / "d.arff", text))


def test_arff_unknown_columns(tmp_path):
    p = _write(tmp_path / "u.arff", "@relation r\n@attribute a numeric\n@data\n1\n")
    with pytest.raises(ValueError, match=r"no column\(s\) \['zz'\]"):
        read_table(p, columns=["zz"])


# ----------------------------------------------------------------------------- write_arff


def test_write_arff_round_trip(tmp_path):
    df = pd.DataFrame(
        {
            "num": [1.0, np.nan, -2.5, 1e300, 3.0],
            "int col": [1, 2, 3, 4, 5],
            "cat": pd.Categorical(["b", None, "a", "b", "a"], categories=["b", "a", "never"]),
            "weird 'name', %": ["it's", "a,b", "?", "", "x\\y"],
            "flag": [True, False, True, True, False],
        }
    )
    p = tmp_path / "rt.arff"
    write_arff(df, p, relation="my rel")
    t = read_table(p)
    assert t.relation == "my rel"
    assert t.types == {
        "num": NUMERIC,
        "int col": NUMERIC,
        "cat": NOMINAL,
        "weird 'name', %": NOMINAL,
        "flag": NOMINAL,
    }
    np.testing.assert_array_equal(t.frame["num"], df["num"])
    np.testing.assert_array_equal(t.frame["int col"], [1.0, 2, 3, 4, 5])
    assert list(t.frame["cat"].cat.categories) == ["b", "a", "never"]
    assert _values(t.frame["cat"]) == ["b", None, "a", "b", "a"]
    assert _values(t.frame["weird 'name', %"]) == ["it's", "a,b", "?", "", "x\\y"]
    assert _values(t.frame["flag"]) == ["True", "False", "True", "True", "False"]
    # gzip
    write_arff(df, tmp_path / "rt.arff.gz")
    t2 = read_table(tmp_path / "rt.arff.gz")
    pd.testing.assert_frame_equal(t.frame, t2.frame)


def test_write_arff_types_override_and_errors(tmp_path):
    df = pd.DataFrame({"a": [1, 2, 1], "b": ["x", "y", "x"]})
    write_arff(df, tmp_path / "o.arff", types={"a": NOMINAL})
    t = read_table(tmp_path / "o.arff")
    assert t.types == {"a": NOMINAL, "b": NOMINAL}
    assert list(t.frame["a"].cat.categories) == ["1", "2"]
    with pytest.raises(ValueError, match="unknown columns"):
        write_arff(df, tmp_path / "x.arff", types={"zz": NOMINAL})
    dup = pd.DataFrame([[1, 2]], columns=["a", "a"])
    with pytest.raises(ValueError, match="duplicated"):
        write_arff(dup, tmp_path / "x.arff")


_text = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc"))
    | st.sampled_from(list("'\",%{}? \\\t")),
    max_size=6,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    nums=st.lists(
        st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False, width=64)),
        min_size=0,
        max_size=12,
    ),
    strs=st.lists(st.one_of(st.none(), _text), min_size=12, max_size=12),
)
def test_write_read_round_trip_property(tmp_path, nums, strs):
    n = len(nums)
    df = pd.DataFrame(
        {
            "x": np.array([np.nan if v is None else v for v in nums], dtype=np.float64),
            "s": pd.Series(strs[:n], dtype=object),
        }
    )
    p = tmp_path / "prop.arff"
    write_arff(df, p)
    t = read_table(p)
    np.testing.assert_array_equal(t.frame["x"].to_numpy(), df["x"].to_numpy())
    assert _values(t.frame["s"]) == list(strs[:n])
    # both parsers give the same answer
    text = p.read_text(encoding="utf-8")
    _rel, attrs, off, line = fio._parse_header(text, "m")
    slow = fio._arff_slow(text[off:], line, attrs, None, "m")
    np.testing.assert_array_equal(slow["x"], df["x"].to_numpy())
    assert _values(slow["s"]) == list(strs[:n])


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    rows=st.lists(
        st.tuples(
            st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False)),
            st.one_of(st.none(), st.text(alphabet="ab1 ,", min_size=1, max_size=4)),
            st.sampled_from(["yes", "no", None]),
        ),
        max_size=15,
    )
)
def test_arff_fast_path_used_and_agrees(tmp_path, rows):
    df = pd.DataFrame(
        {
            "x": np.array([np.nan if r[0] is None else r[0] for r in rows], dtype=np.float64),
            "s": pd.Series([r[1] for r in rows], dtype=object),
            "c": pd.Categorical([r[2] for r in rows], categories=["yes", "no"]),
        }
    )
    p = tmp_path / "fp.arff"
    write_arff(df, p)
    text = p.read_text(encoding="utf-8")
    _rel, attrs, off, line = fio._parse_header(text, "m")
    fast = fio._arff_fast(text[off:], attrs, None)
    slow = fio._arff_slow(text[off:], line, attrs, None, "m")
    # the fast reader declines when a blank precedes a comma (even inside quotes), but must
    # handle everything else in this data
    if rows and not fio._TRAILING_WS.search(text[off:]):
        assert fast is not None
    if fast is not None:
        np.testing.assert_array_equal(fast["x"], slow["x"])
        assert _values(fast["s"]) == _values(slow["s"]) == [r[1] for r in rows]
        assert _values(fast["c"]) == _values(slow["c"]) == [r[2] for r in rows]


def test_arff_50k_rows_loads_fast(tmp_path):
    rng = np.random.default_rng(0)
    n = 50_000
    df = pd.DataFrame({f"x{i}": rng.normal(size=n).round(4) for i in range(6)})
    for i in range(8):
        df[f"c{i}"] = pd.Categorical.from_codes(rng.integers(0, 9, n), [f"v{j}" for j in range(9)])
    df["class"] = pd.Categorical.from_codes(rng.integers(0, 2, n), ["<=50K", ">50K"])
    p = tmp_path / "big.arff"
    write_arff(df, p)
    t0 = time.perf_counter()
    t = read_table(p)
    elapsed = time.perf_counter() - t0
    assert t.frame.shape == (n, 15)
    np.testing.assert_array_equal(t.frame["x3"], df["x3"])
    assert (t.frame["c5"].cat.codes == df["c5"].cat.codes).all()
    assert elapsed < 3.0, f"50k-row ARFF took {elapsed:.2f} s"  # ~0.1 s on a dev machine


# ----------------------------------------------------------------------------- CSV


def test_csv_types_and_strings(tmp_path):
    text = (
        "num,code,flag,tf,mixed,na,empty\n1,01,True,t,01,NA,\n2.5,02,False,f,x,?,\n,3,,t,3,nan,\n"
    )
    t = read_table(_write(tmp_path / "a.csv", text))
    assert t.source_format == "csv"
    assert t.types == {
        "num": NUMERIC,
        "code": NUMERIC,
        "flag": NOMINAL,
        "tf": NOMINAL,
        "mixed": NOMINAL,
        "na": NOMINAL,
        "empty": NUMERIC,
    }
    f = t.frame
    np.testing.assert_array_equal(f["num"], [1.0, 2.5, np.nan])
    np.testing.assert_array_equal(f["code"], [1.0, 2.0, 3.0])  # all-numeric: numeric
    assert _values(f["flag"]) == ["True", "False", None]  # not turned into booleans
    assert _values(f["tf"]) == ["t", "f", "t"]
    assert _values(f["mixed"]) == ["01", "x", "3"]  # strings kept verbatim
    assert _values(f["na"]) == ["NA", "?", "nan"]  # only empty fields are missing
    assert list(f["tf"].cat.categories) == ["f", "t"]
    assert f["empty"].isna().all()
    assert f["num"].dtype == np.float64


def test_csv_gz_tsv_columns_nrows(tmp_path):
    df = pd.DataFrame({"a": [1, 2, 3, 4], "b": ["x", "y", "x", "z"], "class": ["p", "n", "p", "n"]})
    p = tmp_path / "d.csv.gz"
    df.to_csv(p, index=False)
    t = read_table(p, columns=["class", "a"], nrows=2)
    assert list(t.frame.columns) == ["class", "a"]
    assert t.frame["a"].tolist() == [1.0, 2.0]
    assert _values(t.frame["class"]) == ["p", "n"]
    p2 = tmp_path / "d.tsv"
    df.to_csv(p2, index=False, sep="\t")
    t2 = read_table(p2)
    assert t2.types == {"a": NUMERIC, "b": NOMINAL, "class": NOMINAL}
    assert t2.frame.shape == (4, 3)
    with pytest.raises(ValueError, match=r"no column\(s\) \['q'\]"):
        read_table(p, columns=["q"])
    with pytest.raises(ValueError, match="more than once"):
        read_table(p, columns=["a", "a"])


def test_csv_duplicate_header(tmp_path):
    p = _write(tmp_path / "dup.csv", "a,b,a,c,b\n1,2,3,4,5\n")
    with pytest.raises(ValueError, match=r"duplicated column names: \['a', 'b'\]"):
        read_table(p)


def test_csv_index_column_extra_fields_and_latin1(tmp_path):
    df = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})
    p = tmp_path / "idx.csv"
    df.to_csv(p)  # blank first header cell, as pandas writes its index
    t = read_table(p)
    assert list(t.frame.columns) == ["Unnamed: 0", "a", "b"]
    assert t.frame["Unnamed: 0"].tolist() == [0.0, 1.0]
    with pytest.raises(ValueError, match="more fields than the header"):
        read_table(_write(tmp_path / "wide.csv", "a,b\n1,x,3\n"))
    with pytest.raises(ValueError, match="Expected 2 fields"):
        read_table(_write(tmp_path / "wide2.csv", "a,b\n1,x\n1,x,3\n"))
    p3 = tmp_path / "latin.csv"
    p3.write_bytes("name,v\ncaf\xe9,1\n".encode("latin-1"))
    assert _values(read_table(p3).frame["name"]) == ["caf\xe9"]


def test_csv_quoted_fields(tmp_path):
    p = _write(tmp_path / "q.csv", 'name,v\n"a, b",1\n"say ""x""",2\n')
    t = read_table(p)
    assert _values(t.frame["name"]) == ["a, b", 'say "x"']


# ----------------------------------------------------------------------------- Parquet


def test_parquet(tmp_path):
    df = pd.DataFrame(
        {
            "i": pd.array([1, None, 3], dtype="Int64"),
            "f": [0.5, 1.5, np.nan],
            "s": ["u", None, "v"],
            "b": [True, False, True],
            "c": pd.Categorical(["z", "y", "z"], categories=["z", "y", "w"]),
        }
    )
    p = tmp_path / "d.parquet"
    df.to_parquet(p)
    t = read_table(p)
    assert t.source_format == "parquet"
    assert t.types == {"i": NUMERIC, "f": NUMERIC, "s": NOMINAL, "b": NOMINAL, "c": NOMINAL}
    np.testing.assert_array_equal(t.frame["i"], [1.0, np.nan, 3.0])
    assert t.frame["i"].dtype == np.float64
    assert _values(t.frame["s"]) == ["u", None, "v"]
    assert _values(t.frame["b"]) == ["True", "False", "True"]
    assert list(t.frame["c"].cat.categories) == ["z", "y", "w"]
    t2 = read_table(p, columns=["c", "f"], nrows=2)
    assert list(t2.frame.columns) == ["c", "f"]
    assert t2.frame.shape == (2, 2)
    t0 = read_table(p, nrows=0)
    assert t0.frame.shape == (0, 5)


def test_parquet_duplicate_columns(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_arrays([pa.array([1]), pa.array([2])], names=["a", "a"])
    p = tmp_path / "dup.parquet"
    pq.write_table(table, p)
    with pytest.raises(ValueError, match=r"duplicated column names: \['a'\]"):
        read_table(p)


# ----------------------------------------------------------------------------- dispatch errors


def test_missing_file_and_bad_extension(tmp_path):
    missing = tmp_path / "nope.csv"
    with pytest.raises(FileNotFoundError, match=r"nope\.csv"):
        read_table(missing)
    p = _write(tmp_path / "data.xlsx", "whatever")
    with pytest.raises(ValueError) as ei:
        read_table(p)
    msg = str(ei.value)
    assert "data.xlsx" in msg
    for fmt in (".csv", ".parquet", ".arff"):
        assert fmt in msg
    # format= overrides the extension
    p2 = _write(tmp_path / "iris.txt", (DATA / "io_iris.arff").read_text())
    assert read_table(p2, format="arff").frame.shape == (150, 5)
    with pytest.raises(ValueError, match="format must be one of"):
        read_table(p2, format="xml")


def test_nan_strings_and_math_helpers():
    # sanity of the number formatter used by write_arff
    assert fio._format_number(3.0) == "3"
    assert fio._format_number(0.1) == "0.1"
    assert fio._format_number(math.inf) == "Infinity"
    assert fio._format_number(math.nan) == "?"
    assert fio._arff_quote("a b") == "'a b'"
    assert fio._arff_quote("plain") == "plain"
    assert fio._arff_quote("?") == "'?'"
    assert fio._arff_quote("") == "''"


_COMPRESSORS = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress}


@pytest.mark.parametrize("fmt", ["csv", "tsv", "arff"])
@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz", ".zip"])
@pytest.mark.parametrize("damage", ["not-compressed", "truncated", "corrupt"])
def test_unreadable_compressed_file_is_a_value_error_naming_it(tmp_path, fmt, suffix, damage):
    sep = "\t" if fmt == "tsv" else ","
    rows = "".join(f"{i % 7}{sep}v{i % 3}\n" for i in range(3000))
    text = ("@relation r\n@attribute a numeric\n@attribute b string\n@data\n"
            + rows.replace("\t", ",")) if fmt == "arff" else f"a{sep}b\n{rows}"
    path = tmp_path / f"t.{fmt}{suffix}"
    raw = text.encode()
    if suffix == ".zip":
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr(f"t.{fmt}", raw)
        packed = buf.getvalue()
    else:
        packed = _COMPRESSORS[suffix](raw)
    if damage == "not-compressed":
        packed = raw
    elif damage == "truncated":
        packed = packed[: len(packed) // 2]
    else:
        damaged = bytearray(packed)
        for i in range(len(packed) // 3, len(packed) // 3 + 64):
            damaged[i] ^= 0xFF
        packed = bytes(damaged)
    path.write_bytes(packed)
    with pytest.raises(ValueError) as exc:
        read_table(path)
    assert str(path) in str(exc.value)


# ----------------------------------------------------------------------------- stray tokens


def _radius_csv(tmp_path: Path, n_stray: int, n: int = 40) -> Path:
    rows = ["radius,cls"] + [f"{10 + i / 7:.3f},{'ab'[i % 2]}" for i in range(n - n_stray)]
    rows += [f"?,{'ab'[i % 2]}" for i in range(n_stray)]
    return _write(tmp_path / "radius.csv", "\n".join(rows) + "\n")


def test_csv_column_with_a_stray_token_is_numeric_with_a_warning(tmp_path):
    path = _radius_csv(tmp_path, n_stray=2)  # 95 % numbers
    with pytest.warns(UserWarning, match=r"column 'radius' is read as numbers: 2 of its 40 .*"
                                         r"'\?' \(2x\).*na_values=\['\?'\]"):
        t = read_table(path)
    assert t.types == {"radius": NUMERIC, "cls": NOMINAL}
    assert t.frame["radius"].dtype == np.float64
    assert t.frame["radius"].isna().sum() == 2
    np.testing.assert_allclose(t.frame["radius"][:3], [10.0, 10.143, 10.286])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        declared = read_table(path, na_values=["?"])
    pd.testing.assert_frame_equal(declared.frame, t.frame)


def test_csv_column_under_95_percent_numbers_stays_nominal(tmp_path):
    path = _radius_csv(tmp_path, n_stray=3)  # 92.5 %
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t = read_table(path)
    assert t.types["radius"] == NOMINAL
    assert "?" in list(t.frame["radius"].cat.categories)


def _class_u_csv(tmp_path: Path) -> Path:
    # anneal's class column: classes 1, 2, 3, 5 and U, U under 5 % of the rows
    rows = ["x,class"] + [f"{i % 3},{'1235'[i % 4]}" for i in range(60)] + ["0,U", "1,U"]
    return _write(tmp_path / "anneal_like.csv", "\n".join(rows) + "\n")


@pytest.mark.parametrize("label", [-1, "class"])
def test_nominal_columns_are_labels_never_read_by_the_95_percent_rule(tmp_path, label):
    path = _class_u_csv(tmp_path)
    with pytest.warns(UserWarning, match="column 'class' is read as numbers"):
        assert read_table(path).frame["class"].isna().sum() == 2  # what the rule alone does
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t = read_table(path, nominal_columns=[label])
    assert t.types["class"] == NOMINAL
    assert list(t.frame["class"].cat.categories) == ["1", "2", "3", "5", "U"]
    assert t.types["x"] == NUMERIC
    with pytest.raises(ValueError, match=r"nominal_columns: .* has no column 'klass'"):
        read_table(path, nominal_columns=["klass"])
    with pytest.raises(ValueError, match="position 5 is out of range"):
        read_table(path, nominal_columns=[5])


def test_na_values_is_for_csv_only(tmp_path):
    path = _write(tmp_path / "a.arff", "@relation r\n@attribute x numeric\n@data\n1\n")
    with pytest.raises(ValueError, match="na_values applies to CSV/TSV files only"):
        read_table(path, na_values=["?"])
    with pytest.raises(ValueError, match="na_values must be a sequence of strings"):
        read_table(path, na_values=[0])


@pytest.mark.parametrize("writer, what", [
    (lambda frame, path: frame.to_parquet(path), "a Parquet file"),
    (lambda frame, path: path.write_bytes(gzip.compress(frame.to_csv(index=False).encode())),
     "a gzip-compressed file"),
])
def test_a_binary_file_named_as_csv_is_refused_naming_it(tmp_path, writer, what):
    from fastpath import BayesNetClassifier

    frame = pd.DataFrame({"a": ["x", "y"] * 10, "class": ["p", "q"] * 10})
    path = tmp_path / "named.csv"
    writer(frame, path)
    with pytest.raises(ValueError, match=rf"named\.csv.*{what}"):
        read_table(path)
    with pytest.raises(ValueError, match=rf"named\.csv.*{what}"):
        BayesNetClassifier().fit(str(path), chunksize=5)  # the streamed reader too


def test_a_semicolon_separated_csv_read_as_one_column_warns(tmp_path):
    path = tmp_path / "semi.csv"
    path.write_text("a;b;class\n1;2;x\n3;4;y\n")
    with pytest.warns(UserWarning, match=r"one column named 'a;b;class'.*';'-separated"):
        table = read_table(path)
    assert table.frame.shape[1] == 1
    ok = tmp_path / "one.csv"
    ok.write_text("only\n1\n2\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a genuine one-column file: no warning
        read_table(ok)


def test_keep_stray_tokens_leaves_the_files_strings_for_the_classifier(tmp_path):
    path = tmp_path / "t.csv"
    values = [str(v) for v in range(40)] + ["n/a"]
    pd.DataFrame({"x": values, "c": ["a", "b"] * 20 + ["a"]}).to_csv(path, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kept = read_table(path, keep_stray_tokens=True)
    assert kept.types["x"] == "numeric"
    assert list(kept.frame["x"]) == values  # as the file writes them, no warning
    with pytest.warns(UserWarning, match="n/a"):
        coerced = read_table(path)
    assert coerced.frame["x"].dtype == np.float64 and np.isnan(coerced.frame["x"].iloc[-1])
