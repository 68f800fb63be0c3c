"""fastpath.estimate._table_io: the child-first table of ``hdpbn estimate`` and its node output.

``tree_from_frame`` codes every column as nominal (sorted values, missing last) and counts a
context tree: the counts of every node equal ``pandas`` groupby counts of the rows with that
path prefix, and there is one node per observed prefix. A table written as CSV, TSV
(optionally compressed) or Parquet and read back with ``read_estimate_table`` gives the same
tree, and so does ``count_estimate_table``, which reads the file in chunks (same codes, labels
and label types, whatever the chunks see). ``node_frame`` lays out one row per node (depth, path
labels, n, p_<value>, mcse_<value>) and survives a Parquet/CSV round trip.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastpath.estimate import m_estimate_table, node_frame, read_estimate_table, tree_from_frame
from fastpath.estimate._table_io import count_estimate_table

COLUMN_KINDS = {
    "str": st.sampled_from(["x", "y", "zz", None]),
    "int": st.sampled_from([3, -1, 10]),
    "float": st.sampled_from([0.5, 2.0, np.nan]),
}


@st.composite
def child_first_frames(draw, max_cond=3):
    n_cols = draw(st.integers(1, max_cond + 1))
    n_rows = draw(st.integers(1, 40))
    cols = {}
    for j in range(n_cols):
        kind = draw(st.sampled_from(sorted(COLUMN_KINDS)))
        values = draw(st.lists(COLUMN_KINDS[kind], min_size=n_rows, max_size=n_rows))
        dtype = {"str": object, "int": np.int64, "float": np.float64}[kind]
        cols["child" if j == 0 else f"v{j}"] = pd.Series(values, dtype=dtype)
    return pd.DataFrame(cols)


def _label(v):
    return None if pd.isna(v) else v


def _groupby_counts(frame, d):
    """{(prefix labels..., child label): rows} over the first d conditioning columns."""
    cols = [*frame.columns[1 : d + 1], frame.columns[0]]
    sizes = frame.groupby(list(cols), dropna=False).size()
    out = {}
    for key, n in sizes.items():
        key = key if isinstance(key, tuple) else (key,)
        out[tuple(_label(v) for v in key)] = int(n)
    return out


def _tree_counts(coded, d):
    tree = coded.tree
    paths = tree.paths()
    out = {}
    lo, hi = tree.level_offsets[d], tree.level_offsets[d + 1]
    for i in range(lo, hi):
        prefix = tuple(coded.conditioning_labels[e][paths[i, e]] for e in range(d))
        for k, n in enumerate(tree.counts[i]):
            if n:
                out[(*prefix, coded.child_labels[k])] = int(n)
    return out


def _sorted_labels(series):
    present = list(pd.unique(series.dropna()))
    labels = sorted(present)
    return (*labels, None) if series.isna().any() else tuple(labels)


# ====================================================================== counting
@settings(max_examples=120, deadline=None)
@given(child_first_frames())
def test_tree_counts_equal_pandas_groupby_counts(frame):
    coded = tree_from_frame(frame)
    n_cond = frame.shape[1] - 1
    assert coded.tree.depth == n_cond
    assert coded.child_name == "child"
    assert coded.conditioning_names == tuple(frame.columns[1:])
    assert coded.child_labels == _sorted_labels(frame["child"])
    for j, labels in enumerate(coded.conditioning_labels):
        assert labels == _sorted_labels(frame.iloc[:, j + 1])
    for d in range(n_cond + 1):
        assert _tree_counts(coded, d) == _groupby_counts(frame, d)
        # one node per observed prefix
        n_prefixes = (frame.iloc[:, 1 : d + 1].drop_duplicates().shape[0]) if d else 1
        assert coded.tree.nodes_per_level[d] == n_prefixes
    assert coded.tree.n_rows == len(frame)


def test_mixed_types_are_sorted_by_their_text():
    frame = pd.DataFrame({"child": np.array([10, "b", 2, "a"], dtype=object)})
    coded = tree_from_frame(frame)
    assert coded.child_labels == (10, 2, "a", "b")
    np.testing.assert_array_equal(coded.tree.counts[0], [1, 1, 1, 1])


def test_bad_tables_are_refused():
    with pytest.raises(ValueError, match="at least one column"):
        tree_from_frame(pd.DataFrame({"a": []}))
    with pytest.raises(ValueError, match=r"duplicated column names: \['a'\]"):
        tree_from_frame(pd.DataFrame([[1, 2, 3]], columns=["a", "a", "b"]))


# ====================================================================== files
def _write(frame, path):
    if path.suffix in (".parquet", ".pq"):
        frame.to_parquet(path)
    else:
        frame.to_csv(path, sep="\t" if ".tsv" in path.suffixes else ",", index=False)


@pytest.mark.parametrize("name", ["t.csv", "t.tsv", "t.csv.gz", "t.tsv.gz", "t.parquet",
                                  "t.pq"])
@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(frame=child_first_frames())
def test_file_round_trip_gives_the_same_tree(tmp_path, name, frame):
    path = tmp_path / name
    _write(frame, path)
    back = read_estimate_table(str(path))
    assert list(back.columns) == list(frame.columns)
    a, b = tree_from_frame(frame), tree_from_frame(back)
    for name_ in ("level_offsets", "parent", "branch_value", "counts"):
        np.testing.assert_array_equal(getattr(a.tree, name_), getattr(b.tree, name_))
    assert a.child_labels == b.child_labels
    assert a.conditioning_labels == b.conditioning_labels


def _assert_same_coded_tree(a, b):
    for name_ in ("level_offsets", "parent", "branch_value", "counts"):
        np.testing.assert_array_equal(getattr(a.tree, name_), getattr(b.tree, name_))
    assert a.tree.n_rows == b.tree.n_rows
    assert (a.child_name, a.conditioning_names) == (b.child_name, b.conditioning_names)
    assert a.child_labels == b.child_labels
    assert a.conditioning_labels == b.conditioning_labels
    # the labels have the same types (1 and 1.0 would print differently in the node table)
    assert [type(v) for v in a.child_labels] == [type(v) for v in b.child_labels]
    for la, lb in zip(a.conditioning_labels, b.conditioning_labels, strict=True):
        assert [type(v) for v in la] == [type(v) for v in lb]


@pytest.mark.parametrize("name", ["t.csv", "t.tsv", "t.csv.gz", "t.parquet"])
@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(frame=child_first_frames(), chunksize=st.integers(1, 7))
def test_chunked_count_equals_the_whole_table(tmp_path, name, frame, chunksize):
    path = tmp_path / name
    _write(frame, path)
    whole = tree_from_frame(read_estimate_table(str(path)))
    _assert_same_coded_tree(count_estimate_table(str(path), chunksize=chunksize), whole)


def test_chunked_count_fixes_codes_across_chunks(tmp_path):
    # the chunks disagree on what they see: whole numbers in one, a missing value or a decimal
    # in another, text only later; the codes are those of the whole column in every chunk
    rng = np.random.default_rng(1)
    n = 1000
    frame = pd.DataFrame({
        "child": rng.choice(["b", "a", "c"], n),
        "ints": rng.integers(-3, 20, n).astype(float),
        "text": rng.choice(["x", "10", "2"], n).astype(object),
        "later_nan": np.r_[rng.integers(0, 3, n - 1), np.nan],
    })
    frame.loc[:499, "text"] = "2"  # the first chunks see only a number-like text
    frame.loc[n - 1, "ints"] = 2.5
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    whole = tree_from_frame(read_estimate_table(str(path)))
    assert whole.conditioning_labels[1] == ("10", "2", "x")
    for chunksize in (1, 97, 250, n, 10 * n):
        _assert_same_coded_tree(count_estimate_table(str(path), chunksize=chunksize), whole)
    parquet = tmp_path / "t.parquet"
    frame.assign(i=pd.array(np.r_[np.arange(n - 1), -1], dtype="Int64").astype("Int64")).to_parquet(
        parquet)
    whole = tree_from_frame(read_estimate_table(str(parquet)))
    for chunksize in (1, 97, 10 * n):
        _assert_same_coded_tree(count_estimate_table(str(parquet), chunksize=chunksize), whole)


def test_chunked_count_refuses_what_the_whole_table_refuses(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("a,b\n")
    with pytest.raises(ValueError, match="at least one column"):
        count_estimate_table(str(empty))
    with pytest.raises(ValueError, match="chunksize"):
        count_estimate_table(str(empty), chunksize=0)
    with pytest.raises(FileNotFoundError, match="nope"):
        count_estimate_table(str(tmp_path / "nope.csv"))


def test_tsv_is_read_with_tabs(tmp_path):
    path = tmp_path / "t.tsv"
    path.write_text("y\tx\na,b\tc\n")
    back = read_estimate_table(str(path))
    assert list(back.columns) == ["y", "x"] and back.iloc[0, 0] == "a,b"


def test_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope"):
        read_estimate_table(str(tmp_path / "nope.csv"))


# ====================================================================== node frames
@settings(max_examples=60, deadline=None)
@given(child_first_frames(), st.booleans())
def test_node_frame_has_one_row_per_node_with_its_path_and_total(frame, with_mcse):
    coded = tree_from_frame(frame)
    tree = coded.tree
    probs = m_estimate_table(tree, 1.0)
    mcse = np.full_like(probs, 0.01) if with_mcse else None
    out = node_frame(coded, probs, mcse)
    value_names = ["NA" if v is None else str(v) for v in coded.child_labels]
    expected_cols = ["depth", *coded.conditioning_names, "n", *(f"p_{v}" for v in value_names)]
    if with_mcse:
        expected_cols += [f"mcse_{v}" for v in value_names]
    assert list(out.columns) == expected_cols
    assert len(out) == tree.n_nodes
    np.testing.assert_array_equal(out["depth"], tree.node_depth)
    np.testing.assert_array_equal(out[[f"p_{v}" for v in value_names]].to_numpy(), probs)
    # n of a node = rows whose conditioning values start with the node's path
    for _, row in out.iterrows():
        d = int(row["depth"])
        prefix = [_label(row[c]) for c in coded.conditioning_names[:d]]
        assert all(pd.isna(row[c]) for c in coded.conditioning_names[d:])
        mask = np.ones(len(frame), dtype=bool)
        for c, v in zip(coded.conditioning_names[:d], prefix, strict=True):
            col = frame[c]
            mask &= col.isna().to_numpy() if v is None else (col == v).to_numpy()
        assert row["n"] == mask.sum()


def test_node_frame_survives_parquet_and_csv(tmp_path):
    frame = pd.DataFrame({"child": ["a", "b", "a", None], "p": [1, 1, 2, 2],
                          "q": ["u", "v", "u", "u"]})
    coded = tree_from_frame(frame)
    probs = m_estimate_table(coded.tree, 0.5)
    out = node_frame(coded, probs, mcse=probs / 10)
    numeric = ["depth", "n", "p_a", "p_b", "p_NA", "mcse_a", "mcse_b", "mcse_NA"]
    out.to_parquet(tmp_path / "nodes.parquet")
    out.to_csv(tmp_path / "nodes.csv", index=False)
    for back in (pd.read_parquet(tmp_path / "nodes.parquet"), pd.read_csv(tmp_path / "nodes.csv")):
        assert list(back.columns) == list(out.columns)
        pd.testing.assert_frame_equal(back[numeric], out[numeric], check_exact=True)
        for c in ("p", "q"):  # path labels; a missing one (below the node's depth) as missing
            assert [_label(v) for v in back[c]] == [_label(v) for v in out[c]]


def test_node_frame_refuses_mismatched_shapes():
    coded = tree_from_frame(pd.DataFrame({"c": ["a", "b"], "p": [0, 1]}))
    good = m_estimate_table(coded.tree, 1.0)
    with pytest.raises(ValueError, match="probabilities must have shape"):
        node_frame(coded, good[:, :1])
    with pytest.raises(ValueError, match="mcse must have the same shape"):
        node_frame(coded, good, mcse=good[:1])
