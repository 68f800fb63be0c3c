"""Every warning fastpath raises names the caller's line, however deep inside the library it is
raised (one helper, :func:`fastpath.utils._warn.warn`, with ``skip_file_prefixes``; no stack level
counted by hand).

Each case below is a function whose line marked ``# <- warns here`` is the user's call; the
warning must carry this file and that line, and be raised once (an ensemble's members say
what the data warns about once). The cases reach every ``warn`` call of the library but the
command line's (which re-emits warnings it caught for its own output), in memory, out of core,
in ``partial_fit``, in the ensemble and in the readers.
"""

from __future__ import annotations

import ast
import inspect
import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import ConvergenceWarning, DataConversionWarning

import fastpath
from fastpath import (
    BayesNetClassifier,
    DataWarning,
    ESKDBClassifier,
    HDPOptions,
    UnconvergedWarning,
    read_table,
)
from fastpath.io import load_dataset

PACKAGE = Path(fastpath.__file__).parent


@pytest.fixture(scope="module")
def car():
    X, y = load_dataset("car")
    perm = np.random.default_rng(0).permutation(len(X))  # car is sorted by class
    return X.iloc[perm].reset_index(drop=True), np.asarray(y)[perm]


def _stray_frame(n: int = 60) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(1)
    score = rng.normal(size=n).round(3).astype(object)
    score[[3, 17]] = "?"
    return pd.DataFrame({"score": score, "colour": rng.choice(["r", "g"], n)}), \
        rng.choice(["a", "b"], n)


# ---------------------------------------------------------------------- the cases
def case_no_feature_names_at_predict(car, tmp_path):
    X, y = car
    clf = BayesNetClassifier("nb", estimation="m").fit(X, y)
    clf.predict(X.to_numpy())  # <- warns here


def case_feature_names_at_predict_only(car, tmp_path):
    X, y = car
    clf = BayesNetClassifier("nb", estimation="m").fit(X.to_numpy(), y)
    clf.predict_proba(X)  # <- warns here


def case_column_vector_y(car, tmp_path):
    X, y = car
    BayesNetClassifier("nb", estimation="m").fit(X, y.reshape(-1, 1))  # <- warns here


def case_stray_tokens_in_memory(car, tmp_path):
    X, y = _stray_frame()
    BayesNetClassifier("nb", estimation="m").fit(X, y)  # <- warns here


def case_stray_tokens_in_a_stream(car, tmp_path):
    X, y = _stray_frame()
    chunks = [X.assign(cls=y)]
    BayesNetClassifier("nb", estimation="m").fit(lambda: iter(chunks), "cls")  # <- warns here


def case_column_missing_everywhere(car, tmp_path):
    X, y = car
    BayesNetClassifier("nb", estimation="m").fit(X.assign(empty=np.nan), y)  # <- warns here


def case_column_missing_everywhere_in_a_stream(car, tmp_path):
    X, y = car
    chunks = [X.assign(empty=np.nan, cls=y)]
    BayesNetClassifier("nb", estimation="m").fit(lambda: iter(chunks), "cls")  # <- warns here


def case_identifier_column(car, tmp_path):
    X, y = car
    ESKDBClassifier(2, 1, "m").fit(X.assign(id=np.arange(len(X)).astype(str)), y)  # <- warns here


def case_identifier_column_in_a_stream(car, tmp_path):
    X, y = car
    chunks = [X.assign(id=np.arange(len(X)).astype(str), cls=y)]
    BayesNetClassifier("nb", estimation="m").fit(lambda: iter(chunks), "cls")  # <- warns here


def case_first_partial_chunk_lacks_classes(car, tmp_path):
    X, y = car
    one = y == y[0]
    clf = BayesNetClassifier("nb", estimation="m", m=1.0)
    clf.partial_fit(X[one].iloc[:50], y[one][:50], classes=np.unique(y))  # <- warns here


#: a run too short to converge
SHORT = HDPOptions.preset("adaptive", n_iter=20)


def case_unconverged(car, tmp_path):
    X, y = car
    BayesNetClassifier("nb", sampler=SHORT, random_state=0).fit(X, y)  # <- warns here


def case_unconverged_at_partial_fit(car, tmp_path):
    X, y = car
    BayesNetClassifier("nb", sampler=SHORT).partial_fit(X, y)  # <- warns here


