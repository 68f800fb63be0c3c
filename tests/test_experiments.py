"""The experiment runner: sign test, W/D/L, cached cells, resume, --quick (bundled data only)."""

from __future__ import annotations

import itertools
import json
import warnings
from fractions import Fraction
from math import comb

import numpy as np
import pandas as pd
import pytest

from fastpath import BayesNetClassifier
from fastpath.evaluation import brier_score, rmse, rmse_true_class, stratified_folds, zero_one_loss
from fastpath.io import dataset_path, load_dataset
from validation.experiments import main
from validation.experiments.classifiers import parse_classifier
from validation.experiments.cli import quick_checks
from validation.experiments.reporting import (
    dataset_means,
    sign_test,
    table2_markdown,
    win_draw_loss,
)
from validation.experiments.runner import (
    CrossValidation,
    LearningCurve,
    RunSettings,
    bundled_datasets,
    discover_datasets,
    run_cells,
)


# ---------------------------------------------------------------------- sign test
def _exact_sign_test(wins: int, losses: int) -> float:
    """min(1, 2 P(W <= min(wins, losses))), W ~ Binomial(wins + losses, 1/2), in exact
    arithmetic: the reference for scipy.stats.binomtest, which sign_test calls."""
    n = wins + losses
    if n == 0:
        return 1.0
    tail = Fraction(sum(comb(n, i) for i in range(min(wins, losses) + 1)), 2**n)
    return float(min(Fraction(1), 2 * tail))


@pytest.mark.parametrize(
    ("wins", "losses"),
    [(0, 0), (1, 0), (0, 5), (3, 3), (40, 28), (52, 15), (25, 43), (60, 6), (7, 3), (13, 42)],
)
def test_sign_test_is_the_exact_binomial_tail(wins, losses):
    expected = _exact_sign_test(wins, losses)
    assert sign_test(wins, losses) == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_sign_test_all_small_counts_are_exact():
    for w, lo in itertools.product(range(13), repeat=2):
        assert sign_test(w, lo) == pytest.approx(_exact_sign_test(w, lo), rel=1e-12)


def test_sign_test_reproduces_the_papers_bold_entries():
    # Table 2, RMSE: NB 40-0-28 is not significant, TAN 52-1-15 is (draws excluded)
    assert sign_test(40, 28) > 0.05
    assert sign_test(52, 15) <= 0.05
    # Table 3: TAN-m vs RF on RMSE 25-0-43 is bold, SkDB-HDP vs RF on 0-1 loss 35-3-30 is not
    assert sign_test(25, 43) <= 0.05
    assert sign_test(35, 30) > 0.05


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3"])
def test_sign_test_rejects_bad_counts(bad):
    with pytest.raises(ValueError, match="wins"):
        sign_test(bad, 3)


def _means(rows):
    return pd.DataFrame(rows, columns=["dataset", "classifier", "rmse"])


def test_win_draw_loss_counts_and_excludes_draws():
    rows = []
    for i, (a, b) in enumerate([(0.1, 0.2), (0.3, 0.2), (0.2, 0.2), (0.1, 0.4), (0.5, 0.6)]):
        rows += [(f"d{i}", "x", a), (f"d{i}", "y", b)]
    rows.append(("d9", "x", 0.1))  # y has no result on d9: not compared
    wdl = win_draw_loss(_means(rows), "x", "y", "rmse")
    assert (wdl.wins, wdl.draws, wdl.losses) == (3, 1, 1)
    assert wdl.p_value == pytest.approx(sign_test(3, 1))
    assert str(wdl) == "3-1-1"
    back = win_draw_loss(_means(rows), "y", "x", "rmse")
    assert (back.wins, back.draws, back.losses) == (1, 1, 3)


def test_dataset_means_ignore_incomplete_cells():
    res = pd.DataFrame(
        {
            "dataset": ["a"] * 5,
            "classifier": ["x", "x", "y", "y", "z"],
            "zero_one_loss": [0.1, 0.3, 0.2, 0.2, 0.0],
            "rmse": [0.2, 0.4, 0.3, 0.3, 0.1],
            "log_loss": [1.0, 1.0, 1.0, 1.0, 1.0],
            "n_classes": [2] * 5,
            "fit_seconds": [1.0] * 5,
            "predict_seconds": [1.0] * 5,
        }
    )
    means = dataset_means(res)
    assert set(means["classifier"]) == {"x", "y"}  # z has one fold of two
    assert means.loc[means["classifier"] == "x", "rmse"].item() == pytest.approx(0.3)


