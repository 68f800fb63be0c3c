"""``hdpbn estimate``: the command line of the HDP sampler."""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
from contextlib import redirect_stdout

import numpy as np
import pandas as pd
import pytest

from fastpath.cli._estimate import add_estimate_parser, run_estimate
from fastpath.estimate import tree_from_frame
from fastpath.estimate.hdp import HDPOptions, estimate_tree


def _parser():
    p = argparse.ArgumentParser(prog="hdpbn")
    sub = p.add_subparsers(dest="command")
    add_estimate_parser(sub)
    return p


def _run(argv):
    args = _parser().parse_args(["estimate", *argv])
    out = io.StringIO()
    with redirect_stdout(out):
        rc = args.func(args)
    return rc, out.getvalue()


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    rng = np.random.default_rng(0)
    n = 400
    y = rng.choice(["a", "b"], n)
    x1 = rng.integers(0, 3, n)
    child = np.where(rng.random(n) < 0.7, (x1 + (y == "b")) % 3, rng.integers(0, 3, n))
    frame = pd.DataFrame({"child": child, "y": y, "x1": x1})
    d = tmp_path_factory.mktemp("est")
    frame.to_csv(d / "t.csv", index=False)
    frame.to_csv(d / "t.csv.gz", index=False)
    frame.to_parquet(d / "t.parquet")
    return d, frame


def test_parser_wiring():
    args = _parser().parse_args(["estimate", "x.csv"])
    assert args.func is run_estimate
    assert (args.iterations, args.burn_in, args.tying, args.update, args.root, args.chains) == (
        None, None, "level", "exact", "exact", 1)
    assert args.overrelax is None and args.sampler is None  # the preset decides


def test_csv_output_matches_the_api(data):
    d, frame = data
    rc, out = _run([str(d / "t.csv"), "--iterations", "300", "--seed", "3", "--quiet"])
    assert rc == 0
    table = pd.read_csv(io.StringIO(out))
    coded = tree_from_frame(frame)
    res = estimate_tree(coded.tree, HDPOptions.preset("paper", n_iter=300), seed=3)
    assert list(table.columns) == ["depth", "y", "x1", "n", "p_0", "p_1", "p_2"]
    assert len(table) == coded.tree.n_nodes
    np.testing.assert_allclose(table[["p_0", "p_1", "p_2"]].to_numpy(), res.probabilities,
                               rtol=1e-12)
    np.testing.assert_array_equal(table["n"], coded.tree.counts.sum(axis=1))
    assert table.loc[0, "n"] == len(frame)
    assert table["y"].isna().iloc[0] and table.loc[table["depth"] == 2, "x1"].notna().all()


@pytest.mark.parametrize("name", ["t.csv.gz", "t.parquet"])
def test_other_formats(data, name):
    d, _ = data
    rc, out = _run([str(d / name), "--iterations", "100", "--quiet"])
    rc2, out2 = _run([str(d / "t.csv"), "--iterations", "100", "--quiet"])
    assert rc == rc2 == 0
    assert out == out2


@pytest.mark.parametrize("name", ["t.csv", "t.csv.gz", "t.parquet"])
def test_small_chunks_give_the_whole_tables_output(data, name):
    # 400 rows in chunks of 7, 64 and 400: the same codes, nodes and estimates (seed 5)
    d, _ = data
    outs = {_run([str(d / name), "--iterations", "100", "--seed", "5", "--chunksize", c,
                  "--quiet"]) for c in ("7", "64", "400")}
    assert outs == {_run([str(d / "t.csv"), "--iterations", "100", "--seed", "5", "--quiet"])}


def test_chains_add_mcse_and_json_summary(data, tmp_path):
    d, _ = data
    target = tmp_path / "out.csv"
    rc, out = _run([str(d / "t.csv"), "--iterations", "400", "--chains", "2", "--tying",
                    "same-parent", "--update", "window", "--root", "reference", "--out",
                    str(target), "--json", "--quiet"])
    assert rc == 0
    summary = json.loads(out)
    assert summary["nodes_per_depth"] == [1, 2, 6]
    assert summary["iterations"] == 400 and summary["burn_in"] == 40 and summary["chains"] == 2
    assert (summary["tying"], summary["update"], summary["root"]) == (
        "same-parent", "window", "reference")
    assert summary["seconds_sampling"] > 0
    assert summary["sampler"] == "paper"
    assert set(summary["rhat_concentrations"]) == {"alpha[children_of0]", "alpha[children_of1]",
                                                   "alpha[children_of2]"}
    table = pd.read_csv(target)
    assert [c for c in table.columns if c.startswith("mcse_")] == ["mcse_0", "mcse_1", "mcse_2"]
    assert (table[["mcse_0", "mcse_1", "mcse_2"]] >= 0).all().all()


