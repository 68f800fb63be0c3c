"""Which errors the command line turns into one line (the user's) and which it lets through
with their traceback (a bug in hdpbn)."""

import importlib
import subprocess
import sys

import pytest

from fastpath.cli import main
from fastpath.scale import StreamError

# the modules themselves (fastpath.cli._main is also the name of the function main)
# the command line imports these when a command runs: patching the modules reaches it
_cross_validation = importlib.import_module("fastpath.evaluation._cross_validation")
_tables = importlib.import_module("fastpath.io._tables")
_loading = importlib.import_module("fastpath.classifier._loading")
cli_estimate = importlib.import_module("fastpath.cli._estimate")
cli_diagnose = importlib.import_module("fastpath.cli._diagnose")


@pytest.fixture
def child_first_csv(tmp_path):
    path = tmp_path / "table.csv"
    path.write_text("child,y\n" + "".join(f"{'ab'[i % 2]},{'uvw'[i % 3]}\n" for i in range(30)))
    return path


def _raiser(exc: BaseException):
    def boom(*args, **kwargs):
        raise exc

    return boom


def _one_error_line(err: str, command: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"hdpbn {command}: error: "), err
    assert "Traceback" not in err
    return lines[0]


# ---------------------------------------------------------------------- the user's errors
def test_bad_values_and_missing_files_are_one_line_with_exit_2(credit_csv, tmp_path, capsys):
    assert main(["evaluate", str(credit_csv), "--target", "nope"]) == 2
    assert "target column 'nope'" in _one_error_line(capsys.readouterr().err, "evaluate")
    assert main(["predict", str(credit_csv), "--model", str(tmp_path / "none.npz")]) == 2
    assert "none.npz" in _one_error_line(capsys.readouterr().err, "predict")
    assert main(["fit", "--structure", "kdb", str(credit_csv), "--model", str(tmp_path / "m.npz"),
                 "--chunksize", "0"]) == 2
    assert "--chunksize" in _one_error_line(capsys.readouterr().err, "fit")


def test_the_librarys_own_input_errors_are_one_line(credit_csv, monkeypatch, capsys):
    # a streamed table's bad chunk (StreamError, a ValueError naming chunk, row and column)
    monkeypatch.setattr(_cross_validation, "cross_validate",
                        _raiser(StreamError("chunk 3, row 7, column 'A1': not a number")))
    assert main(["evaluate", str(credit_csv), "--structure", "nb"]) == 2
    assert "column 'A1'" in _one_error_line(capsys.readouterr().err, "evaluate")


def test_a_missing_optional_extra_is_one_line(credit_csv, monkeypatch, capsys):
    monkeypatch.setattr(_cross_validation, "cross_validate",
                        _raiser(ImportError("this needs dask: pip install 'hdpbn[dask]'")))
    assert main(["evaluate", str(credit_csv), "--structure", "nb"]) == 2
    assert "pip install" in _one_error_line(capsys.readouterr().err, "evaluate")


# ---------------------------------------------------------------------- bugs
@pytest.mark.parametrize("exc", [TypeError("unsupported operand"), KeyError("n_iter"),
                                 AttributeError("'NoneType' object has no attribute 'x'"),
                                 IndexError("index 3 is out of bounds"),
                                 NotImplementedError("a missing method")])
def test_an_internal_error_of_a_subcommand_propagates(credit_csv, monkeypatch, capsys, exc):
    monkeypatch.setattr(_cross_validation, "cross_validate", _raiser(exc))
    with pytest.raises(type(exc)):
        main(["evaluate", str(credit_csv), "--structure", "nb"])
    assert "error:" not in capsys.readouterr().err


