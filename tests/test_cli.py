"""The hdpbn command line: fit -> predict round trip, evaluate --json, errors."""

import gzip
import io
import json
import subprocess
import sys
import time
import warnings

import numpy as np
import pandas as pd
import pytest

from fastpath import BayesNetClassifier, ESKDBClassifier
from fastpath.cli import main
from fastpath.io import load_dataset


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
    assert main(["fit", "--structure", "kdb",
                 str(credit_csv), "--model", str(streamed), "--chunksize", "100",
                 "--quiet"]) == 0
    assert main(["fit", "--structure", "kdb",
                 str(credit_csv), "--model", str(in_memory), "--quiet"]) == 0
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
    out = capsys.readouterr().out
    assert "learning-curves" in out
    # the usage names the command that was typed, not the module behind it
    assert out.startswith("usage: hdpbn experiments") and "python -m" not in out.split("\n")[0]
    with pytest.raises(SystemExit):
        main(["experiments", "learning-curves", "--help"])
    assert capsys.readouterr().out.startswith("usage: hdpbn experiments learning-curves")


def test_fit_and_evaluate_accept_a_bundled_dataset_name(credit_csv, tmp_path, capsys,
                                                        monkeypatch):
    monkeypatch.chdir(tmp_path)  # no file named credit-a here
    argv = ["--structure", "nb", "--folds", "2", "--repeats", "1", "--json", "--quiet"]
    assert main(["evaluate", "credit-a", *argv]) == 0
    by_name = json.loads(capsys.readouterr().out)
    assert main(["evaluate", str(credit_csv), *argv]) == 0
    by_file = json.loads(capsys.readouterr().out)
    for key in ("zero_one_loss", "rmse", "log_loss"):
        assert by_name[key] == by_file[key]
    model = tmp_path / "m.npz"
    assert main(["fit", "credit-a", "--structure", "nb", "--model", str(model), "--quiet"]) == 0
    X, _ = load_dataset("credit-a")
    assert list(BayesNetClassifier.load(model).feature_names_in_) == list(X.columns)
    assert main(["fit", "--structure", "kdb",
                 "credit-a", "--model", str(tmp_path / "s.npz"), "--chunksize", "200",
                 "--quiet"]) == 0
    # a file of that name comes first (here: one without a known extension); an unknown name
    # is still a missing file
    capsys.readouterr()
    (tmp_path / "credit-a").write_text("a,class\nx,1\ny,2\n")
    assert main(["fit", "--structure", "kdb", "credit-a", "--model", str(model), "--quiet"]) == 2
    assert "unsupported file type for 'credit-a'" in capsys.readouterr().err
    assert main(["evaluate", "mushroom"]) == 2
    assert "no such file" in capsys.readouterr().err


