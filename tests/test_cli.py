"""The hdpbn command line: fit -> predict round trip, evaluate --json, errors."""

import json

import numpy as np
import pandas as pd
import pytest

from fastpath import BayesNetClassifier
from fastpath.cli.main import main
from fastpath.io.datasets import load_dataset


@pytest.fixture
def credit_csv(tmp_path):
    X, y = load_dataset("credit-a")
    path = tmp_path / "credit.csv"
    X.assign(**{"class": y}).to_csv(path, index=False)
    return path


def test_help_explains_every_subcommand(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for cmd in ("fit", "predict", "evaluate", "demo"):
        assert cmd in out


def test_fit_predict_round_trip(credit_csv, tmp_path, capsys):
    model = tmp_path / "m.npz"
    out = tmp_path / "pred.csv"
    assert main(["fit", str(credit_csv), "--structure", "tan", "--model", str(model),
                 "--seed", "1", "--quiet"]) == 0
    assert main(["predict", "--model", str(model), str(credit_csv), "--out", str(out)]) == 0
    pred = pd.read_csv(out)
    assert list(pred.columns) == ["prediction", "p_+", "p_-"]
    np.testing.assert_allclose(pred[["p_+", "p_-"]].sum(axis=1), 1.0)
    # the same model fitted in Python gives the same probabilities
    frame = pd.read_csv(credit_csv)
    clf = BayesNetClassifier(structure="tan", random_state=1).fit(
        frame.drop(columns="class"), frame["class"]
    )
    np.testing.assert_allclose(pred["p_+"], clf.predict_proba(frame.drop(columns="class"))[:, 0])


def test_evaluate_json(credit_csv, capsys):
    assert main(["evaluate", str(credit_csv), "--structure", "nb", "--folds", "2",
                 "--repeats", "2", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    for key in ("zero_one_loss", "rmse", "log_loss"):
        assert set(summary[key]) == {"mean", "sd"}
        assert 0 <= summary[key]["mean"]
    assert summary["zero_one_loss"]["mean"] < 0.3
    assert summary["fit_seconds"] > 0 and summary["predict_seconds"] > 0


def test_errors_are_reported_not_raised(credit_csv, capsys):
    assert main(["evaluate", str(credit_csv), "--target", "nope"]) == 2
    assert "target column 'nope'" in capsys.readouterr().err
    assert main(["evaluate", str(credit_csv) + ".missing"]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["evaluate", str(credit_csv), "--k", "-2", "--structure", "kdb"]) == 2
    assert "k must be" in capsys.readouterr().err


def test_fit_out_of_core_with_chunksize(credit_csv, tmp_path):
    streamed, in_memory = tmp_path / "s.npz", tmp_path / "m.npz"
    assert main(["fit", str(credit_csv), "--model", str(streamed), "--chunksize", "100",
                 "--quiet"]) == 0
    assert main(["fit", str(credit_csv), "--model", str(in_memory), "--quiet"]) == 0
    frame = pd.read_csv(credit_csv).drop(columns="class")
    a = BayesNetClassifier.load(streamed).predict_proba(frame)
    b = BayesNetClassifier.load(in_memory).predict_proba(frame)
    assert a.shape == b.shape
    np.testing.assert_allclose(a.sum(axis=1), 1.0)
    # nominal columns count identically; numeric cut points come from a sketch, so only close
    assert np.mean(np.argmax(a, axis=1) == np.argmax(b, axis=1)) > 0.9


def test_experiments_subcommand_hands_over_its_arguments(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["experiments", "--help"])
    assert exc.value.code == 0
    assert "learning-curves" in capsys.readouterr().out


def test_fit_passes_the_concentration_schedule(credit_csv, tmp_path, capsys):
    model = tmp_path / "every1.npz"
    assert main(["fit", str(credit_csv), "--structure", "nb", "--estimator", "hdp",
                 "--iterations", "300", "--concentration-every", "1", "--model", str(model),
                 "--quiet"]) == 0
    assert BayesNetClassifier.load(model).get_params()["concentration_every"] == 1
    assert main(["evaluate", str(credit_csv), "--estimator", "hdp",
                 "--concentration-every", "0"]) == 2
    assert "concentration_every" in capsys.readouterr().err


def test_fit_passes_overrelax(credit_csv, tmp_path):
    model = tmp_path / "or.npz"
    assert main(["fit", str(credit_csv), "--structure", "nb", "--estimator", "hdp",
                 "--iterations", "300", "--overrelax", "--model", str(model), "--quiet"]) == 0
    assert BayesNetClassifier.load(model).get_params()["overrelax"] is True