def test_classifier_names():
    s = parse_classifier("SkDB5-HDP")
    assert (s.structure, s.k, s.estimation, s.label) == ("skdb", 5, "hdp", "SkDB-5-HDP")
    assert parse_classifier("kdb0-m").k == 0
    assert parse_classifier("tan-m").label == "TAN-m"
    assert parse_classifier("rf").family == "rf"
    assert parse_classifier("RF-onehot").label == "RF (one-hot)"
    assert parse_classifier("kdb3-hdp").cache_tag(500) == "kdb3-hdp-it500"
    for bad in ("kdb-m", "tan-x", "svm", "skdb-hdp", "eskdb-x", "eskdb-mdl"):
        with pytest.raises(ValueError, match="unknown classifier"):
            parse_classifier(bad)


def test_ensemble_and_raw_forest_names():
    e = parse_classifier("eskdb-hdp")
    assert (e.family, e.n_members, e.k, e.discretization, e.label) == (
        "eskdb", 20, 5, "stochastic", "ESKDB-20-HDP")
    d = parse_classifier("ESKDB5-mdl-m")
    assert (d.n_members, d.discretization, d.estimation) == (5, "mdl", "m")
    # ensembles' cells since their selection is sampled, and since their stochastic cut points
    # have the authors' forced cut, are kept apart from the older ones
    assert e.cache_tag(1000) == "eskdb-hdp-it1000-selauto-fc"
    ens = parse_classifier("eskdb-hdpe")
    assert ens.adaptive_preset == "ensemble" and ens.cache_tag(1000) == "eskdb-hdpe-auto-selauto-fc"
    # members at random resolution, alone or mixed with the stochastic MDL
    r, x = parse_classifier("eskdb-rand-hdpe"), parse_classifier("eskdb10-mix-hdpe")
    assert (r.discretization, x.discretization, x.n_members) == ("random", "mixed", 10)
    assert r.cache_tag(1000) == "eskdb-rand-hdpe-auto-selauto"
    assert x.label == "ESKDB-10 (mixed resolution)-HDP (ensemble sampler)"
    assert d.cache_tag(1000) == "eskdb5-mdl-m-selauto"  # Weka's cut points: unchanged
    assert parse_classifier("rf-raw").label == "RF (raw columns)"
    with pytest.raises(ValueError, match="at least one member"):
        parse_classifier("eskdb0-m")


def test_ensemble_classifier_is_eskdb_with_the_specs_settings():
    from fastpath import ESKDBClassifier
    from validation.experiments.classifiers import fitted_details, make_classifier

    model = make_classifier(parse_classifier("eskdb3-mdl-m"), seed=4)
    assert isinstance(model, ESKDBClassifier)
    assert (model.n_estimators, model.k, model.discretization) == (3, 5, "mdl")
    X, y = load_dataset("car")
    details = fitted_details(model.fit(X, y))
    assert details["n_members"] == 3 and 1 <= details["mean_n_selected"] <= X.shape[1]


def test_raw_forest_keeps_numbers_and_one_hot_levels_with_missing():
    from validation.experiments.classifiers import make_classifier

    rng = np.random.default_rng(0)
    n = 300
    X = pd.DataFrame({
        "x": rng.normal(size=n),
        "c": rng.choice(["a", "b", "c"], n).astype(object),
    })
    y = np.where(X["x"] > 0, "p", "q")
    X.loc[::10, "x"] = np.nan
    X.loc[::7, "c"] = None
    model = make_classifier(parse_classifier("rf-raw")).fit(X, y)
    # one numeric feature (kept as a number) + levels a, b, c and missing
    assert model.model_.n_features_in_ == 1 + 4
    test = X.head(20).copy()
    test.loc[0, "c"] = "never-seen"  # all-zero block, not an error
    proba = model.predict_proba(test)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    ok = X["x"].notna().to_numpy()
    assert (model.classes_[model.predict_proba(X).argmax(1)][ok] == y[ok]).mean() > 0.95