def test_internal_errors_of_every_command_propagate(credit_csv, child_first_csv, tmp_path,
                                                    monkeypatch):
    monkeypatch.setattr(_tables, "read_table", _raiser(KeyError("class")))
    with pytest.raises(KeyError):
        main(["fit", "--structure", "kdb",
              str(credit_csv), "--model", str(tmp_path / "m.npz"), "--quiet"])
    monkeypatch.setattr(_loading, "load_classifier", _raiser(TypeError("bad operand")))
    with pytest.raises(TypeError):
        main(["predict", str(credit_csv), "--model", str(tmp_path / "m.npz")])
    # estimate re-raises what is not a damaged compressed file
    monkeypatch.setattr(cli_estimate, "count_estimate_table", _raiser(KeyError("depth")))
    with pytest.raises(KeyError):
        main(["estimate", str(child_first_csv), "--iterations", "20", "--quiet"])
    monkeypatch.setattr(cli_diagnose, "read_model_meta", _raiser(AttributeError("meta")))
    with pytest.raises(AttributeError):
        main(["diagnose", str(tmp_path / "m.npz")])


def test_a_bug_prints_its_traceback_and_not_exit_2(credit_csv):
    # the command as a user runs it: a library bug is a traceback and Python's exit status 1
    script = (
        "import sys\n"
        "import importlib\n"
        "m = importlib.import_module('fastpath.cli._main')\n"
        "cv = importlib.import_module('fastpath.evaluation._cross_validation')\n"
        "def boom(*a, **k):\n"
        "    raise TypeError('an internal bug')\n"
        "cv.cross_validate = boom\n"
        f"sys.exit(m.main(['evaluate', {str(credit_csv)!r}, '--structure', 'nb']))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" in proc.stderr and "TypeError: an internal bug" in proc.stderr
    assert "error: an internal bug" not in proc.stderr


def test_a_header_only_table_and_a_bad_option_are_plain_errors(credit_csv, tmp_path, capsys,
                                                                monkeypatch):
    header = tmp_path / "header.csv"
    header.write_text("a,b,class\n")
    for command in ("fit", "evaluate"):
        args = [command, str(header)] + (["--model", str(tmp_path / "m.npz")]
                                         if command == "fit" else [])
        assert main(args) == 2
        err = capsys.readouterr().err
        assert "has no data rows (only a header?)" in err and str(header) in err

    def no_read(*args, **kwargs):
        raise AssertionError("the data was read before the options were checked")

    monkeypatch.setattr(_tables, "read_table", no_read)
    assert main(["fit", "--structure", "kdb",
                 str(credit_csv), "--model", str(tmp_path / "m.npz"), "--k", "-1"]) == 2
    assert "k must be >= 0, got -1" in capsys.readouterr().err
    assert main(["evaluate", str(credit_csv), "--k", "-1"]) == 2
    assert "k must be >= 0, got -1" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["fit", "evaluate", "estimate"])
def test_an_unknown_preset_name_is_refused_naming_the_presets(credit_csv, child_first_csv,
                                                                tmp_path, capsys, command):
    data = child_first_csv if command == "estimate" else credit_csv
    args = [command, str(data), "--sampler", "fast"]
    if command == "fit":
        args += ["--model", str(tmp_path / "m.npz")]
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 2
    assert "argument --sampler: invalid choice: 'fast' (choose from" in capsys.readouterr().err


def test_ctrl_c_ends_a_command_with_one_line_and_status_130(credit_csv, tmp_path, capsys,
                                                            monkeypatch):
    # issue 55, point 8: Ctrl-C printed a multi-frame KeyboardInterrupt traceback
    import fastpath.cli._main as cli

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_cmd_fit", interrupted)  # the parser reads it when built
    assert main(["fit", str(credit_csv), "--model", str(tmp_path / "m.npz")]) == 130
    captured = capsys.readouterr()
    assert captured.err == "hdpbn fit: interrupted\n" and captured.out == ""


def test_sigint_during_a_command_exits_130_with_one_line(credit_csv):
    import signal

    script = (
        "import signal, sys, time\n"
        # Ctrl-C as a terminal sends it: a shell's background job starts with SIGINT ignored
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "import fastpath.cli._main as m\n"
        "cv = __import__('fastpath.evaluation._cross_validation', fromlist=['x'])\n"
        "def slow(*a, **k):\n"
        "    print('ready', flush=True)\n"
        "    time.sleep(60)\n"
        "cv.cross_validate = slow\n"
        f"sys.exit(m.main(['evaluate', {str(credit_csv)!r}, '--structure', 'nb']))\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "ready\n", proc.stderr
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert err == "hdpbn evaluate: interrupted\n"
