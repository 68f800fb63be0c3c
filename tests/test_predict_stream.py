"""Streamed prediction (issue 29, point 5): ``predict_proba`` of a path, a CSV stream or an
iterator of chunks, ``iter_predict_proba``, and ``hdpbn predict`` reading and writing a chunk
at a time (standard input, bundled names, ``--keep``, ``--chunksize``)."""

from __future__ import annotations

import gzip
import io
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fastpath import BayesNetClassifier, ESKDBClassifier, read_table
from fastpath.cli import main
from fastpath.io import dataset_path, load_dataset, write_arff
from fastpath.scale import DEFAULT_CHUNKSIZE, StreamError

CREDIT = str(dataset_path("credit-a"))  # 690 rows, nominal and numeric columns, missing values


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool((a.view(np.uint64) == b.view(np.uint64)).all())


def _whole_table(clf, path) -> np.ndarray:
    """What prediction of a file was before streaming: the whole table, read by read_table."""
    frame = read_table(path).frame
    return clf.predict_proba(frame[list(clf.feature_names_in_)])


@pytest.fixture(scope="module")
def clf():
    X, y = load_dataset("credit-a")
    return BayesNetClassifier("kdb", k=1, estimation="m", random_state=0).fit(X, y)


@pytest.fixture(scope="module")
def saved(clf, tmp_path_factory):
    path = tmp_path_factory.mktemp("model") / "credit.npz"
    clf.save(path)
    return path


# ---------------------------------------------------------------------- Python
def test_a_streamed_file_predicts_bit_for_bit_as_the_whole_table(clf, tmp_path):
    whole = _whole_table(clf, CREDIT)
    # chunks of 7 rows, a chunk larger than the file; rows one at a time on the first 40
    assert _same_bits(clf.predict_proba(CREDIT, chunksize=7), whole)
    parts = list(clf.iter_predict_proba(CREDIT, chunksize=100))
    assert [len(p) for p in parts] == [100] * 6 + [90]
    assert _same_bits(np.concatenate(parts), whole)
    assert _same_bits(clf.predict_proba(CREDIT, chunksize=10**6), whole)
    np.testing.assert_array_equal(clf.predict(CREDIT), clf.classes_[np.argmax(whole, axis=1)])
    head = tmp_path / "head.csv"
    pd.read_csv(CREDIT, dtype=str, keep_default_na=False).head(40).to_csv(head, index=False)
    assert _same_bits(clf.predict_proba(head, chunksize=1), _whole_table(clf, head))


def test_every_source_predicts_as_the_whole_table(clf, tmp_path):
    frame = read_table(CREDIT).frame
    whole = _whole_table(clf, CREDIT)
    parquet = tmp_path / "credit.parquet"
    frame.to_parquet(parquet)
    arff = tmp_path / "credit.arff"
    write_arff(frame, arff)
    for source in (parquet, arff):
        assert _same_bits(clf.predict_proba(source, chunksize=100), _whole_table(clf, source))
    with open(CREDIT, "rb") as fh:  # a binary stream of CSV (standard input)
        assert _same_bits(clf.predict_proba(gzip.GzipFile(fileobj=fh), chunksize=50), whole)
    X = frame[list(clf.feature_names_in_)]
    chunks = (X.iloc[i:i + 100] for i in range(0, len(X), 100))
    assert _same_bits(clf.predict_proba(chunks), whole)
    assert _same_bits(np.concatenate(list(clf.iter_predict_proba(X, chunksize=64))), whole)
    assert _same_bits(clf.predict_log_proba(CREDIT, chunksize=99), clf.predict_log_proba(X))
    with pytest.raises(ValueError, match="chunksize applies to streamed X"):
        clf.predict_proba(X, chunksize=10)


def test_an_ensemble_streams_too(tmp_path):
    X, y = load_dataset("credit-a")
    eskdb = ESKDBClassifier(n_estimators=2, k=1, estimation="m", m=1.0, random_state=0)
    eskdb.fit(X.iloc[::3], y.iloc[::3])  # a third of the rows: a quick fit
    assert _same_bits(eskdb.predict_proba(CREDIT, chunksize=200), _whole_table(eskdb, CREDIT))