@pytest.mark.parametrize("name", ["lightgbm-raw", "catboost-raw", "xgboost-raw"])
def test_raw_boosters_take_numbers_categories_and_missing_values(name):
    """Issue 27: each booster with its library's defaults on the raw columns: numeric columns as
    numbers with missing values, nominal ones as native categories; a value unseen in training
    is not an error; proper distributions over the labels."""
    from validation.experiments.classifiers import RAW_BOOSTERS, RawBooster, make_classifier

    pytest.importorskip(RAW_BOOSTERS[name], reason=f"{name} needs pip install hdpbn[boost]")
    rng = np.random.default_rng(0)
    n = 300
    X = pd.DataFrame({
        "x": rng.normal(size=n),
        "c": rng.choice(["a", "b", "c"], n).astype(object),
        "k": pd.Categorical(rng.choice(["u", "v"], n)),
    })
    y = np.where((X["x"] > 0) ^ (X["c"] == "a"), "p", "q")
    X.loc[::10, "x"] = np.nan
    X.loc[::7, "c"] = None
    spec = parse_classifier(name)
    assert spec.family == name and spec.label.endswith("(raw columns)")
    model = make_classifier(spec, seed=1).fit(X, y)
    assert isinstance(model, RawBooster) and list(model.nominal_) == [False, True, True]
    test = X.head(20).copy()
    test.loc[0, "c"] = "never-seen"
    proba = model.predict_proba(test)
    assert proba.shape == (20, 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    ok = X["x"].notna().to_numpy() & X["c"].notna().to_numpy()
    assert (model.classes_[model.predict_proba(X).argmax(1)][ok] == y[ok]).mean() > 0.9
    X_copy = X.copy()
    make_classifier(spec, seed=1).fit(X, y)
    pd.testing.assert_frame_equal(X, X_copy)  # the caller's table untouched
    # a nominal column without any value in the training rows (anneal has such columns)
    empty = X.assign(e=pd.Series([None] * n, dtype=object))
    model = make_classifier(spec, seed=1).fit(empty, y)
    assert list(model.nominal_) == [False, True, True, True]
    np.testing.assert_allclose(model.predict_proba(empty.head(5).assign(e="z")).sum(1), 1.0)


def test_a_missing_booster_is_skipped_with_a_note(monkeypatch, capsys):
    import builtins

    from validation.experiments.cli import _available

    real_import = builtins.__import__

    def no_lightgbm(name, *args, **kwargs):
        if name == "lightgbm":
            raise ImportError("no lightgbm")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_lightgbm)
    assert _available(["nb-m", "lightgbm-raw"]) == ["nb-m"]
    assert "lightgbm-raw skipped (lightgbm is not installed)" in capsys.readouterr().err


def test_onehot_forest_sees_indicators_and_handles_unseen_values():
    from validation.experiments.classifiers import make_classifier

    X, y = load_dataset("car")
    model = make_classifier(parse_classifier("rf-onehot")).fit(X.iloc[:600], y.iloc[:600])
    n_indicators = sum(v.size for v in model.onehot_values_)
    assert model.model_.n_features_in_ == n_indicators > X.shape[1]
    test = X.iloc[600:700].copy()
    test.iloc[0, 0] = "never-seen"  # unknown code -1: an all-zero block, not an error
    proba = model.predict_proba(test)
    assert proba.shape == (100, model.classes_.size)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)


# ---------------------------------------------------------------------- protocols
def test_learning_curve_splits_are_nested_and_disjoint():
    y = np.repeat([0, 1, 2], [60, 30, 10])
    lc = LearningCurve(sizes=(10, 20, 50, 1000), runs=2, test_fraction=0.3, seed=1)
    splits = lc.splits(y)
    by_run = {}
    for key, meta, train, test in splits:
        assert not set(train) & set(test)
        assert np.bincount(y[test], minlength=3).tolist() == [18, 9, 3]  # stratified
        by_run.setdefault(meta["repeat"], []).append((meta["size"], set(train), key))
    for runs in by_run.values():
        sizes = [s for s, _, _ in runs]
        assert sizes == [10, 20, 50, 70]  # 1000 capped at the 70 non-test rows
        for (_, small, _), (_, big, _) in itertools.pairwise(runs):
            assert small < big
    assert by_run[0][0][1] != by_run[1][0][1]


# ---------------------------------------------------------------------- runner
@pytest.fixture
def small_data(tmp_path):
    """car (bundled) as a csv.gz and a 400-row tic-tac-toe as ARFF, in one folder."""
    from fastpath.io import write_arff

    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "car.csv.gz").write_bytes(dataset_path("car").read_bytes())
    X, y = load_dataset("tic-tac-toe")
    frame = X.assign(**{"class": y}).sample(400, random_state=0).reset_index(drop=True)
    write_arff(frame, folder / "ttt.arff")
    return folder


