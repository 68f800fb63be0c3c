"""A user's own table (issue 29): stray tokens, identifiers, dates and evaluation.

The table is the one of the issue: 600 rows of numbers, strings, missing values, a date, a
customer id, a constant, and a numeric column with a few "?", "n/a" and "-"; six rows of the
rare class "fraud" are labelled at random. Each test names the numbered problem it checks.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.model_selection import cross_val_score

from fastpath import BayesNetClassifier, ESKDBClassifier, HDPOptions
from fastpath.cli import main
from fastpath.evaluation import cross_validate
from fastpath.io import read_table

N = 600
#: rows of the numeric column "score" that hold a token, and the token
TOKENS = {5: "?", 17: "n/a", 350: "-", 420: "?"}


def mixed_table() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    score = rng.normal(50, 10, N).round(1).astype(object)
    for row, token in TOKENS.items():
        score[row] = token
    frame = pd.DataFrame({
        "customer_id": [f"C{100000 + i}" for i in range(N)],
        "signup": pd.date_range("2024-01-01", periods=N, freq="D").strftime("%Y-%m-%d"),
        "score": score,
        "age": rng.integers(18, 80, N).astype(float),
        "region": rng.choice(["north", "south", "east", "west"], N),
        "constant": "x",
        "plan": rng.choice(["a", "b", "c", None], N),
    })
    label = np.where(frame["age"] > 50, "yes", "no").astype(object)
    label[rng.choice(N, 6, replace=False)] = "fraud"
    return frame.assign(label=label)


@pytest.fixture(scope="module")
def mixed_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("mixed") / "mixed.csv"
    mixed_table().to_csv(path, index=False)
    return path


def _quiet(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return function(*args, **kwargs)


def _read(path, **kwargs):
    """The file as ``hdpbn`` reads it (class column as labels)."""
    return _quiet(read_table, path, nominal_columns=["label"], **kwargs).frame


def _model(**kwargs):
    return BayesNetClassifier(estimation="m", m=1.0, random_state=0, **kwargs)


# ====================================================================== point 1: stray tokens
@pytest.mark.parametrize("n_rows", [20, 40, 100, 599])
def test_predictions_of_any_batch_read_from_the_file_agree(mixed_csv, tmp_path, n_rows):
    """Point 1: the first 20 or 40 rows of the training file (where "score" is read as text,
    below the 95 % rule) predicted alone give the rows of the whole file's prediction; the
    tokens the fit never met become missing with one warning naming the column, the tokens
    and their counts (it was an error)."""
    table = _read(mixed_csv)
    model = _quiet(_model().fit, table.drop(columns="label"), table["label"])
    whole = model.predict_proba(table.drop(columns="label"))
    head = tmp_path / "head.csv"
    mixed_table().iloc[:n_rows].to_csv(head, index=False)
    batch = _read(head).drop(columns="label")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        proba = model.predict_proba(batch)
    np.testing.assert_array_equal(proba, whole[:n_rows])
    messages = [str(w.message) for w in caught]
    assert len(messages) == len(set(messages))


def test_a_token_the_fit_never_met_is_missing_with_one_warning_or_an_error():
    """Point 1: at predict time a new token in a numeric column is a missing value, said once
    per column and call with its count; numeric_errors="raise" refuses it."""
    table = mixed_table()
    X, y = table.drop(columns="label"), table["label"]
    model = _quiet(_model().fit, X.iloc[:300], y.iloc[:300])  # "-" is in row 350 only
    assert model.encoder_.codings_[0].name == "score"
    assert model.encoder_.codings_[0].missing_tokens == ("?", "n/a")
    late = X.iloc[300:].copy()
    late.iloc[[10, 60, 80], late.columns.get_loc("score")] = ["-", "-", "unknown"]
    with pytest.warns(UserWarning, match=r"column 'score' was fitted as numeric, but 4 of these "
                                         r"300 values are not numbers \('-' \(3x\), 'unknown' "
                                         r"\(1x\)\)") as caught:
        proba = model.predict_proba(late)
    assert sum("'score'" in str(w.message) for w in caught) == 1
    as_missing = late.assign(score=late["score"].where(~late["score"].isin(["-", "unknown"])))
    np.testing.assert_array_equal(proba, model.predict_proba(as_missing))
    strict = _quiet(_model(numeric_errors="raise", na_values=["?", "n/a"]).fit, X.iloc[:300],
                    y.iloc[:300])
    with pytest.raises(ValueError, match=r"column 'score' was fitted as numeric but holds '-'"):
        strict.predict_proba(late)


def test_cross_validation_has_no_failed_fold():
    """Point 1: cross_val_score gave one NaN fold (the "-" was in one test fold only)."""
    table = mixed_table()
    X, y = table.drop(columns="label"), table["label"]
    scores = _quiet(cross_val_score, _model(), X, y, cv=5, error_score="raise")
    assert np.isfinite(scores).all()


def test_a_chunked_fit_reads_a_later_token_as_missing_and_equals_the_in_memory_fit(mixed_csv):
    """Point 1: ``hdpbn fit --chunksize 100`` failed on the chunk that held "-"; a chunked fit
    now reads it as missing, as the in-memory fit does, with the same model."""
    with pytest.warns(UserWarning, match=r"column 'score' is read as numbers: 4 of its 600"):
        streamed = _model().fit(str(mixed_csv), "label", chunksize=100)
    table = _read(mixed_csv)
    in_memory = _quiet(_model().fit, table.drop(columns="label"), table["label"])
    # the reader made the tokens NaN before the in-memory fit: the same cuts, the same codes
    for a, b in zip(streamed.encoder_.codings_, in_memory.encoder_.codings_, strict=True):
        assert (a.name, a.cut_points, a.categories, a.missing_code) == (
            b.name, b.cut_points, b.categories, b.missing_code)
    X = table.drop(columns="label")
    np.testing.assert_array_equal(streamed.predict_proba(X), in_memory.predict_proba(X))


def test_declared_na_values_are_missing_everywhere_without_a_warning(mixed_csv):
    """Point 1: tokens declared to the model are missing in every column, at fit and predict,
    and the model file keeps them."""
    table = mixed_table()
    X, y = table.drop(columns="label"), table["label"]
    X = X.assign(region=X["region"].where(X.index % 50 != 0, "?"))  # "?" in a nominal column
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = _model(na_values=["?", "n/a", "-"], exclude_features=["customer_id",
                                                                      "signup"]).fit(X, y)
        proba = model.predict_proba(X.iloc[:20])
    region = model.encoder_.codings_[model.encoder_.feature_names_.index("region")]
    assert "?" not in region.categories and region.missing_code is not None
    cleaned = X.replace({"?": np.nan, "n/a": np.nan, "-": np.nan})
    np.testing.assert_array_equal(proba, model.predict_proba(cleaned.iloc[:20]))


def test_the_command_line_predicts_the_head_of_the_training_file(mixed_csv, tmp_path, capsys):
    """Point 1: ``hdpbn predict`` on the first 20 rows of the file it was fitted on failed."""
    model = tmp_path / "m.npz"
    assert main(["fit", "--structure", "kdb",
                 str(mixed_csv), "--model", str(model), "--estimation", "m",
                 "--quiet"]) == 0
    head = tmp_path / "head.csv"
    mixed_table().iloc[:20].to_csv(head, index=False)
    out = tmp_path / "p.csv"
    assert main(["predict", str(head), "--model", str(model), "--out", str(out)]) == 0
    assert len(pd.read_csv(out)) == 20
    strict = tmp_path / "strict.npz"
    assert main(["fit", "--structure", "kdb",
                 str(mixed_csv), "--model", str(strict), "--estimation", "m", "--quiet",
                 "--na-values", "?,n/a,-", "--numeric-errors", "raise"]) == 0
    capsys.readouterr()
    assert main(["predict", str(head), "--model", str(strict), "--out", str(out)]) == 0
    assert "warning" not in capsys.readouterr().err  # the declared tokens are missing


# ====================================================================== point 2: identifiers
def test_an_identifier_and_a_date_are_left_out_and_the_model_says_so(tmp_path):
    """Point 2: with ``customer_id`` the model memorised its rows (training accuracy 1.000,
    the randomly labelled "fraud" rows predicted with certainty); it is now left out, with a
    warning saying how to keep it, as is the date, and the model equals one fitted without
    them. The exclusion is recorded, saved and applied at predict time."""
    table = mixed_table()
    X, y = table.drop(columns="label"), table["label"]
    with pytest.warns(UserWarning) as caught:
        model = BayesNetClassifier(random_state=0,
                                   sampler=HDPOptions.preset("adaptive", n_iter=20)).fit(X, y)
    said = " ".join(str(w.message) for w in caught)
    assert "'customer_id'" in said and "identifier" in said and "exclude_features=None" in said
    assert "'signup'" in said and "dates" in said
    assert model.excluded_features_ == ("customer_id", "signup")
    assert model.n_features_in_ == 7 and list(model.feature_names_in_) == list(X.columns)
    proba = model.predict_proba(X)
    fraud = (y == "fraud").to_numpy()
    assert (model.predict(X) == y).mean() < 1.0
    assert proba[fraud, list(model.classes_).index("fraud")].max() < 0.5
    without = _quiet(BayesNetClassifier(random_state=0,
                                        sampler=HDPOptions.preset("adaptive", n_iter=20)).fit,
                     X.drop(columns=["customer_id", "signup"]), y)
    np.testing.assert_array_equal(proba, without.predict_proba(X.drop(columns=["customer_id",
                                                                              "signup"])))
    # anything in the left-out columns at predict time: the same predictions
    other = X.assign(customer_id="new", signup=np.nan)
    np.testing.assert_array_equal(model.predict_proba(other), proba)
    model.save(tmp_path / "m.npz")
    loaded = BayesNetClassifier.load(tmp_path / "m.npz")
    assert loaded.excluded_features_ == model.excluded_features_
    np.testing.assert_array_equal(loaded.predict_proba(X), proba)
    kept = _quiet(BayesNetClassifier(random_state=0,
                                     sampler=HDPOptions.preset("adaptive", n_iter=20),
                                     exclude_features=None).fit, X, y)
    assert kept.excluded_features_ == ()
    assert (kept.predict(X) == y).mean() == 1.0  # what leaving it out prevents


def test_exclusion_is_the_same_streamed_in_chunks_and_in_an_ensemble(mixed_csv):
    """Point 2: a streamed fit leaves out the same columns (decided on every row, after the
    first pass) and equals the in-memory fit; an ensemble says it once, not once a member."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        streamed = _model().fit(str(mixed_csv), "label", chunksize=100)
    assert streamed.excluded_features_ == ("customer_id", "signup")
    assert sum("'customer_id'" in str(w.message) for w in caught) == 1
    table = _read(mixed_csv)
    X = table.drop(columns="label")
    in_memory = _quiet(_model().fit, X, table["label"])
    np.testing.assert_array_equal(streamed.predict_proba(X), in_memory.predict_proba(X))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ensemble = ESKDBClassifier(n_estimators=3, estimation="m", random_state=0).fit(
            X, table["label"])
    assert sum("'customer_id'" in str(w.message) for w in caught) == 1
    assert ensemble.excluded_features_ == ("customer_id", "signup")