def _with_value(tmp_path: Path, row: int, column: str, value: str, name="bad.csv") -> Path:
    frame = pd.read_csv(CREDIT, dtype=str, keep_default_na=False)
    frame.loc[row, column] = value
    path = tmp_path / name
    frame.to_csv(path, index=False)
    return path


def test_a_bad_value_in_a_later_chunk_names_its_row_in_the_file(clf, tmp_path):
    bad = _with_value(tmp_path, 523, "A2", "inf")
    with pytest.raises(StreamError, match=r"chunk 5 \(rows 500-599\): column 'A2' contains "
                       r"inf \(row 523\)"):
        clf.predict_proba(bad, chunksize=100)
    malformed = tmp_path / "malformed.csv"
    lines = Path(_with_value(tmp_path, 0, "A1", "b")).read_text().splitlines()
    lines[402] += ",extra"  # data row 401
    malformed.write_text("\n".join(lines) + "\n")
    with pytest.raises(StreamError, match=r"row 401 \(line 403\).*malformed CSV row"):
        clf.predict_proba(malformed, chunksize=100)
    # an iterator's chunk: the encoder's row, counted in the whole stream
    X = read_table(CREDIT).frame[list(clf.feature_names_in_)]
    chunks = [X.iloc[i:i + 100].copy() for i in range(0, len(X), 100)]
    chunks[3].iloc[7, 1] = np.inf
    with pytest.raises(StreamError, match=r"chunk 3 \(rows 300-399\).*row 307"):
        clf.predict_proba(iter(chunks))


def test_non_numbers_follow_the_models_policy_as_in_the_whole_table(clf, tmp_path):
    # one "?" in a numeric column: missing, with one warning naming its chunk
    one = _with_value(tmp_path, 650, "A14", "?", "one.csv")
    with pytest.warns(UserWarning, match=r"chunk 6 \(rows 600-689\): column 'A14' was fitted "
                      r"as numeric, but 1 of these 90 values is not a number"):
        streamed = clf.predict_proba(one, chunksize=100)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert _same_bits(streamed, _whole_table(clf, one))
    # more than 5 % of the column not numbers, over three chunks: missing too, one warning
    frame = pd.read_csv(CREDIT, dtype=str, keep_default_na=False)
    frame.loc[200:460, "A14"] = "none"
    many = tmp_path / "many.csv"
    frame.to_csv(many, index=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        streamed = clf.predict_proba(many, chunksize=100)
    assert len([w for w in caught if "'A14' was fitted as numeric" in str(w.message)]) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert _same_bits(streamed, _whole_table(clf, many))
    # a model that refuses them: an error naming the first one's row in the file
    X, y = load_dataset("credit-a")
    strict = BayesNetClassifier("nb", estimation="m", numeric_errors="raise").fit(X, y)
    with pytest.raises(StreamError, match=r"chunk 2 \(rows 200-299\): column 'A14' was "
                       r"fitted as numeric but holds 'none' \(row 200\)"):
        strict.predict_proba(many, chunksize=100)


def test_a_latin1_file_is_read_again_from_the_start(clf, tmp_path):
    frame = pd.read_csv(CREDIT, dtype=str, keep_default_na=False)
    frame.loc[600, "A1"] = "é"  # an unseen category, past the first chunks
    path = tmp_path / "latin1.csv"
    frame.to_csv(path, index=False, encoding="latin-1")
    assert _same_bits(clf.predict_proba(path, chunksize=100), _whole_table(clf, path))
    with pytest.raises(ValueError, match="is not UTF-8"):
        list(clf.iter_predict_proba(path, chunksize=100))


# ---------------------------------------------------------------------- hdpbn predict
def _old_output(clf, path) -> str:
    """hdpbn predict's output before it streamed: the whole table, then one to_csv."""
    proba = _whole_table(clf, path)
    out = pd.DataFrame({"prediction": clf.classes_[np.argmax(proba, axis=1)]})
    for j, c in enumerate(clf.classes_):
        out[f"p_{c}"] = proba[:, j]
    return out.to_csv(index=False)


def test_cli_output_is_byte_for_byte_the_whole_table_output(clf, saved, tmp_path, capsys):
    expected = _old_output(clf, CREDIT)
    for extra in ([], ["--chunksize", "7"], ["--chunksize", "1000000"]):
        out = tmp_path / "p.csv"
        assert main(["predict", "credit-a", "--model", str(saved), "--out", str(out),
                     *extra]) == 0  # a bundled dataset's name
        assert out.read_text() == expected, extra
    assert main(["predict", CREDIT, "--model", str(saved), "--chunksize", "100"]) == 0
    assert capsys.readouterr().out == expected
    gz = tmp_path / "p.csv.gz"
    assert main(["predict", CREDIT, "--model", str(saved), "--out", str(gz)]) == 0
    assert gzip.decompress(gz.read_bytes()).decode() == expected


def test_cli_reads_standard_input(clf, saved, monkeypatch, capsys):
    with open(CREDIT, "rb") as fh:
        data = gzip.decompress(fh.read())
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))
    assert main(["predict", "-", "--model", str(saved), "--chunksize", "64"]) == 0
    assert capsys.readouterr().out == _old_output(clf, CREDIT)