@pytest.mark.study  # make study: the runner end to end, make test's ten minutes
def test_runner_end_to_end_with_resume(small_data, tmp_path):
    refs = discover_datasets([small_data])
    assert [r.name for r in refs] == ["ttt", "car"] or [r.name for r in refs] == ["car", "ttt"]
    protocol = CrossValidation(folds=2, repeats=1, seed=3)
    settings = RunSettings(iterations=50)
    cache = tmp_path / "cache"
    names = ["nb-m", "kdb1-m", "skdb2-m"]
    first = run_cells(refs, names, protocol, settings, cache, jobs=1, progress=False)
    assert first.failures == []
    assert first.computed == 2 * 3 * 2 and first.cached == 0
    res = first.results
    assert len(res) == 12
    # the same folds for every classifier
    sizes = res.groupby(["dataset", "split"])[["n_train", "n_test"]].nunique()
    assert (sizes == 1).all().all()
    # one cell recomputed independently: same folds, same model, same metrics
    X, y = load_dataset("car")
    labels = y.astype(str).to_numpy()
    classes, y_codes = np.unique(labels, return_inverse=True)
    _, _, train, test = next(iter(stratified_folds(y_codes, 2, 1, 3)))
    cell = res[(res.dataset == "car") & (res.classifier == "kdb1-m") & (res.split == "r0-f0")]
    model = BayesNetClassifier(structure="kdb", k=1, estimation="m", m="holdout",
                               random_state=int(cell["seed"].item()))
    model.fit(X.iloc[train], labels[train])
    proba = model.predict_proba(X.iloc[test])
    assert list(model.classes_) == list(classes)
    assert cell["rmse"].item() == pytest.approx(rmse(y_codes[test], proba), rel=1e-12)
    assert cell["zero_one_loss"].item() == pytest.approx(zero_one_loss(y_codes[test], proba))
    skdb = res[res.classifier == "skdb2-m"]
    assert (skdb["n_selected"] >= 1).all() and (skdb["k_selected"] <= 2).all()

    # resume: nothing to compute, identical results
    second = run_cells(refs, names, protocol, settings, cache, jobs=1, progress=False)
    assert second.computed == 0 and second.cached == 12
    pd.testing.assert_frame_equal(second.results, res)
    # one lost cell and one new classifier: only those are computed
    files = sorted(cache.rglob("*.json"))
    assert len(files) == 12
    files[0].unlink()
    third = run_cells(refs, [*names, "tan-m"], protocol, settings, cache, jobs=1,
                      progress=False)
    assert third.computed == 1 + 4 and third.cached == 11
    # another protocol never reuses these cells
    other = run_cells(refs, ["nb-m"], CrossValidation(2, 1, seed=4), settings, cache, jobs=1,
                      progress=False)
    assert other.computed == 4


def test_cells_keep_their_probabilities_and_older_cells_are_upgraded_or_refitted(small_data,
                                                                                  tmp_path):
    from validation.experiments.runner import collect_cache, proba_path, rescore_cache

    refs = [r for r in discover_datasets([small_data]) if r.name == "car"]  # 4 classes
    protocol = CrossValidation(folds=2, repeats=1, seed=3)
    settings = RunSettings()
    cache = tmp_path / "cache"
    first = run_cells(refs, ["nb-m"], protocol, settings, cache, jobs=1, progress=False).results
    cells = sorted(cache.glob("*/*/*/*.json"))
    assert len(cells) == 2
    for path in cells:
        record = json.loads(path.read_text())
        with np.load(proba_path(path)) as stored:
            proba, y = stored["proba"], stored["y"]
        assert proba.shape == (record["n_test"], 4) and y.shape == (record["n_test"],)
        assert record["rmse"] == rmse(y, proba) and record["brier"] == brier_score(y, proba)
        assert record["rmse_true_class"] == rmse_true_class(y, proba)
        assert record["rmse"] < record["rmse_true_class"]  # more than two classes
    # a record of the former kind: its "rmse" the true class's, no Brier score
    old = json.loads(cells[0].read_text())
    old["rmse"] = old.pop("rmse_true_class")
    del old["brier"]
    cells[0].write_text(json.dumps(old))
    again = run_cells(refs, ["nb-m"], protocol, settings, cache, jobs=1, progress=False)
    assert (again.computed, again.cached) == (0, 2)  # upgraded from its probabilities
    pd.testing.assert_frame_equal(again.results[first.columns], first)
    assert collect_cache(cache)["rmse"].notna().all()
    # rescore rewrites the old record from its probabilities
    assert rescore_cache(cache) == (1, 0)
    assert json.loads(cells[0].read_text())["rmse"] == first["rmse"].iloc[0]
    # without its probabilities, a multi-class old record cannot be upgraded: refitted
    cells[0].write_text(json.dumps(old))
    proba_path(cells[0]).unlink()
    collected = collect_cache(cache)
    assert collected["rmse"].isna().sum() == 1
    assert collected["rmse_true_class"].tolist() == first["rmse_true_class"].tolist()
    third = run_cells(refs, ["nb-m"], protocol, settings, cache, jobs=1, progress=False)
    assert (third.computed, third.cached) == (1, 1)
    for col in ("zero_one_loss", "rmse", "brier", "log_loss", "rmse_true_class"):
        assert third.results[col].tolist() == first[col].tolist()


def test_older_tables_keep_the_paper_s_rmse_only_where_it_is_known():
    from validation.experiments.reporting import normalise_results

    old = pd.DataFrame({"dataset": ["two", "two", "many", "many"], "classifier": ["a"] * 4,
                        "split": ["r0-f0", "r0-f1"] * 2, "zero_one_loss": [0.1] * 4,
                        "rmse": [0.3, 0.4, 0.5, 0.6], "log_loss": [0.2] * 4,
                        "n_classes": [2, 2, 5, 5], "fit_seconds": [1.0] * 4,
                        "predict_seconds": [1.0] * 4})
    new = normalise_results(old)
    assert new["rmse_true_class"].tolist() == [0.3, 0.4, 0.5, 0.6]
    assert new["rmse"].tolist()[:2] == [0.3, 0.4] and new["rmse"].iloc[2:].isna().all()
    assert new["brier"].tolist()[:2] == pytest.approx([0.18, 0.32])
    assert old["rmse"].tolist() == [0.3, 0.4, 0.5, 0.6]  # the caller's table untouched
    means = dataset_means(new).set_index("dataset")
    assert np.isnan(means.loc["many", "rmse"]) and means.loc["two", "rmse"] == pytest.approx(0.35)
    assert means.loc["many", "rmse_true_class"] == pytest.approx(0.55)
    # a table that has the Brier score is the new kind: returned as it is
    pd.testing.assert_frame_equal(normalise_results(new), new)