def test_sampler_flag_and_adaptive_length(data):
    d, _ = data
    rc, out = _run([str(d / "t.csv"), "--sampler", "strict", "--json", "--quiet", "--seed", "1"])
    assert rc == 0
    fast = json.loads(out)
    assert fast["sampler"] == "strict" and fast["stop_reason"] in ("tolerance", "max_iter")
    assert 500 <= fast["iterations"] <= 5000
    rc, out = _run([str(d / "t.csv"), "--sampler", "paper", "--iterations", "200", "--json",
                    "--quiet"])
    paper = json.loads(out)
    assert (paper["sampler"], paper["iterations"], paper["stop_reason"]) == ("paper", 200,
                                                                             "n_iter")


def test_json_without_out_prints_only_json(data):
    d, _ = data
    rc, out = _run([str(d / "t.csv"), "--iterations", "50", "--json", "--quiet"])
    assert rc == 0
    json.loads(out)  # one JSON object, no CSV


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["--iterations", "0"], "--iterations"),
        (["--iterations", "10", "--burn-in", "10"], "--burn-in"),
        (["--chains", "0"], "--chains"),
        (["--threads", "0"], "--threads"),
        (["--seed", "-1"], "--seed"),
        (["--chunksize", "0"], "--chunksize"),
    ],
)
def test_bad_arguments_name_the_flag(data, argv, flag):
    d, _ = data
    with pytest.raises(ValueError, match=flag):
        _run([str(d / "t.csv"), *argv, "--quiet"])


def test_missing_file():
    with pytest.raises(FileNotFoundError):
        _run(["/nonexistent/table.csv", "--quiet"])


def test_through_the_hdpbn_entry_point(data, capsys):
    main = pytest.importorskip("fastpath.cli._main").main

    d, _ = data
    assert main(["estimate", str(d / "t.csv"), "--iterations", "50", "--json", "--quiet"]) == 0
    assert json.loads(capsys.readouterr().out)["nodes"] == 9
    assert main(["estimate", str(d / "t.csv"), "--iterations", "0"]) == 2
    assert "--iterations" in capsys.readouterr().err
    assert main(["estimate", str(d / "t.csv"), "--overrelax", "--update", "window"]) == 2
    assert "overrelax" in capsys.readouterr().err
    assert main(["estimate", str(d / "t.csv"), "--iterations", "50", "--overrelax", "--json",
                 "--quiet"]) == 0


def test_broken_pipe_ends_quietly(data):
    # hdpbn estimate ... | head -0: the reader is gone before anything is printed
    d, _ = data
    script = "import sys; from fastpath.cli._main import main; sys.exit(main())"
    proc = subprocess.Popen([sys.executable, "-c", script, "estimate", str(d / "t.csv"),
                             "--iterations", "50", "--quiet"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=120) in (0, 141), err
    assert "Traceback" not in err and "Exception ignored" not in err and "BrokenPipe" not in err


def test_out_and_table_are_checked(data, tmp_path, capsys):
    main = pytest.importorskip("fastpath.cli._main").main

    d, _ = data
    out = tmp_path / "missing" / "t.csv"
    assert main(["estimate", str(d / "t.csv"), "--iterations", "50", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hdpbn estimate: error: --out") and str(out.parent) in err
    bad = tmp_path / "bad.csv.gz"
    bad.write_bytes((d / "t.csv").read_bytes())
    assert main(["estimate", str(bad), "--iterations", "50"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"hdpbn estimate: error: {str(bad)!r}") and "gzip" in err


def test_estimate_warns_on_stderr_when_the_chain_looks_unconverged(data, capsys):
    from fastpath.cli import main
    d, _ = data
    assert main(["estimate", str(d / "t.csv"), "--iterations", "60", "--json",
                 "--quiet"]) == 0
    captured = capsys.readouterr()
    json.loads(captured.out)  # stdout stays one JSON object
    assert "hdpbn estimate: warning: the HDP estimates of 1 of 1 trees are not certified" in (
        captured.err)
    assert "P(child | y, x1)" in captured.err and "Traceback" not in captured.err
    # the advice names the command's options, not the Python estimator's
    assert "--iterations auto" in captured.err and "--iterations 1000" in captured.err
    assert "sampler='adaptive'" not in captured.err and "diagnose" not in captured.err