def test_exclude_features_lists_columns_or_keeps_every_one():
    table = mixed_table()
    X, y = table.drop(columns="label"), table["label"]
    listed = _quiet(_model(exclude_features=["region", 3]).fit, X, y)
    assert listed.excluded_features_ == ("age", "region")  # listed, in column order
    with pytest.raises(ValueError, match="exclude_features names column 'nope'"):
        _model(exclude_features=["nope"]).fit(X, y)
    with pytest.raises(ValueError, match="exclude_features must be 'auto', None or a list"):
        _model(exclude_features="customer_id").fit(X, y)
    with pytest.raises(ValueError, match="every column is left out"):
        _model().fit(X[["customer_id", "signup"]], y)
    dates = pd.DataFrame({"when": pd.to_datetime(X["signup"]).iloc[:50].to_numpy()[
        np.arange(50) % 5], "region": X["region"].iloc[:50]})
    with pytest.warns(UserWarning, match="'when' holds dates"):
        by_dtype = _model().fit(dates, y.iloc[:50])
    assert by_dtype.excluded_features_ == ("when",)


@pytest.mark.parametrize("listed", [["customer_id", "age"], [0, 3], "mask"])
def test_a_column_listed_as_categorical_may_be_left_out(listed):
    """categorical_features that names (or indexes) a column the fit leaves out still marks
    the other listed columns nominal, in memory and in partial_fit (the encoder of the kept
    columns used to refuse the name, and positions would have shifted)."""
    table = mixed_table()
    X, y = table.drop(columns="label"), table["label"]
    if listed == "mask":
        listed = [c in ("customer_id", "age") for c in X.columns]
    model = _quiet(_model(categorical_features=listed).fit, X, y)
    assert model.excluded_features_ == ("customer_id", "signup")
    codings = {c.name: c for c in model.encoder_.codings_}
    assert codings["age"].kind == "nominal" and codings["score"].kind == "numeric"
    partial = _quiet(_model(categorical_features=listed).partial_fit, X, y)
    assert partial.excluded_features_ == model.excluded_features_
    np.testing.assert_array_equal(partial.predict_proba(X), model.predict_proba(X))