def case_stray_tokens_in_a_file(car, tmp_path):
    X, _ = _stray_frame(200)
    X.to_csv(tmp_path / "stray.csv", index=False)
    read_table(tmp_path / "stray.csv")  # <- warns here


def case_another_separator(car, tmp_path):
    (tmp_path / "semi.csv").write_text("a;b;class\n1;2;x\n3;4;y\n")
    read_table(tmp_path / "semi.csv")  # <- warns here


CASES = {
    "no_feature_names_at_predict": UserWarning,
    "feature_names_at_predict_only": UserWarning,
    "column_vector_y": DataConversionWarning,
    "stray_tokens_in_memory": DataWarning,
    "stray_tokens_in_a_stream": DataWarning,
    "column_missing_everywhere": DataWarning,
    "column_missing_everywhere_in_a_stream": DataWarning,
    "identifier_column": DataWarning,
    "identifier_column_in_a_stream": DataWarning,
    "first_partial_chunk_lacks_classes": DataWarning,
    "unconverged": UnconvergedWarning,
    "unconverged_at_partial_fit": UnconvergedWarning,
    "stray_tokens_in_a_file": DataWarning,
    "another_separator": DataWarning,
}


def _marked_line(function) -> int:
    lines, first = inspect.getsourcelines(function)
    marked = [first + i for i, line in enumerate(lines) if "# <- warns here" in line]
    assert len(marked) == 1
    return marked[0]


@pytest.mark.parametrize("name", list(CASES))
def test_every_warning_names_the_callers_line(car, tmp_path, name):
    function = globals()[f"case_{name}"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        function(car, tmp_path)
    # exactly the class: a name warning is a plain UserWarning, what the data says a DataWarning
    ours = [w for w in caught if w.category is CASES[name]]
    # once: an ensemble's members say what the data warns about once, not once per member
    assert len(ours) == 1, f"{name}: {len(ours)} {CASES[name].__name__}s"
    for w in ours:
        assert (os.path.abspath(w.filename), w.lineno) == (__file__, _marked_line(function)), \
            f"{name}: {w.category.__name__} points at {w.filename}:{w.lineno}"


def test_unconverged_warning_is_a_scikit_learn_convergence_warning():
    assert issubclass(UnconvergedWarning, ConvergenceWarning)


def test_the_package_warns_only_through_the_helper():
    """No ``warnings.warn`` and no ``stacklevel`` in fastpath outside the helper itself."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "_warn.py" and path.parent.name == "utils":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.keyword) and node.arg == "stacklevel":
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.value.lineno} stacklevel")
            if (isinstance(node, ast.Attribute) and node.attr == "warn"
                    and isinstance(node.value, ast.Name) and node.value.id == "warnings"):
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno} warnings.warn")
    assert offenders == []


# ---------------------------------------------------------------------- the fit's record
def _mixed(n: int = 300) -> tuple[pd.DataFrame, np.ndarray]:
    """An identifier column and a numeric column with a few "?" (two data warnings)."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({
        "customer_id": [f"c{i}" for i in range(n)],
        "score": np.where(rng.random(n) < 0.03, "?", rng.normal(size=n).round(2).astype(str)),
        "colour": rng.choice(["r", "g", "b"], n),
    })
    return frame, rng.choice(["a", "b"], n)


def test_a_fit_keeps_what_it_warned_about_once_even_when_filtered(tmp_path):
    X, y = _mixed()
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        model = ESKDBClassifier(n_estimators=5, estimation="m", random_state=0).fit(X, y)
    messages = [str(w.message) for w in shown]
    assert len(messages) == 2 == len(set(messages))  # once per fit, not once per member
    assert list(model.fit_warnings_) == messages
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # silenced, still recorded
        quiet = ESKDBClassifier(n_estimators=5, estimation="m", random_state=0).fit(X, y)
    assert quiet.fit_warnings_ == model.fit_warnings_
    model.save(tmp_path / "m.npz")
    assert ESKDBClassifier.load(tmp_path / "m.npz").fit_warnings_ == model.fit_warnings_
    clean = BayesNetClassifier(estimation="m").fit(X[["colour"]], y)
    assert clean.fit_warnings_ == ()