# fits every estimator (about 14 s): outside make test
# (10 minutes on 2 cores); make study runs it
@pytest.mark.study
def test_cells_time_the_estimation_stage_of_every_estimator(tmp_path):
    """``estimation_seconds``: the same stage (choosing m, estimating the tables) for every
    estimator, inside the fit's seconds; none for a baseline; the stage's functions are restored
    after the cell."""
    import fastpath.pipeline._members as members_module
    import fastpath.pipeline._memory as memory_module

    before = (members_module.estimate_tables, memory_module.choose_m_from_codes)
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "car.csv.gz").write_bytes(dataset_path("car").read_bytes())
    names = ["kdb1-m", "kdb1-hdp", "kdb1-hgs", "kdb1-hls", "rf"]
    report = run_cells(discover_datasets([folder]), names, CrossValidation(2, 1, seed=1),
                       RunSettings(iterations=30), tmp_path / "cache", jobs=1, progress=False)
    assert report.failures == []
    res = report.results.set_index(["classifier", "split"])
    for name in names[:4]:
        seconds = res.loc[name, "estimation_seconds"]
        assert (seconds > 0).all() and (seconds < res.loc[name, "fit_seconds"]).all(), name
    # HDP's sampler seconds are part of the stage
    assert (res.loc["kdb1-hdp", "hdp_seconds"] <= res.loc["kdb1-hdp", "estimation_seconds"]).all()
    assert res.loc["rf", "estimation_seconds"].isna().all()
    assert (members_module.estimate_tables, memory_module.choose_m_from_codes) == before