def test_the_command_line_excludes_and_keeps(mixed_csv, tmp_path, capsys):
    model = tmp_path / "m.npz"
    assert main(["fit", "--structure", "kdb",
                 str(mixed_csv), "--model", str(model), "--estimation", "m"]) == 0
    err = capsys.readouterr().err
    assert "'customer_id'" in err and "left out of the model" in err
    assert BayesNetClassifier.load(model).excluded_features_ == ("customer_id", "signup")
    assert main(["fit", "--structure", "kdb",
                 str(mixed_csv), "--model", str(model), "--estimation", "m",
                 "--exclude", "none", "--quiet"]) == 0
    assert BayesNetClassifier.load(model).excluded_features_ == ()
    assert main(["fit", "--structure", "kdb",
                 str(mixed_csv), "--model", str(model), "--estimation", "m",
                 "--exclude", "customer_id,constant", "--quiet"]) == 0
    assert BayesNetClassifier.load(model).excluded_features_ == ("customer_id", "constant")


# ====================================================================== point 4: evaluation
def test_a_fold_is_fitted_on_its_training_rows_only():
    """Point 4: a table read whole declares every value of the file; each training fold of
    ``cross_validate`` knew the test fold's values. Now a fold's encoder holds only the
    values of its training rows, so a test value it never saw is handled as in deployment."""
    rng = np.random.default_rng(1)
    n = 200
    colour = rng.choice(["red", "green", "blue"], n).astype(object)
    colour[7] = "violet"  # one row: in the test fold of one of each repeat's two folds
    y = np.where(rng.random(n) < 0.5, "a", "b")
    X = pd.DataFrame({"colour": pd.Categorical(colour), "x": rng.normal(size=n)})
    models = []

    def make():
        models.append(_model())
        return models[-1]

    cross_validate(make, X, y, n_folds=2, n_repeats=2, seed=0)
    known = sorted(len(m.encoder_.codings_[0].categories) for m in models)
    assert known == [3, 3, 4, 4]  # the fold whose test rows hold "violet" does not know it
    assert X["colour"].cat.categories.tolist() == ["blue", "green", "red", "violet"]  # intact