def test_partial_fit_keeps_every_calls_warnings_once():
    X, y = _mixed(400)
    X = X[["score", "colour"]]
    model = BayesNetClassifier(estimation="m")
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        model.partial_fit(X.iloc[:200], y[:200], classes=["a", "b"])
        first = model.fit_warnings_
        model.partial_fit(X.iloc[200:], y[200:])
    assert first and "'score'" in first[0]
    assert model.fit_warnings_[: len(first)] == first
    # every message shown by either call is in the record, once
    assert set(model.fit_warnings_) == {str(w.message) for w in shown}
    assert len(set(model.fit_warnings_)) == len(model.fit_warnings_)


def test_quiet_command_line_prints_no_warning_and_diagnose_shows_them(tmp_path, capsys):
    from fastpath.cli import main

    X, y = _mixed()
    data = tmp_path / "mixed.csv"
    X.assign(label=y).to_csv(data, index=False)
    for extra in ([], ["--chunksize", "100"]):
        model = tmp_path / "m.npz"
        assert main(["fit", str(data), "--structure", "eskdb", "--n-estimators", "3",
                     "--model", str(model), "--quiet", *extra]) == 0
        assert capsys.readouterr().err == ""
        assert main(["diagnose", str(model)]) in (0, 1)
        out = capsys.readouterr().out
        assert out.startswith("the fit warned:")
        assert "'customer_id'" in out and "'score'" in out


# ---------------------------------------------------------------------- data warnings, once
def test_data_warning_is_a_user_warning_exported_at_the_top():
    assert issubclass(DataWarning, UserWarning) and fastpath.DataWarning is DataWarning
    assert not issubclass(UnconvergedWarning, DataWarning)


def test_message_kind_forgets_counts_but_not_quoted_names():
    from fastpath.utils._warn import message_kind

    a = "nominal column 'city' has 775 distinct values in 2000 rows (about 2.6 rows a value)"
    b = "nominal column 'city' has 749 distinct values in 1999 rows (about 2.7 rows a value)"
    assert message_kind(a) == message_kind(b)
    assert message_kind(a) != message_kind(a.replace("'city'", "'city2'"))
    assert message_kind("column 'x1' holds dates") != message_kind("column 'x2' holds dates")


def _churn_like(n: int = 600, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    """The three data warnings of issue 46's churn table: an identifier, a date, stray
    tokens in a numeric column (their counts differ from fold to fold)."""
    rng = np.random.default_rng(seed)
    income = rng.normal(50, 10, n).round(1).astype(object)
    income[rng.random(n) < 0.03] = "n/a"
    when = pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 900, n), unit="D")
    plan = rng.choice(["basic", "plus", "pro"], n)
    y = np.where((plan == "basic") ^ (rng.random(n) < 0.2), "yes", "no")
    return pd.DataFrame({"customer_id": [f"c{i:05d}" for i in range(n)],
                         "signup": when.strftime("%Y-%m-%d"), "income": income,
                         "plan": plan}), y


@pytest.mark.parametrize("action", ["default", "module", "once"])
def test_a_grid_search_says_each_data_warning_once(action):
    # issue 55, point 2: 18 fits said the churn table's three warnings 57 times, as
    # scikit-learn's cross-validation resets Python's once-per-line registry at every fit
    from sklearn.model_selection import GridSearchCV

    X, y = _churn_like()
    search = GridSearchCV(BayesNetClassifier(estimation="m"), {"k": [0, 1], "m": [1.0, 5.0]},
                          cv=3, n_jobs=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter(action)
        search.fit(X, y)
    said = [str(w.message) for w in caught if w.category is DataWarning]
    assert len(said) == 3, said  # identifier, date, stray tokens: each once for 13 fits
    assert {s.split("'")[1] for s in said} == {"customer_id", "signup", "income"}
    # each fit still keeps what it was told
    assert len(search.best_estimator_.fit_warnings_) == 3


def test_the_filters_still_decide_for_each_fit():
    X, y = _churn_like()
    fit = BayesNetClassifier(estimation="m").fit
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # each fit says everything
        fit(X, y)
        fit(X, y)
    assert sum(w.category is DataWarning for w in caught) == 6
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", category=DataWarning)  # the one switch
        model = fit(X, y)
    assert caught == [] and len(model.fit_warnings_) == 3
    for _ in range(2):  # an error filter refuses every fit, not the first only
        with warnings.catch_warnings():
            warnings.simplefilter("default")
            warnings.filterwarnings("error", category=DataWarning)
            with pytest.raises(DataWarning, match="customer_id"):
                fit(X, y)
