"""Files the library writes are replaced whole or left as they were (fastpath.utils._files)."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pandas as pd
import pytest

from fastpath import BayesNetClassifier
from fastpath.classifier import load_classifier
from fastpath.cli import main
from fastpath.io import load_dataset
from fastpath.utils import atomic_write, write_csv, write_text


def _leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_a_write_that_fails_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "out.txt"
    write_text(path, "old")
    with pytest.raises(RuntimeError, match="disk full"):
        with atomic_write(path, "w") as fh:
            fh.write("half of the new")
            raise RuntimeError("disk full")
    assert path.read_text() == "old"
    assert _leftovers(tmp_path) == []


def test_writers_replace_the_file_whole(tmp_path):
    path = tmp_path / "t.csv"
    frame = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})
    write_text(path, "something longer than the table that replaces it\n" * 10)
    write_csv(frame, path, index=False)
    pd.testing.assert_frame_equal(pd.read_csv(path), frame)
    with atomic_write(path, "wb") as fh:
        fh.write(b"\x00\x01")
    assert path.read_bytes() == b"\x00\x01"
    assert _leftovers(tmp_path) == []
    with pytest.raises(ValueError, match="mode"):
        with atomic_write(path, "a"):
            pass


def test_a_process_killed_while_saving_over_a_model_leaves_the_old_one(tmp_path):
    """The child loads the model, then saves a refit over it, stalling (then killed) after
    writing half of the new file; the old model still loads and predicts as before."""
    X, y = load_dataset("credit-a")
    old = BayesNetClassifier(estimator="m", random_state=0).fit(X, y)
    path = tmp_path / "model.npz"
    old.save(path)
    before = path.read_bytes()
    started = tmp_path / "writing"
    child = textwrap.dedent(f"""
        import time
        import numpy as np
        from fastpath import BayesNetClassifier
        from fastpath.io import load_dataset

        def stalled(fh, **arrays):
            fh.write(b"PK half of a new model file")
            fh.flush()
            open({str(started)!r}, "w").close()
            time.sleep(60)

        np.savez_compressed = stalled
        X, y = load_dataset("credit-a")
        BayesNetClassifier(estimator="m", random_state=1).fit(X, y).save({str(path)!r})
    """)
    proc = subprocess.Popen([sys.executable, "-c", child])
    try:
        deadline = time.monotonic() + 120
        while not started.exists():
            assert proc.poll() is None, "the child ended before it wrote"
            assert time.monotonic() < deadline, "the child never started writing"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    assert path.read_bytes() == before
    loaded = load_classifier(path)
    np.testing.assert_array_equal(loaded.predict_proba(X), old.predict_proba(X))
    # the killed write's temporary is hidden beside it, never the model's name
    assert all(name.startswith(".model.npz.") for name in _leftovers(tmp_path))


def test_the_command_line_refuses_to_overwrite_its_input(credit_csv, tmp_path, capsys):
    data = credit_csv.read_bytes()
    assert main(["fit", str(credit_csv), "--model", str(credit_csv), "--quiet"]) == 2
    assert "--model" in capsys.readouterr().err and credit_csv.read_bytes() == data
    model = tmp_path / "m.npz"
    assert main(["fit", str(credit_csv), "--estimator", "m", "--model", str(model),
                 "--quiet"]) == 0
    saved = model.read_bytes()
    # the same file under another spelling of its path
    other = tmp_path / "." / credit_csv.name
    assert main(["predict", str(credit_csv), "--model", str(model), "--out", str(other)]) == 2
    err = capsys.readouterr().err
    assert "--out" in err and "input file" in err and credit_csv.read_bytes() == data
    assert main(["predict", str(credit_csv), "--model", str(model), "--out", str(model)]) == 2
    assert model.read_bytes() == saved


@pytest.mark.parametrize("suffix", [".csv", ".csv.gz", ".csv.bz2", ".csv.xz"])
def test_write_csv_compresses_as_the_suffix_says(tmp_path, suffix):
    frame = pd.DataFrame({"a": np.arange(5), "b": list("vwxyz")})
    path = tmp_path / f"t{suffix}"
    write_csv(frame, path, index=False)
    pd.testing.assert_frame_equal(pd.read_csv(path), frame)  # read_csv infers it too