@pytest.mark.parametrize("cmd", ["fit", "evaluate"])
def test_help_says_bundled_names_are_accepted(cmd, capsys):
    with pytest.raises(SystemExit):
        main([cmd, "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "bundled dataset" in out and "kr-vs-kp" in out


def test_fit_passes_the_concentration_schedule(credit_csv, tmp_path, capsys):
    model = tmp_path / "every1.npz"
    assert main(["fit", str(credit_csv), "--structure", "nb", "--estimation", "hdp",
                 "--iterations", "300", "--concentration-every", "1", "--model", str(model),
                 "--quiet"]) == 0
    assert BayesNetClassifier.load(model).hdp_options().concentration_every == 1
    assert main(["evaluate", str(credit_csv), "--estimation", "hdp",
                 "--concentration-every", "0"]) == 2
    assert "concentration_every" in capsys.readouterr().err


def test_fit_passes_overrelax(credit_csv, tmp_path):
    model = tmp_path / "or.npz"
    assert main(["fit", str(credit_csv), "--structure", "nb", "--estimation", "hdp",
                 "--iterations", "300", "--overrelax", "--model", str(model), "--quiet"]) == 0
    assert BayesNetClassifier.load(model).hdp_options().overrelax is True


def test_fit_passes_the_sampler_preset(credit_csv, tmp_path):
    model = tmp_path / "strict.npz"
    assert main(["fit", str(credit_csv), "--structure", "nb", "--estimation", "hdp",
                 "--sampler", "strict", "--model", str(model), "--quiet"]) == 0
    loaded = BayesNetClassifier.load(model)
    assert loaded.get_params()["sampler"] == "strict"  # a preset's name: no option changed
    assert loaded.hdp_options().adaptive and loaded.hdp_options().convergence_checks
    # the ensemble takes the same presets and options
    ens = tmp_path / "e.npz"
    assert main(["fit", str(credit_csv), "--structure", "eskdb", "--n-estimators", "2",
                 "--sampler", "paper", "--iterations", "200", "--model", str(ens),
                 "--quiet"]) == 0
    loaded = ESKDBClassifier.load(ens)
    # the options the keywords gave: the paper's, 200 iterations, the ensemble's tolerance
    assert loaded.sampler == ESKDBClassifier(2, sampler="paper").hdp_options().replace(
        n_iter=200)


def test_the_defaults_are_hdp_with_the_adaptive_sampler(credit_csv, tmp_path):
    model = tmp_path / "default.npz"
    assert main(["fit", str(credit_csv), "--structure", "nb", "--model", str(model),
                 "--quiet"]) == 0
    params = BayesNetClassifier.load(model).get_params()
    assert (params["estimation"], params["sampler"]) == ("hdp", "adaptive")


def test_the_unconverged_warning_names_the_flags_not_python_parameters(credit_csv, tmp_path,
                                                                         capsys):
    assert main(["fit", str(credit_csv), "--structure", "nb", "--mcse-tolerance", "0.0003",
                 "--min-iter", "200", "--max-iter", "200",
                 "--model", str(tmp_path / "m.npz")]) == 0
    [warning] = [line for line in capsys.readouterr().err.splitlines()
                 if line.startswith("hdpbn fit: warning:")]
    assert "not certified" in warning and "--max-iter " in warning
    assert "--mcse-tolerance " in warning and "hdpbn diagnose MODEL" in warning
    assert "max_iter=" not in warning and "diagnostics_" not in warning


# ---------------------------------------------------------------------- issue 17: clean failures
def _hdpbn(*argv: str, **kw) -> subprocess.Popen:
    """``hdpbn ARGV`` in a fresh interpreter (what the ``hdpbn`` entry point runs)."""
    script = "import sys; from fastpath.cli._main import main; sys.exit(main())"
    return subprocess.Popen([sys.executable, "-c", script, *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def assert_quiet_broken_pipe(proc: subprocess.Popen, read_first_line: bool) -> None:
    """Close the reading end of ``proc``'s stdout (after one line, or at once) and check that
    the command ends quietly: exit 0 or 141 (128 + SIGPIPE), no traceback, no
    'Exception ignored' message."""
    if read_first_line:
        assert proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.stderr.close()
    rc = proc.wait(timeout=120)
    assert rc in (0, 141), (rc, err)
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert "BrokenPipe" not in err, err


def test_broken_pipe_ends_quietly(credit_csv, tmp_path):
    # hdpbn predict ... | head -1, with more output than a pipe holds
    model = tmp_path / "m.npz"
    assert main(["fit", str(credit_csv), "--structure", "nb", "--model", str(model),
                 "--quiet"]) == 0
    big = tmp_path / "big.csv"
    frame = pd.read_csv(credit_csv)
    pd.concat([frame] * 30, ignore_index=True).to_csv(big, index=False)
    assert_quiet_broken_pipe(_hdpbn("predict", str(big), "--model", str(model)), True)
    # the reader is gone before anything is printed: the error comes at the last flush
    assert_quiet_broken_pipe(_hdpbn("evaluate", str(credit_csv), "--structure", "nb",
                                    "--folds", "2", "--repeats", "1", "--json"), False)


@pytest.mark.parametrize("make", ["not-gzip", "truncated", "corrupt"])
def test_unreadable_compressed_table_is_an_error_naming_it(credit_csv, tmp_path, capsys, make):
    raw = gzip.compress(credit_csv.read_bytes())
    bad = tmp_path / "bad.csv.gz"
    if make == "not-gzip":
        bad.write_bytes(credit_csv.read_bytes())
    elif make == "truncated":
        bad.write_bytes(raw[: len(raw) // 2])
    else:
        damaged = bytearray(raw)
        for i in range(len(raw) // 2, len(raw) // 2 + 64):
            damaged[i] ^= 0xFF
        bad.write_bytes(bytes(damaged))
    model = tmp_path / "m.npz"
    assert main(["fit", "--structure", "kdb",
                 str(credit_csv), "--model", str(model), "--quiet"]) == 0
    for argv in (["fit", "--structure", "kdb", str(bad), "--model", str(tmp_path / "x.npz")],
                 ["fit", "--structure", "kdb",
                  str(bad), "--model", str(tmp_path / "x.npz"), "--chunksize", "100"],
                 ["predict", str(bad), "--model", str(model)],
                 ["evaluate", str(bad)]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith(f"hdpbn {argv[0]}: error: {str(bad)!r}"), err
        assert "gzip" in err


def test_output_paths_are_checked_before_the_work(credit_csv, tmp_path, capsys, monkeypatch):
    def no_fit(*args, **kwargs):
        raise AssertionError("the fit ran before the output path was checked")

    monkeypatch.setattr(BayesNetClassifier, "fit", no_fit)
    missing = tmp_path / "no-such-folder" / "m.npz"
    t0 = time.perf_counter()
    assert main(["fit", "--structure", "kdb",
                 str(credit_csv), "--model", str(missing), "--estimation", "hdp",
                 "--quiet"]) == 2
    assert time.perf_counter() - t0 < 1.0
    err = capsys.readouterr().err
    assert err.startswith("hdpbn fit: error: --model") and str(missing.parent) in err
    a_file = tmp_path / "plain"
    a_file.write_text("x")
    assert main(["fit", "--structure", "kdb",
                 str(credit_csv), "--model", str(a_file / "m.npz")]) == 2
    err = capsys.readouterr().err
    assert "--model" in err and "not a folder" in err
    assert main(["fit", "--structure", "kdb", str(credit_csv), "--model", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err
    monkeypatch.undo()
    model = tmp_path / "m.npz"
    assert main(["fit", "--structure", "kdb",
                 str(credit_csv), "--model", str(model), "--quiet"]) == 0
    out = tmp_path / "nope" / "p.csv"
    assert main(["predict", str(credit_csv), "--model", str(model), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hdpbn predict: error: --out") and str(out.parent) in err


@pytest.mark.parametrize("damage", ["truncated", "corrupt", "foreign", "garbage", "pickled"])
def test_damaged_model_files_are_errors_naming_them(credit_csv, tmp_path, capsys, damage):
    good = tmp_path / "good.npz"
    assert main(["fit", "--structure", "kdb",
                 str(credit_csv), "--estimation", "m", "--model", str(good),
                 "--quiet"]) == 0
    raw = good.read_bytes()
    bad = tmp_path / f"{damage}.npz"
    if damage == "truncated":
        bad.write_bytes(raw[: len(raw) // 2])
    elif damage == "corrupt":
        damaged = bytearray(raw)
        for i in range(len(raw) // 2, len(raw) // 2 + 200):
            damaged[i] ^= 0xFF
        bad.write_bytes(bytes(damaged))
    elif damage == "foreign":
        np.savez(bad, x=np.arange(3))
    elif damage == "garbage":
        bad.write_bytes(np.random.default_rng(0).bytes(5000))
    else:
        with open(bad, "wb") as fh:
            np.save(fh, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    for argv in (["predict", str(credit_csv), "--model", str(bad)], ["diagnose", str(bad)]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith(f"hdpbn {argv[0]}: error: {str(bad)!r}"), err
        assert "pickl" not in err.replace(str(bad), "").lower() and "Traceback" not in err


def test_threads_and_seed_flags(credit_csv, tmp_path, capsys):
    model = tmp_path / "m.npz"
    assert main(["fit", str(credit_csv), "--structure", "nb", "--threads", "2",
                 "--model", str(model), "--quiet"]) == 0
    assert BayesNetClassifier.load(model).get_params()["n_jobs"] == 2
    assert main(["fit", str(credit_csv), "--structure", "nb", "--threads", "-1",
                 "--model", str(model), "--quiet"]) == 0
    assert BayesNetClassifier.load(model).get_params()["n_jobs"] == -1
    assert main(["evaluate", str(credit_csv), "--structure", "nb", "--threads", "1",
                 "--folds", "2", "--repeats", "1", "--json"]) == 0
    capsys.readouterr()
    for cmd in ("fit", "evaluate"):
        extra = ["--model", str(model)] if cmd == "fit" else []
        assert main([cmd, str(credit_csv), "--seed", "-1", *extra]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"hdpbn {cmd}: error: --seed"), err
        assert "random_state" not in err
        assert main([cmd, str(credit_csv), "--threads", "0", *extra]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"hdpbn {cmd}: error: --threads"), err
        assert "n_jobs" not in err


def test_warnings_are_one_line_naming_the_command(credit_csv, tmp_path):
    # two short chains, asked for more precision than they have: the fit warns
    proc = _hdpbn("fit", str(credit_csv), "--structure", "nb", "--estimation", "hdp",
                  "--chains", "2", "--iterations", "40", "--mcse-tolerance", "0.0001",
                  "--model", str(tmp_path / "h.npz"))
    _, err = proc.communicate(timeout=120)
    err = err.decode()
    assert proc.returncode == 0, err
    # the warnings come before the closing "fitted ..." report
    lines = err[: err.index("fitted ")].splitlines()
    assert lines and all(line.startswith("hdpbn fit: warning: ") for line in lines), err
    assert "not certified" in err and "model.fit" not in err and ".py:" not in err


def test_warning_display_is_restored_after_main(credit_csv, tmp_path, capsys):
    before = warnings.showwarning
    assert main(["fit", str(credit_csv), "--structure", "nb", "--estimation", "hdp",
                 "--chains", "2", "--iterations", "40", "--mcse-tolerance", "0.0001",
                 "--model", str(tmp_path / "h.npz")]) == 0
    assert warnings.showwarning is before
    assert "hdpbn fit: warning: " in capsys.readouterr().err


# ---------------------------------------------------------------------- ensembles
def test_eskdb_fit_predict_diagnose_and_evaluate(credit_csv, tmp_path, capsys):
    from fastpath import ESKDBClassifier

    model = tmp_path / "e.npz"
    args = ["--structure", "eskdb", "--n-estimators", "3", "--estimation", "hdp",
            "--iterations", "100", "--seed", "5"]
    assert main(["fit", str(credit_csv), "--model", str(model), *args, "--quiet"]) == 0
    loaded = ESKDBClassifier.load(model)
    assert (loaded.n_estimators, loaded.k, loaded.discretization) == (3, 5, "mixed")
    capsys.readouterr()
    assert main(["predict", "--model", str(model), str(credit_csv)]) == 0
    out = pd.read_csv(io.StringIO(capsys.readouterr().out))
    X, _ = load_dataset("credit-a")
    np.testing.assert_allclose(out.filter(like="p_").to_numpy(), loaded.predict_proba(X))
    status = main(["diagnose", str(model)])
    assert status in (0, 1) and "stored in the model file" in capsys.readouterr().out
    status = main(["diagnose", str(model), "--rerun"])  # the members' distinct trees again
    assert status in (0, 1) and "re-sampled with the model's settings" in capsys.readouterr().out
    assert main(["evaluate", str(credit_csv), "--structure", "eskdb", "--n-estimators", "2",
                 "--discretization", "mdl", "--folds", "2", "--repeats", "1", "--json"]) == 0
    assert 0 <= json.loads(capsys.readouterr().out)["rmse"]["mean"] <= 1


def test_eskdb_out_of_core_equals_in_memory(credit_csv, tmp_path):
    args = ["fit", str(credit_csv), "--structure", "eskdb", "--n-estimators", "3", "--quiet"]
    assert main([*args, "--chunksize", "100", "--model", str(tmp_path / "s.npz")]) == 0
    assert main([*args, "--model", str(tmp_path / "m.npz")]) == 0
    X = pd.read_csv(credit_csv).drop(columns="class")
    streamed = ESKDBClassifier.load(tmp_path / "s.npz").predict_proba(X)
    np.testing.assert_array_equal(streamed,
                                  ESKDBClassifier.load(tmp_path / "m.npz").predict_proba(X))


# ---------------------------------------------------------------------- issue 15: --m-backoff
def test_m_backoff_flag_reaches_fit_and_evaluate(credit_csv, tmp_path, capsys):
    model = tmp_path / "value.npz"
    assert main(["fit", str(credit_csv), "--structure", "tan", "--m-backoff", "value",
                 "--model", str(model), "--seed", "1", "--quiet"]) == 0
    loaded = BayesNetClassifier.load(model)
    assert loaded.get_params()["m_backoff"] == "value"
    frame = pd.read_csv(credit_csv)
    clf = BayesNetClassifier(structure="tan", m_backoff="value", random_state=1).fit(
        frame.drop(columns="class"), frame["class"]
    )
    np.testing.assert_allclose(loaded.predict_proba(frame.drop(columns="class")),
                               clf.predict_proba(frame.drop(columns="class")))
    default = tmp_path / "path.npz"
    assert main(["fit", str(credit_csv), "--structure", "nb", "--model", str(default),
                 "--quiet"]) == 0
    assert BayesNetClassifier.load(default).get_params()["m_backoff"] == "path"
    assert main(["evaluate", str(credit_csv), "--structure", "nb", "--m-backoff", "value",
                 "--folds", "2", "--json"]) == 0
    assert 0 <= json.loads(capsys.readouterr().out)["rmse"]["mean"] <= 1
    with pytest.raises(SystemExit) as exc:
        main(["evaluate", str(credit_csv), "--m-backoff", "literal"])
    assert exc.value.code == 2
    assert "--m-backoff" in capsys.readouterr().err


@pytest.mark.parametrize("target", [None, "class"])
def test_fit_reads_the_target_as_labels_not_by_the_numeric_rule(tmp_path, target):
    # classes 1, 2, 3, 5 and U (under 5 % of rows, as in anneal): five classes, U is no NaN
    rows = ["x,class"] + [f"{'abc'[i % 3]},{'1235'[i % 4]}" for i in range(60)] + ["a,U", "b,U"]
    data = tmp_path / "anneal_like.csv"
    data.write_text("\n".join(rows) + "\n")
    model = tmp_path / "m.npz"
    args = ["fit", str(data), "--structure", "nb", "--model", str(model), "--quiet"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert main(args + ([] if target is None else ["--target", target])) == 0
    out = tmp_path / "pred.csv"
    assert main(["predict", "--model", str(model), str(data), "--out", str(out)]) == 0
    assert [c for c in pd.read_csv(out).columns if c.startswith("p_")] == [
        "p_1", "p_2", "p_3", "p_5", "p_U"]


def test_fit_and_evaluate_print_convergence_warnings_on_stderr(credit_csv, tmp_path, capsys):
    hdp = ["--structure", "kdb", "--k", "2", "--sampler", "paper", "--iterations", "200",
           "--mcse-tolerance", "0.0003"]
    assert main(["fit", str(credit_csv), "--model", str(tmp_path / "m.npz"), *hdp]) == 0
    err = capsys.readouterr().err
    assert "hdpbn fit: warning: the HDP estimates of" in err and "not certified" in err
    assert "one chain" in err and "--iterations " in err and "Traceback" not in err
    assert main(["evaluate", str(credit_csv), "--folds", "2", "--repeats", "1", "--quiet",
                 *hdp]) == 0
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if "not certified" in ln]
    assert len(lines) == 1 and "hdpbn evaluate: warning: in 2 of 2 folds" in lines[0]
    assert "--iterations " in lines[0] and "n_iter=" not in lines[0]


def test_fit_says_what_it_does_on_a_terminal_only(credit_csv, tmp_path, capsys, monkeypatch):
    args = ["fit", str(credit_csv), "--structure", "kdb", "--k", "2", "--estimation", "hdp",
            "--iterations", "100", "--model", str(tmp_path / "m.npz")]
    assert main(args) == 0  # stderr is not a terminal under pytest: no stage lines
    assert "learning the structure" not in capsys.readouterr().err
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main(args) == 0
    err = capsys.readouterr().err
    for stage in ("coding 690 rows", "learning the structure (kdb, k=2)", "counting",
                  "sampling 16 trees x 1 chain(s) x 100 iterations", "fitted"):
        assert stage in err
    assert BayesNetClassifier.load(tmp_path / "m.npz").get_params()["verbose"] == 0
    assert main([*args, "--quiet"]) == 0
    assert "learning the structure" not in capsys.readouterr().err


def test_demo_says_it_compiles_and_its_seconds_are_per_fold(capsys):
    assert main(["demo", "--dataset", "car", "--folds", "2", "--repeats", "1"]) == 0
    captured = capsys.readouterr()
    out = captured.out
    assert "compiling the numba kernels on first use" in out
    assert "fit s/fold" in out and "mean seconds per fold" in out
    # the product is in the table: the ensemble, with both estimation methods
    assert [line.split()[:2] for line in out.splitlines() if line.startswith("eskdb")] == [
        ["eskdb", "m"], ["eskdb", "hdp"]]
    assert "HDP: the adaptive sampler (500 to 5000 Gibbs iterations per tree" in out
    # the default sampler's estimates are certified: the demo does not warn
    assert "not certified" not in captured.err and "Warning" not in captured.err


# ------------------------------------------------------------- a new user's first day (#46)
def _stray_table(path, n=400, seed=0):
    """A numeric column with 5 % 'n/a' tokens, a nominal one, a class."""
    rng = np.random.default_rng(seed)
    income = rng.normal(50, 10, n).round(1).astype(object)
    income[rng.choice(n, n // 20, replace=False)] = "n/a"
    pd.DataFrame({"income": income, "a": rng.choice(list("xyz"), n),
                  "class": rng.choice(["p", "q"], n)}).to_csv(path, index=False)
    return path


@pytest.mark.parametrize("extra", [[], ["--categorical", "a"]])
def test_tokens_learned_at_a_cli_fit_are_missing_silently_at_prediction(tmp_path, capsys,
                                                                        extra):
    from fastpath.classifier import load_classifier

    data = _stray_table(tmp_path / "t.csv")
    model = tmp_path / "m.npz"
    assert main(["fit", "--structure", "kdb",
                 str(data), "--estimation", "m", "--model", str(model), *extra]) == 0
    err = capsys.readouterr().err
    assert err.count("warning:") == 1 and "'n/a'" in err  # the fit says it once
    fitted = load_classifier(model)
    coding = fitted.members_[0].encoder.codings_[0]
    assert coding.name == "income" and coding.missing_tokens == ("n/a",)
    assert any("'n/a'" in w for w in fitted.fit_warnings_)
    assert main(["predict", str(data), "--model", str(model), "--out",
                 str(tmp_path / "p.csv")]) == 0
    assert capsys.readouterr().err == ""
    # the model a Python user fits on the file's strings predicts the same
    frame = pd.read_csv(data, keep_default_na=False, na_values=[""])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = BayesNetClassifier(estimation="m", random_state=0).fit(
            frame.drop(columns="class"), frame["class"])
    np.testing.assert_allclose(pd.read_csv(tmp_path / "p.csv")[["p_p", "p_q"]].to_numpy(),
                               clf.predict_proba(frame.drop(columns="class")))


def test_predict_quiet_prints_no_warnings(tmp_path, capsys):
    data = _stray_table(tmp_path / "t.csv")
    frame = pd.read_csv(data, keep_default_na=False, na_values=[""])
    numbers = pd.to_numeric(frame["income"], errors="coerce")
    clf = BayesNetClassifier(estimation="m", random_state=0).fit(
        frame.drop(columns="class").assign(income=numbers), frame["class"])
    model = tmp_path / "m.npz"
    clf.save(model)  # fitted without the token: prediction meets it as new
    out = tmp_path / "p.csv"
    assert main(["predict", str(data), "--model", str(model), "--out", str(out)]) == 0
    assert "warning" in capsys.readouterr().err
    assert main(["predict", str(data), "--model", str(model), "--out", str(out),
                 "--quiet"]) == 0
    assert capsys.readouterr().err == ""
    assert len(pd.read_csv(out)) == len(frame)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_predict_on_a_header_only_table_writes_a_header_only_table(credit_csv, tmp_path,
                                                                   capsys, suffix):
    model = tmp_path / "m.npz"
    assert main(["fit", "--structure", "kdb",
                 str(credit_csv), "--estimation", "m", "--model", str(model),
                 "--quiet"]) == 0
    empty = pd.read_csv(credit_csv).iloc[:0].drop(columns="class")
    data = tmp_path / f"header{suffix}"
    if suffix == ".csv":
        empty.to_csv(data, index=False)
    else:
        empty.astype(str).to_parquet(data)
    capsys.readouterr()
    assert main(["predict", str(data), "--model", str(model), "--keep", "A1"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "A1,prediction,p_+,p_-\n" and captured.err == ""
    out = tmp_path / "p.csv"
    assert main(["predict", str(data), "--model", str(model), "--out", str(out)]) == 0
    assert out.read_text() == "prediction,p_+,p_-\n"


def test_a_wrong_separator_or_renamed_column_says_so_and_sep_reads_it(tmp_path, capsys):
    data = _stray_table(tmp_path / "t.csv")
    model = tmp_path / "m.npz"
    assert main(["fit", "--structure", "kdb",
                 str(data), "--estimation", "m", "--model", str(model), "--quiet"]) == 0
    frame = pd.read_csv(data, keep_default_na=False, na_values=[""])
    semi = tmp_path / "semi.csv"
    frame.to_csv(semi, sep=";", index=False)
    assert main(["predict", str(semi), "--model", str(model)]) == 2
    err = capsys.readouterr().err
    assert "';'-separated" in err and "--sep ';'" in err
    out = tmp_path / "p.csv"
    assert main(["predict", str(semi), "--model", str(model), "--sep", ";",
                 "--out", str(out)]) == 0
    assert main(["predict", str(data), "--model", str(model), "--out",
                 str(tmp_path / "q.csv")]) == 0
    assert out.read_bytes() == (tmp_path / "q.csv").read_bytes()
    # fit and evaluate read it too, a fit in chunks as well (issue 55, point 3)
    assert main(["fit", "--structure", "kdb",
                 str(semi), "--estimation", "m", "--model", str(tmp_path / "s.npz"),
                 "--sep", ";", "--quiet"]) == 0
    assert main(["evaluate", str(semi), "--estimation", "m", "--sep", ";", "--folds", "2",
                 "--repeats", "1", "--json"]) == 0
    capsys.readouterr()
    assert main(["fit", "--structure", "kdb",
                 str(semi), "--estimation", "m", "--model", str(tmp_path / "c.npz"),
                 "--sep", ";", "--chunksize", "100", "--quiet"]) == 0
    assert main(["predict", str(data), "--model", str(tmp_path / "c.npz"), "--out",
                 str(tmp_path / "c.csv")]) == 0
    assert (tmp_path / "c.csv").read_bytes() == (tmp_path / "q.csv").read_bytes()
    renamed = tmp_path / "renamed.csv"
    frame.rename(columns={"income": "Income"}).to_csv(renamed, index=False)
    assert main(["predict", str(renamed), "--model", str(model)]) == 2
    assert "'income' (it has 'Income')" in capsys.readouterr().err
    tab = tmp_path / "tab.csv"
    frame.to_csv(tab, sep="\t", index=False)
    assert main(["predict", str(tab), "--model", str(model), "--sep", "tab", "--out",
                 str(out)]) == 0
    assert out.read_bytes() == (tmp_path / "q.csv").read_bytes()


def test_fit_class_weight_flag_reaches_the_model(tmp_path, capsys):
    from fastpath.classifier import load_classifier

    data = _stray_table(tmp_path / "t.csv")
    for flag, expected in (("balanced", "balanced"), ("p:4,q:1", {"p": 4.0, "q": 1.0})):
        model = tmp_path / "m.npz"
        assert main(["fit", "--structure", "kdb",
                     str(data), "--estimation", "m", "--model", str(model), "--quiet",
                     "--class-weight", flag]) == 0
        assert load_classifier(model).class_weight == expected
    assert main(["fit", "--structure", "kdb",
                 str(data), "--model", str(tmp_path / "x.npz"), "--class-weight",
                 "p=4"]) == 2
    assert "--class-weight must be 'balanced' or CLASS:WEIGHT" in capsys.readouterr().err
    assert main(["fit", "--structure", "kdb",
                 str(data), "--model", str(tmp_path / "x.npz"), "--class-weight",
                 "r:2", "--estimation", "m"]) == 2
    assert "labels that are not classes: ['r']" in capsys.readouterr().err
    assert main(["fit", "--structure", "kdb",
                 str(data), "--model", str(tmp_path / "x.npz"), "--class-weight",
                 "p:-2"]) == 2
    assert "--class-weight['p'] must be a positive number" in capsys.readouterr().err


def test_fit_defaults_to_the_ensemble_and_the_single_model_is_one_flag_away(tmp_path, capsys):
    # issue 55, point 5: the README's accuracy is the ensemble's; hdpbn fit gave one kDB-1
    from fastpath.classifier import load_classifier

    rng = np.random.default_rng(0)
    n = 200
    data = tmp_path / "t.csv"
    pd.DataFrame({"a": rng.choice(list("xyz"), n), "b": rng.normal(size=n).round(3),
                  "y": rng.choice(["p", "q"], n), "z": rng.choice(["u", "v"], n)}).to_csv(
        data, index=False)
    assert main(["fit", str(data), "--target", "y", "--model", str(tmp_path / "e.npz")]) == 0
    assert "fitted ESKDBClassifier(" in capsys.readouterr().err
    ensemble = load_classifier(tmp_path / "e.npz")
    assert isinstance(ensemble, ESKDBClassifier)
    assert ensemble.get_params() == ESKDBClassifier(random_state=0).get_params()
    assert len(ensemble.members_) == ESKDBClassifier().n_estimators
    assert main(["fit", str(data), "--target", "y", "--structure", "kdb", "--estimation", "m",
                 "--model", str(tmp_path / "k.npz"), "--quiet"]) == 0
    assert type(load_classifier(tmp_path / "k.npz")) is BayesNetClassifier


def test_fit_counts_rows_and_attributes_the_same_way_twice(tmp_path, capsys, monkeypatch):
    # issue 55, point 4: "coding 14000 rows x 8 columns", then "on 14000 rows x 10 attributes"
    rng = np.random.default_rng(0)
    n = 300
    data = tmp_path / "t.csv"
    pd.DataFrame({"id": [f"c{i}" for i in range(n)], "a": rng.choice(list("xyz"), n),
                  "b": rng.normal(size=n).round(3), "y": rng.choice(["p", "q"], n)}).to_csv(
        data, index=False)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)  # stage lines
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["fit", "--structure", "kdb", "--estimation", "m", str(data),
                     "--model", str(tmp_path / "m.npz")]) == 0
    err = capsys.readouterr().err
    assert "coding 300 rows x 2 attributes" in err
    assert "on 300 rows x 2 attributes (1 of 3 columns left out: id)" in err