def test_runner_reports_a_failing_cell(tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    # one class only in the training folds of a 3-row dataset: the classifier refuses
    pd.DataFrame({"a": ["x", "y", "x", "y"], "class": ["p", "p", "p", "q"]}).to_csv(
        folder / "tiny.csv", index=False
    )
    report = run_cells(discover_datasets([folder / "tiny.csv"]), ["nb-m"], CrossValidation(2, 1, 0),
                       RunSettings(), tmp_path / "cache", jobs=1, progress=False)
    assert report.failures and "class" in report.failures[0]["error"]


def test_runner_progress_bar_on_request_only(tmp_path, capsys):
    refs = discover_datasets([dataset_path("car")])
    args = (refs, ["nb-m"], CrossValidation(2, 1, 0), RunSettings(), tmp_path / "cache")
    run_cells(*args, jobs=1, progress=False)
    assert capsys.readouterr().err == ""
    run_cells(*args, jobs=1, progress=None)  # None: only on a terminal, which pytest's is not
    assert capsys.readouterr().err == ""
    run_cells(*args, jobs=1, progress=True)  # the cells are cached now: the bar still shows
    assert "2/2" in capsys.readouterr().err


@pytest.mark.study  # make study: two processes of the runner, make test's ten minutes
def test_runner_in_two_processes_matches_one(small_data, tmp_path):
    refs = [r for r in discover_datasets([small_data]) if r.name == "ttt"]
    protocol = CrossValidation(folds=2, repeats=1, seed=0)
    one = run_cells(refs, ["tan-m", "kdb2-m"], protocol, RunSettings(), tmp_path / "c1", jobs=1,
                    progress=False).results
    two = run_cells(refs, ["tan-m", "kdb2-m"], protocol, RunSettings(), tmp_path / "c2", jobs=2,
                    progress=False).results
    cols = ["dataset", "classifier", "split", "zero_one_loss", "rmse", "log_loss", "m"]
    pd.testing.assert_frame_equal(one[cols], two[cols])


def test_quick_checks_catch_a_bad_hdp():
    rows = []
    for d in ("a", "b", "c"):
        for clf, r in (("kdb3-m", 0.2), ("kdb3-hdp", 0.3)):
            rows.append(dict(dataset=d, classifier=clf, zero_one_loss=0.1, rmse=r, log_loss=0.5,
                             n_classes=2, fit_seconds=0.1, predict_seconds=0.1))
    labels = {d: np.array(["p"] * 6 + ["q"] * 4) for d in ("a", "b", "c")}
    failed = quick_checks(pd.DataFrame(rows), labels)
    assert any("kdb3-hdp" in f for f in failed)
    rows_ok = [dict(r, rmse=0.2) for r in rows]
    assert quick_checks(pd.DataFrame(rows_ok), labels) == []
    rows_bad = [dict(r, zero_one_loss=0.5) for r in rows_ok]
    assert any("majority" in f for f in quick_checks(pd.DataFrame(rows_bad), labels))


@pytest.mark.study  # make study: the runner's quick mode end to end, make test's ten minutes
def test_quick_mode_end_to_end(tmp_path):
    """``--quick`` on the bundled data: exit 0 means its assertions held; check the outputs."""
    out = tmp_path / "quick"
    status = main(["--quick", "--jobs", "1", "--quiet", "--out", str(out),
                   "--classifiers", "nb-m,kdb3-m,kdb3-hdp"])
    assert status == 0
    res = pd.read_csv(out / "results.csv")
    assert set(res["classifier"]) == {"nb-m", "kdb3-m", "kdb3-hdp"}
    assert res["dataset"].nunique() == 4 and len(res) == 4 * 3 * 2
    # the real assertion of the quick mode, checked here again: HDP is not worse than m
    # on mean RMSE for kDB-3 over the bundled datasets
    means = res.groupby("classifier")["rmse"].mean()
    assert means["kdb3-hdp"] <= means["kdb3-m"] + 0.005
    tables = (out / "tables.md").read_text()
    assert "| kDB-3 | 4 |" in tables
    assert (out / "img" / "winloss_rmse.png").stat().st_size > 1000
    meta = json.loads((out / "run.json").read_text())
    assert meta["cells_computed"] == 24 and meta["settings"]["iterations"] == 1000
    # a second run resumes from the cache and computes nothing
    assert main(["--quick", "--jobs", "1", "--quiet", "--out", str(out),
                 "--classifiers", "nb-m,kdb3-m,kdb3-hdp"]) == 0
    assert json.loads((out / "run.json").read_text())["cells_computed"] == 0
    # the report subcommand rebuilds the tables from the CSV
    assert main(["report", str(out / "results.csv"), "--out", str(tmp_path / "rep")]) == 0
    assert table2_markdown(dataset_means(res)) in (tmp_path / "rep" / "tables.md").read_text()


def test_usage_names_the_command_it_was_run_as(capsys):
    for prog in (None, "hdpbn experiments"):
        kw = {} if prog is None else {"prog": prog}
        with pytest.raises(SystemExit) as exc:
            main(["--help"], **kw)
        assert exc.value.code == 0
        usage = capsys.readouterr().out.split("\n")[0]
        assert usage.startswith(f"usage: {prog or 'python -m validation.experiments'} ")


def test_cli_errors_are_clear(tmp_path, capsys):
    assert main(["run", str(tmp_path / "nowhere")]) == 2
    assert "no such file" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["run", "--bogus"])
    assert main(["--quick", "--classifiers", "svm-m"]) == 2
    assert "unknown classifier" in capsys.readouterr().err


def test_typing_from_a_manifest(tmp_path):
    from validation.experiments.runner import load_dataset

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({
        "code": rng.integers(0, 4, 50),        # integer-coded category
        "count": rng.integers(0, 30, 50),      # a numeric integer attribute
        "x": rng.random(50),
        "class": rng.integers(0, 2, 50),
    })
    frame.to_csv(tmp_path / "toy.csv.gz", index=False)
    pd.DataFrame({"slug": ["toy"], "numeric_attributes": [2]}).to_csv(
        tmp_path / "MANIFEST.csv", index=False
    )
    (ref,) = discover_datasets([tmp_path])  # MANIFEST.csv itself is not a dataset
    assert ref.declared_numeric == 2
    X, labels = load_dataset(ref, "file")
    assert all(pd.api.types.is_numeric_dtype(X[c].dtype) for c in X.columns)
    assert set(labels) == {"0", "1"}
    X, _ = load_dataset(ref, "manifest")
    assert isinstance(X["code"].dtype, pd.CategoricalDtype)
    assert pd.api.types.is_numeric_dtype(X["count"].dtype)
    X, _ = load_dataset(ref, "int<=40")
    assert isinstance(X["count"].dtype, pd.CategoricalDtype)
    with pytest.raises(ValueError, match="typing"):
        RunSettings(typing="guess")