def test_cli_keeps_the_columns_asked_for(clf, saved, tmp_path, capsys):
    frame = pd.read_csv(CREDIT, dtype=str, keep_default_na=False)
    frame.insert(0, "id", [f"{i:05d}" for i in range(len(frame))])  # leading zeros stay
    path = tmp_path / "with_id.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "p.csv"
    assert main(["predict", str(path), "--model", str(saved), "--out", str(out),
                 "--keep", "id,class", "--chunksize", "100"]) == 0
    got = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert list(got.columns) == ["id", "class", "prediction", "p_+", "p_-"]
    assert got["id"].tolist() == frame["id"].tolist()
    assert got["class"].tolist() == frame["class"].tolist()
    expected = pd.read_csv(io.StringIO(_old_output(clf, CREDIT)), dtype=str)
    pd.testing.assert_frame_equal(got.drop(columns=["id", "class"]), expected)
    capsys.readouterr()
    assert main(["predict", str(path), "--model", str(saved), "--keep", "nope"]) == 2
    assert "no column(s) ['nope'] to keep" in capsys.readouterr().err
    assert main(["predict", str(path), "--model", str(saved), "--keep", "p_+"]) == 2
    assert "--keep 'p_+' is also the name of an output column" in capsys.readouterr().err


def test_cli_failure_leaves_no_half_written_output(saved, tmp_path, capsys):
    bad = _with_value(tmp_path, 655, "A2", "inf")
    out = tmp_path / "p.csv"
    out.write_text("previous\n")
    assert main(["predict", str(bad), "--model", str(saved), "--out", str(out),
                 "--chunksize", "100"]) == 2
    err = capsys.readouterr().err
    assert "chunk 6 (rows 600-689): column 'A2' contains inf (row 655)" in err
    assert out.read_text() == "previous\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.csv", "p.csv"]  # no temp file
    assert main(["predict", CREDIT, "--model", str(saved), "--chunksize", "0"]) == 2
    assert "--chunksize must be a positive number" in capsys.readouterr().err


def test_cli_rewrites_a_latin1_file_from_the_start(clf, saved, tmp_path, capsys):
    frame = pd.read_csv(CREDIT, dtype=str, keep_default_na=False)
    frame.loc[600, "A1"] = "é"
    path = tmp_path / "latin1.csv"
    frame.to_csv(path, index=False, encoding="latin-1")
    out = tmp_path / "p.csv"
    assert main(["predict", str(path), "--model", str(saved), "--out", str(out),
                 "--chunksize", "100"]) == 0
    assert out.read_text() == _old_output(clf, path)


def test_the_cli_chunksize_is_the_librarys():
    from fastpath.cli._main import PREDICT_CHUNKSIZE

    assert PREDICT_CHUNKSIZE == DEFAULT_CHUNKSIZE
