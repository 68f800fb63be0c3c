"""Per-tree convergence diagnostics of HDP fits (fastpath.estimate._diagnostics).

* R-hat and ESS agree with ArviZ's (an independent implementation) on the same traces;
* a long run on a small tree is reported certified without a warning; a short run on a large
  sparse tree is reported uncertified when what its rows read is imprecise (or, under the strict
  rule, when its concentrations have not mixed), named among the worst trees, and warned
  about, with advice in the caller's parameters;
* the JSON round trip, input checks, and ``hdpbn diagnose`` on a saved model: the re-run with
  the model's seed reproduces the fit's diagnostics exactly; stored diagnostics are used as is.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import subprocess
import sys
import warnings
from contextlib import redirect_stdout

import numpy as np
import pytest

from fastpath.cli._diagnose import add_diagnose_parser, run_diagnose
from fastpath.counts import ContextTree
from fastpath.estimate import FitDiagnostics, UnconvergedWarning, summarise_fit
from fastpath.estimate._diagnostics import tree_label
from fastpath.estimate.hdp import HDPOptions, estimate_trees


def _worked_example() -> ContextTree:
    # paper, "Worked example", dataset 1: n(X1 | Y=0) = [2, 0], n(X1 | Y=1) = [20, 5]
    return ContextTree.from_leaf_counts([[0], [1]], [[2, 0], [20, 5]], [2], 2,
                                        child_name="X1", conditioning_names=["Y"])


def _big_sparse() -> ContextTree:
    rng = np.random.default_rng(5)
    cards = (3, 4, 4, 3)
    n = 3000
    paths = np.stack([rng.integers(0, c, n) for c in cards], axis=1)
    # child depends on the path: its categories concentrate differently per leaf
    child = (paths.sum(axis=1) + rng.integers(0, 2, n)) % 4
    counts = np.zeros((n, 4), dtype=np.int64)
    counts[np.arange(n), child] = 1
    return ContextTree.from_leaf_counts(paths, counts, cards, 4, child_name="C",
                                        conditioning_names=["y", "a", "b", "c"])


@pytest.fixture(scope="module")
def fits():
    good, bad = _worked_example(), _big_sparse()
    long = estimate_trees([good], HDPOptions.preset("paper", n_iter=6000, n_chains=4), seed=1)[0]
    # 5 batches of 50 iterations: short, yet long enough batches for an honest MCSE
    short = estimate_trees([bad], HDPOptions.preset("paper", n_iter=300, burn_in=50, thin=1,
                                                    n_chains=4,
                                             n_batches=5), seed=2)[0]
    return long, short


def test_rhat_and_ess_match_arviz(fits):
    az = pytest.importorskip("arviz")
    for res in fits:
        diag = summarise_fit([res]).trees[0]
        kept = res.trace.kept
        series = [res.trace.concentrations[:, kept, g] for g in range(res.n_groups)]
        series.append(res.trace.log_joint[:, kept])
        for x, r, e in zip(series, diag.rhat, diag.ess_bulk, strict=True):
            assert r == pytest.approx(float(az.rhat(x, chain_axis=0, draw_axis=1)), abs=2e-3)
            assert e == pytest.approx(
                float(az.ess(x, method="bulk", chain_axis=0, draw_axis=1)), rel=0.02)


def test_converged_fit_gives_no_warning(fits):
    long, _ = fits
    diag = summarise_fit([long], ["worked example"])
    assert diag.converged
    assert diag.max_rhat <= 1.01
    assert diag.min_ess >= 400
    assert diag.ess_min == 400  # 100 per chain, 4 chains
    assert diag.trees[0].variables == ("alpha[depth1]", "log_joint")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert diag.warn_if_unconverged() is False
    assert "every tree's estimates are certified" in diag.summary()


def _with_options(res, **changes):
    """The same chains judged under other options (only the diagnostics read them)."""
    import dataclasses

    return dataclasses.replace(res, options=res.options.replace(**changes))


def test_unconverged_fit_is_flagged_and_warned(fits):
    long, short = fits
    # what the rows read is precise to 0.01 after 300 iterations: nothing to say by default,
    # though the concentrations have not mixed
    default = summarise_fit([long, short])
    assert default.converged and default.max_rhat > 1.01
    # asked for a precision the run does not have
    tight = summarise_fit([long, _with_options(short, mcse_tolerance=1e-5)])
    assert not tight.converged
    bad = tight.unconverged()
    assert [t.index for t in bad] == [1]
    assert tight.worst(1)[0].name == "P(C | y, a, b, c)"
    assert "MCSE of what the rows read" in bad[0].problems(tight.rhat_max, tight.ess_min)[0]
    with pytest.warns(UnconvergedWarning,
                      match=r"1 of 2 trees .*: P\(C \| y, a, b, c\) .*n_iter=\d+"):
        assert tight.warn_if_unconverged() is True
    assert issubclass(UnconvergedWarning, UserWarning)
    text = tight.summary()
    assert "1 tree(s) not certified" in text and "P(C | y, a, b, c)" in text
    # the strict rule also asks the concentrations and the log joint to have mixed
    strict = summarise_fit([long, _with_options(short, convergence_checks=True)])
    problems = strict.unconverged()[0].problems(strict.rhat_max, strict.ess_min)
    assert any("R-hat" in p for p in problems)


@pytest.mark.parametrize("changes, deferred", [
    ({}, True),  # certified by the MCSE, no R-hat/ESS condition: computed when read
    ({"mcse_tolerance": 1e-5}, False),  # an MCSE above the tolerance: the fit warns now
    ({"convergence_checks": True}, False),  # the strict rule judges R-hat and ESS: now
])
def test_a_certified_fit_computes_its_statistics_when_they_are_first_read(fits, changes,
                                                                          deferred):
    import pickle

    long, short = fits
    results = [long, _with_options(short, **changes)]
    eager = summarise_fit(results, ["a", "b"])
    lazy = summarise_fit(results, ["a", "b"], deferred=True)
    assert ("trees" not in lazy.__dict__) is deferred
    # nothing read yet: what the fit asks (the warning) is answered as the eager summary does
    assert lazy.unconverged() == eager.unconverged()
    assert ("trees" not in lazy.__dict__) is deferred
    said = []
    for summary in (lazy, eager):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            summary.warn_if_unconverged()
        said.append([str(w.message) for w in caught])
    assert said[0] == said[1] and bool(said[0]) is not deferred
    # read, or written, it is the eager summary's
    copy = pickle.loads(pickle.dumps(lazy))
    assert lazy == eager and lazy.to_dict() == eager.to_dict()
    assert copy == eager and copy.summary() == eager.summary()
    assert "trees" in lazy.__dict__ and "_build" not in lazy.__dict__
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = lazy.nothing


def test_frame_and_json_round_trip(fits):
    diag = summarise_fit(list(fits), ["a", "b"])
    frame = diag.to_frame()
    assert list(frame.columns) == ["tree", "name", "variable", "mean", "rhat", "ess_bulk",
                                   "iterations", "stop_reason", "rows_mcse", "rows_rhat"]
    assert len(frame) == sum(len(t.variables) for t in diag.trees)
    text = json.dumps(diag.to_dict())  # NaN-free JSON
    back = FitDiagnostics.from_dict(json.loads(text))
    assert back.to_dict() == diag.to_dict()
    assert back.unconverged() == diag.unconverged() == []


def test_fixed_concentrations_and_constant_traces():
    # every count <= 1: no table count is ever sampled, so the log joint never moves
    tree = ContextTree.from_leaf_counts([[0], [1]], [[1, 0], [0, 1]], [2], 2)
    res = estimate_trees([tree], HDPOptions.preset("paper", n_iter=1000, n_chains=2,
                                                   fix_concentrations=True),
                         seed=0)[0]
    diag = summarise_fit([res])
    assert diag.trees[0].variables == ("log_joint",)
    assert math.isnan(diag.trees[0].max_rhat)
    assert diag.converged
    assert "no sampled concentration or log joint moves" in diag.summary()


def test_single_chain_note():
    res = estimate_trees([_worked_example()], HDPOptions.preset("paper", n_iter=2000), seed=0)[0]
    assert "one chain" in summarise_fit([res]).summary()


def test_bad_input(fits):
    with pytest.raises(ValueError, match="tree_names"):
        summarise_fit(list(fits), ["only one"])
    with pytest.raises(TypeError, match="HDPResult"):
        summarise_fit([object()])
    with pytest.raises(ValueError, match="rhat_max"):
        summarise_fit(list(fits), rhat_max=1.0)
    assert tree_label(ContextTree.from_leaf_counts([[0]], [[1, 1]], [2], 2), 3) == "tree3"


# ---------------------------------------------------------------------------- hdpbn diagnose
def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hdpbn")
    add_diagnose_parser(p.add_subparsers(dest="command"))
    return p


def _diagnose(argv) -> tuple[int, str]:
    args = _parser().parse_args(["diagnose", *argv])
    assert args.func is run_diagnose
    buf = io.StringIO()
    with redirect_stdout(buf):
        code = args.func(args)
    return code, buf.getvalue()


@pytest.fixture(scope="module")
def saved_model(tmp_path_factory):
    from fastpath import BayesNetClassifier
    from fastpath.io import load_dataset

    X, y = load_dataset("car")
    clf = BayesNetClassifier(structure="tan", estimation="hdp",
                             sampler=HDPOptions.preset("adaptive", n_iter=600, n_chains=2),
                             random_state=7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(X, y)
    path = tmp_path_factory.mktemp("diag") / "car.npz"
    clf.save(path)
    return clf, path


def test_diagnose_reruns_with_the_models_seed(saved_model):
    clf, path = saved_model
    expected = summarise_fit(clf.hdp_results_,
                             [tree_label(t, i) for i, t in enumerate(clf.trees_)])
    # fit-time diagnostics are stored in the model file; --rerun re-samples with the seed
    code, out = _diagnose([str(path), "--json"])
    assert json.loads(out)["trees"] == expected.to_dict()["trees"]
    code, out = _diagnose([str(path), "--json", "--rerun"])
    got = json.loads(out)
    assert "seed 7" in got["source"]
    assert got["trees"] == expected.to_dict()["trees"]  # bit-identical re-run
    assert code == (0 if expected.converged else 1)
    code, out = _diagnose([str(path), "--top", "2"])
    assert expected.worst(1)[0].name in out


def test_diagnose_uses_stored_diagnostics(saved_model, tmp_path):
    _, path = saved_model
    with np.load(path, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    meta = json.loads(bytes(arrays["meta"]).decode())
    tree = ContextTree.from_leaf_counts([[0]], [[3, 1]], [2], 2, child_name="Q",
                                        conditioning_names=["class"])
    res = estimate_trees([tree], HDPOptions.preset("paper", n_iter=800, n_chains=2), seed=0)[0]
    stored = summarise_fit([res])
    meta["diagnostics"] = stored.to_dict()
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    other = tmp_path / "stored.npz"
    np.savez_compressed(other, **arrays)
    code, out = _diagnose([str(other), "--all"])
    assert "stored in the model file" in out and "P(Q | class)" in out
    assert code == (0 if stored.converged else 1)
    # --rerun ignores them
    _, out = _diagnose([str(other), "--rerun", "--json"])
    assert "re-sampled" in json.loads(out)["source"]


def test_diagnose_errors(tmp_path):
    from fastpath import BayesNetClassifier
    from fastpath.io import load_dataset

    with pytest.raises(FileNotFoundError):
        _diagnose([str(tmp_path / "missing.npz")])
    X, y = load_dataset("car")
    path = tmp_path / "m.npz"
    BayesNetClassifier(structure="nb", estimation="m", m=1.0).fit(X, y).save(path)
    with pytest.raises(ValueError, match="only HDP fits"):
        _diagnose([str(path)])
    np.savez(tmp_path / "junk.npz", x=np.zeros(2))
    with pytest.raises(ValueError, match="not an hdpbn model"):
        _diagnose([str(tmp_path / "junk.npz")])


def test_diagnose_broken_pipe_ends_quietly(saved_model):
    # hdpbn diagnose MODEL | head -0: the reader is gone before anything is printed
    _, path = saved_model
    script = "import sys; from fastpath.cli._main import main; sys.exit(main())"
    proc = subprocess.Popen([sys.executable, "-c", script, "diagnose", str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=120) in (0, 141), err
    assert "Traceback" not in err and "Exception ignored" not in err and "BrokenPipe" not in err


def test_unmixed_concentrations_alone_do_not_warn_but_are_reported():
    # the README's credit-a kDB-2 example with 1,000 iterations of the paper's sampler: the
    # concentrations have not mixed, yet what the rows read is precise -- reported, not warned
    # about; the strict rule warns, naming a tree and its own remedy
    from fastpath import BayesNetClassifier
    from fastpath.io import load_dataset

    X, y = load_dataset("credit-a")
    clf = BayesNetClassifier("kdb", 2,
                             sampler=HDPOptions.preset("paper", n_iter=1000), random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnconvergedWarning)
        clf.fit(X, y)
    assert clf.diagnostics_.converged and clf.diagnostics_.max_rhat > 1.01
    assert "reported; not a condition" in clf.diagnostics_.summary()
    strict = BayesNetClassifier("kdb", 2,
                                sampler=HDPOptions.preset("strict", max_iter=600), random_state=0)
    with pytest.warns(UnconvergedWarning, match=r"one chain\): P\(.*max_iter="):
        strict.fit(X, y)


def test_a_fixed_run_too_short_to_certify_says_so_and_how_long_is_enough():
    from fastpath import BayesNetClassifier
    from fastpath.io import load_dataset

    X, y = load_dataset("car")
    # 300 iterations: batches of 10 iterations, too short for an honest MCSE
    with pytest.warns(UnconvergedWarning,
                      match=r"too short to certify.*n_iter='auto'.*n_iter=1000"):
        BayesNetClassifier("nb",
                           sampler=HDPOptions.preset("paper", n_iter=300), random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnconvergedWarning)
        BayesNetClassifier("nb",
                           sampler=HDPOptions.preset("paper", n_iter=1000),
                           random_state=0).fit(X, y)


def test_the_largest_mcse_is_numpys_nanmax_over_finite_trees():
    from fastpath.estimate._diagnostics import _finite_max

    rng = np.random.default_rng(0)
    for _ in range(500):
        a = rng.normal(size=(int(rng.integers(0, 6)), int(rng.integers(1, 4))))
        for _ in range(int(rng.integers(0, 4))):
            if a.size:
                a.flat[rng.integers(0, a.size)] = rng.choice([np.nan, np.inf, -np.inf])
        want = float(np.nanmax(a)) if a.size and np.isfinite(a).any() else math.nan
        got = float(_finite_max(a))
        assert got == want or (math.isnan(got) and math.isnan(want))
