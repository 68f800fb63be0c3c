"""Files the library writes are replaced whole or left as they were (fastpath.utils._files)."""

import errno
import os
import signal
import stat
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
    old = BayesNetClassifier(estimation="m", random_state=0).fit(X, y)
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
        BayesNetClassifier(estimation="m", random_state=1).fit(X, y).save({str(path)!r})
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
    assert main(["fit", "--structure", "kdb",
                 str(credit_csv), "--model", str(credit_csv), "--quiet"]) == 2
    assert "--model" in capsys.readouterr().err and credit_csv.read_bytes() == data
    model = tmp_path / "m.npz"
    assert main(["fit", "--structure", "kdb",
                 str(credit_csv), "--estimation", "m", "--model", str(model),
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


# ---------------------------------------------------------------- what is at the path (#46)
def _reader(path):
    """Read a named pipe to its end in a thread (the writer's open blocks until then)."""
    import threading

    got = {}

    def read():
        with open(path, "rb") as fh:
            got["bytes"] = fh.read()

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread, got


def test_a_symbolic_link_is_written_through_and_stays_a_link(tmp_path):
    real = tmp_path / "real.txt"
    real.write_text("old")
    os.chmod(real, 0o640)
    link = tmp_path / "link.txt"
    link.symlink_to(real.name)  # relative, as ln -s writes it
    write_text(link, "new")
    assert link.is_symlink() and os.readlink(link) == real.name
    assert real.read_text() == "new"
    assert oct(os.stat(real).st_mode & 0o777) == oct(0o640)
    # a dangling link: its target is created, as a shell's > creates it
    dangling = tmp_path / "dangling.txt"
    dangling.symlink_to("made.txt")
    write_text(dangling, "made")
    assert dangling.is_symlink() and (tmp_path / "made.txt").read_text() == "made"
    assert _leftovers(tmp_path) == []


def test_a_named_pipe_is_written_into_not_replaced(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    thread, got = _reader(fifo)
    frame = pd.DataFrame({"a": [1, 2]})
    write_csv(frame, fifo, index=False)
    thread.join(10)
    assert got["bytes"] == b"a\n1\n2\n"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert _leftovers(tmp_path) == []


def test_a_character_device_is_written_into_not_replaced(tmp_path):
    """A null device of our own (never the real /dev/null): it stays a device."""
    null = tmp_path / "null"
    try:
        os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        with open(null, "wb") as fh:
            fh.write(b"")
    except OSError as exc:  # not root, or a file system mounted nodev
        pytest.skip(f"no character device can be made here: {exc}")
    with atomic_write(null, "wb") as fh:
        fh.write(b"into the void")
    assert stat.S_ISCHR(os.lstat(null).st_mode)
    assert _leftovers(tmp_path) == []


def test_a_folder_is_refused_naming_it(tmp_path):
    folder = tmp_path / "models"
    folder.mkdir()
    with pytest.raises(IsADirectoryError, match="folder") as info:
        write_text(folder, "x")
    assert info.value.filename == str(folder)
    assert folder.is_dir() and list(folder.iterdir()) == []


def test_new_files_follow_the_umask_and_replaced_files_keep_their_mode(tmp_path):
    old = os.umask(0o022)
    try:
        write_text(tmp_path / "new.txt", "x")
        assert os.stat(tmp_path / "new.txt").st_mode & 0o777 == 0o644
        os.umask(0o027)
        write_text(tmp_path / "other.txt", "x")
        assert os.stat(tmp_path / "other.txt").st_mode & 0o777 == 0o640
        kept = tmp_path / "kept.txt"
        kept.write_text("old")
        os.chmod(kept, 0o604)
        write_text(kept, "new")
        assert os.stat(kept).st_mode & 0o777 == 0o604 and kept.read_text() == "new"
    finally:
        os.umask(old)


def test_a_saved_model_is_readable_by_others_under_umask_022(tmp_path):
    X, y = load_dataset("credit-a")
    old = os.umask(0o022)
    try:
        BayesNetClassifier(estimation="m", random_state=0).fit(X, y).save(tmp_path / "m.npz")
    finally:
        os.umask(old)
    assert os.stat(tmp_path / "m.npz").st_mode & 0o777 == 0o644


def test_a_failed_save_names_the_path_given_not_the_temporary(tmp_path, monkeypatch):
    X, y = load_dataset("credit-a")
    clf = BayesNetClassifier(estimation="m", random_state=0).fit(X, y)
    real_open = os.open

    def refusing(path, *args, **kwargs):  # a read-only folder, as a non-root user meets it
        if os.fspath(path).endswith(".tmp"):
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing)
    target = tmp_path / "m.npz"
    with pytest.raises(PermissionError) as info:
        clf.save(target)
    assert info.value.filename == str(target) and ".tmp" not in str(info.value)
    monkeypatch.setattr(os, "open", real_open)

    def full(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match="No space") as info:
        clf.save(target)
    assert info.value.filename == str(target)
    assert not target.exists() and _leftovers(tmp_path) == []


def test_predict_writes_through_a_link_and_into_a_pipe(credit_csv, tmp_path, capsys):
    model = tmp_path / "m.npz"
    assert main(["fit", "--structure", "kdb",
                 str(credit_csv), "--estimation", "m", "--model", str(model),
                 "--quiet"]) == 0
    direct = tmp_path / "direct.csv"
    assert main(["predict", str(credit_csv), "--model", str(model), "--out", str(direct)]) == 0
    real = tmp_path / "real.csv"
    real.write_text("old")
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    assert main(["predict", str(credit_csv), "--model", str(model), "--out", str(link)]) == 0
    assert link.is_symlink() and real.read_bytes() == direct.read_bytes()
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    thread, got = _reader(fifo)
    assert main(["predict", str(credit_csv), "--model", str(model), "--out", str(fifo)]) == 0
    thread.join(30)
    assert got["bytes"] == direct.read_bytes()
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert _leftovers(tmp_path) == []


def test_a_file_size_limit_while_saving_names_the_file_and_keeps_the_old_one(tmp_path):
    # issue 55, point 8: "[Errno 27] File too large" without the file: closing the file flushed
    # its buffer again, and that error replaced the one naming the path
    old = tmp_path / "m.npz"
    old.write_bytes(b"the old model")
    script = textwrap.dedent(f"""
        import resource
        from fastpath.utils import atomic_write
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        try:
            with atomic_write({str(old)!r}) as fh:
                fh.write(b"x" * 100_000)
        except OSError as exc:
            print(exc.errno, exc.filename, exc.strerror)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert proc.stdout.split(maxsplit=1) == [str(errno.EFBIG), f"{old} File too large\n"], \
        proc.stderr
    assert old.read_bytes() == b"the old model" and _leftovers(tmp_path) == []