def test_value_backoff_classifier_names():
    from validation.experiments.classifiers import make_classifier

    s = parse_classifier("KDB3-mv")
    assert (s.family, s.structure, s.k, s.estimation, s.m_backoff) == (
        "bnc", "kdb", 3, "m", "value")
    assert s.label == "kDB-3-m (value back-off)"
    assert s.cache_tag(500) == "kdb3-mv"
    assert parse_classifier("tan-mv").label == "TAN-m (value back-off)"
    assert parse_classifier("skdb5-mv").label == "SkDB-5-m (value back-off)"
    assert parse_classifier("nb-mv").k == 0
    assert parse_classifier("kdb3-m").m_backoff == "path"
    assert parse_classifier("kdb3-hdp").m_backoff == "path"
    model = make_classifier(parse_classifier("skdb5-mv"), seed=2)
    assert isinstance(model, BayesNetClassifier)
    assert (model.structure, model.k, model.estimation, model.m_backoff) == ("skdb", 5, "m",
                                                                           "value")
    assert make_classifier(parse_classifier("kdb3-m")).m_backoff == "path"
    for bad in ("kdb3-mvv", "tan-hdpv", "eskdb-mv"):
        with pytest.raises(ValueError, match="unknown classifier"):
            parse_classifier(bad)


def test_weka_forest_name_and_skip_note_without_weka(monkeypatch, capsys):
    from validation.experiments.classifiers import make_classifier
    from validation.experiments.cli import _available
    from validation.experiments.weka import WekaForest

    spec = parse_classifier("RF-Weka")
    assert (spec.family, spec.label) == ("rf-weka", "RF (Weka)")
    assert isinstance(make_classifier(spec, seed=3), WekaForest)
    monkeypatch.setenv("HDPBN_WEKA_JAR", "/nope/weka.jar")
    assert _available(["nb-m", "rf-weka"]) == ["nb-m"]
    assert "rf-weka skipped" in capsys.readouterr().err


def test_runner_reads_the_class_column_as_labels(tmp_path):
    # anneal's classes are 1, 2, 3, 5 and U; U (under 5 % of rows) must stay a class
    from validation.experiments.runner import load_dataset as load_experiment_dataset

    rows = ["x,class"] + [f"{i % 3},{'1235'[i % 4]}" for i in range(60)] + ["0,U", "1,U"]
    (tmp_path / "anneal_like.csv").write_text("\n".join(rows) + "\n")
    (ref,) = discover_datasets([tmp_path / "anneal_like.csv"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, labels = load_experiment_dataset(ref)
    assert len(labels) == 62 and sorted(set(labels)) == ["1", "2", "3", "5", "U"]


def test_mloo_names_the_default_m_rule_and_m_the_papers():
    from validation.experiments.classifiers import make_classifier, parse_classifier

    assert parse_classifier("tan-m").m_rule == "holdout"
    assert parse_classifier("kdb3-mv").m_rule == "holdout"
    spec = parse_classifier("kdb3-mloo")
    assert (spec.estimation, spec.m_backoff, spec.m_rule) == ("m", "path", "auto")
    assert spec.label == "kDB-3-m (leave-one-out m)"
    assert make_classifier(spec).m == "auto"
    assert make_classifier(parse_classifier("nb-m")).m == "holdout"


def test_compare_prints_wdl_of_any_pairs(tmp_path, capsys):
    from validation.experiments.cli import main as experiments_main

    rows = []
    for d, (ra, rb) in {"d1": (0.1, 0.2), "d2": (0.3, 0.2), "d3": (0.1, 0.4)}.items():
        for c, r in (("a", ra), ("b", rb)):
            for split in ("r0-f0", "r0-f1"):
                rows.append(dict(dataset=d, classifier=c, split=split, zero_one_loss=r,
                                 rmse=r, log_loss=r, n_classes=2, fit_seconds=0.1,
                                 predict_seconds=0.1))
    path = tmp_path / "results.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    assert experiments_main(["compare", str(path), "--pairs", "a:b"]) == 0
    out = capsys.readouterr().out
    assert "| a vs b | 3 | 2-0-1 (p=1.000) |" in out
    assert experiments_main(["compare", str(path), "--pairs", "a:zz"]) == 2
    assert "no results for ['zz']" in capsys.readouterr().err
    # two runs of one HDP classifier with different iterations are told apart by @iterations
    frame = pd.DataFrame(rows).assign(iterations=np.where(np.arange(len(rows)) % 4 < 2, 100,
                                                          np.nan))
    both = pd.concat([frame, frame[frame.classifier == "a"].assign(iterations=500, rmse=0.0,
                                                                   zero_one_loss=0.0,
                                                                   log_loss=0.0)])
    both.to_csv(path, index=False)
    assert experiments_main(["compare", str(path), "--pairs", "a@500:a@100"]) == 0
    assert "| a@500 vs a@100 | 3 | 3-0-0" in capsys.readouterr().out
    assert experiments_main(["compare", str(path), "--pairs", "a:b"]) == 2
    assert "ambiguous" in capsys.readouterr().err


def test_compare_by_column_types_and_the_summary(tmp_path, capsys):
    from validation.experiments.cli import main as experiments_main

    rows = []
    # a wins on the nominal datasets n1, n2, loses on the numeric one x1; x2 lacks a fold of b
    for d, (ra, rb) in {"n1": (0.1, 0.2), "n2": (0.1, 0.3), "x1": (0.4, 0.2),
                        "x2": (0.2, 0.1)}.items():
        for c, r in (("a", ra), ("b", rb), ("base", 0.5)):
            for k, split in enumerate(("r0-f0", "r0-f1")):
                if (d, c, split) == ("x2", "b", "r0-f1"):
                    continue
                rows.append(dict(dataset=d, classifier=c, split=split, zero_one_loss=r,
                                 rmse=r, log_loss=2 * r, n_classes=2, fit_seconds=1.0 + k,
                                 predict_seconds=0.5,
                                 estimation_seconds=None if c == "base" else 0.25 * (1 + k)))
    path = tmp_path / "results.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    manifest = tmp_path / "MANIFEST.csv"
    pd.DataFrame({"slug": ["n1", "n2", "x1", "x2"], "numeric_attributes": [0, 0, 3, 1]}).to_csv(
        manifest, index=False)
    assert experiments_main(["compare", str(path), "--pairs", "a:b", "--column-types",
                             "nominal", "--manifest", str(manifest)]) == 0
    out = capsys.readouterr().out
    assert "nominal datasets (2): n1, n2" in out and "| a vs b | 2 | 2-0-0" in out
    assert experiments_main(["compare", str(path), "--pairs", "a:b", "--column-types",
                             "numeric", "--manifest", str(manifest)]) == 0
    assert "| a vs b | 1 | 0-0-1" in capsys.readouterr().out
    assert experiments_main(["compare", str(path), "--pairs", "a:b", "--column-types",
                             "numeric"]) == 2
    assert "--manifest" in capsys.readouterr().err

    assert experiments_main(["summary", str(path), "--classifiers", "a,b,base"]) == 0
    out = capsys.readouterr().out
    # x2 is left out (b lacks a fold): means over n1, n2, x1
    assert out.startswith("3 datasets")
    a_row = next(line for line in out.splitlines() if line.startswith("| a |"))
    cells = [c.strip() for c in a_row.strip("|").split("|")]
    # 0-1 loss, RMSE, Brier (two classes: 2 RMSE^2, mean of 0.02, 0.02, 0.32), log loss
    assert cells[1:5] == ["0.2000", "0.2000", "0.1200", "0.4000"]
    # estimation: median 0.375 per fit, summed over 3 datasets 1.125, of 4.5 fit seconds
    assert cells[5:11] == ["0.3750", f"{1.125:.2f}", "25 %", "1.500", "0.5000"]
    base_row = next(line for line in out.splitlines() if line.startswith("| base |"))
    assert [c.strip() for c in base_row.strip("|").split("|")][5:8] == ["", "", ""]
    assert experiments_main(["summary", str(path), "--classifiers", "a,zz"]) == 2


def test_hdpr_is_hdp_with_the_reference_samplers_shortcuts():
    from validation.experiments.classifiers import make_classifier, parse_classifier

    spec = parse_classifier("tan-hdpr")
    assert (spec.estimation, spec.reference_sampler) == ("hdp", True)
    assert spec.cache_tag(1000) == "tan-hdpr-it1000" and spec.label == "TAN-HDP (reference sampler)"
    model = make_classifier(spec, iterations=300)
    options = model.hdp_options()
    assert (options.update, options.root, options.n_iter) == ("window", "reference", 300)
    plain = make_classifier(parse_classifier("tan-hdp")).hdp_options()
    assert (plain.update, plain.root) == ("exact", "exact")


def test_collect_writes_every_cached_cell(tmp_path, capsys):
    from validation.experiments.cli import main as experiments_main

    refs = [r for r in bundled_datasets() if r.name == "car"]
    protocol = CrossValidation(folds=2, repeats=1, seed=3)
    cache = tmp_path / "cache"
    run_cells(refs, ["nb-m", "tan-m"], protocol, RunSettings(iterations=50), cache, jobs=1)
    out = tmp_path / "cells.csv.gz"
    assert experiments_main(["collect", str(cache), "--out", str(out)]) == 0
    cells = pd.read_csv(out)
    assert len(cells) == 4 and set(cells["classifier"]) == {"nb-m", "tan-m"}
    assert "4 cells (1 datasets, 2 classifiers)" in capsys.readouterr().out
    assert experiments_main(["collect", str(tmp_path / "none"), "--out", str(out)]) == 2


def test_quick_mode_does_not_point_at_the_folder_it_removes(capsys):
    """Without --out or --keep, --quick's folder is temporary: the last line says so instead of
    naming a folder that no longer exists."""
    main(["--quick", "--jobs", "1", "--quiet", "--datasets", "car", "--classifiers", "nb-m"])
    err = capsys.readouterr().err
    assert "removed now (--out DIR or --keep keeps them)" in err
    assert "results in " not in err and "hdpbn-quick-" not in err
