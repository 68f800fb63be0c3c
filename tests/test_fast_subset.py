"""``make test-fast``'s checks (tests/_fast_subset.py): what a run records as reached is the
modules whose functions ran or whose numba kernels were called; a module of imports and
constants has nothing to reach; the recorded times read back; a test is long when it is, or
when a shared fixture it uses has a long set-up."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np

from _fast_subset import (
    PACKAGE,
    ROOT,
    FastSubset,
    _Reached,
    bare_id,
    over_budget,
    recorded_times,
    runs_code,
)


def test_a_run_records_the_modules_whose_code_ran():
    from fastpath.utils._sums import pairwise_sum
    from fastpath.utils._validation import check_int

    monitor = _Reached()
    try:
        assert check_int("n", 3, 1) == 3
        assert pairwise_sum(np.ones(5)) == 5.0  # a numba kernel: it runs compiled
    finally:
        reached = monitor.stop()
    assert "fastpath/utils/_validation.py" in reached
    assert "fastpath/utils/_sums.py" in reached
    # imported, none of its code run during the recording
    assert "fastpath/cli/_diagnose.py" not in reached
    assert all(not Path(p).is_absolute() and (ROOT / p).is_file() for p in reached)


def test_modules_of_imports_and_constants_have_nothing_to_reach(tmp_path):
    assert not runs_code(PACKAGE / "version.py") and not runs_code(PACKAGE / "cli/__main__.py")
    assert runs_code(PACKAGE / "utils/_validation.py") and runs_code(PACKAGE / "__init__.py")
    (tmp_path / "only.py").write_text('"""def f(): in a docstring"""\nimport os\nX = 1\n')
    assert not runs_code(tmp_path / "only.py")


def test_the_recorded_times_read_back(tmp_path):
    path = tmp_path / "times.txt"
    path.write_text("# comment\n12.50 tests/test_a.py::test_x[1 2]\n0.75 tests/test_b.py::t\n")
    assert recorded_times(path) == {"tests/test_a.py::test_x[1 2]": 12.5,
                                    "tests/test_b.py::t": 0.75}
    assert recorded_times(tmp_path / "none.txt") == {}


def test_a_test_keeps_its_name_in_every_run():
    # pytest-xdist's --dist loadgroup appends "@group" in its workers
    assert bare_id("tests/test_a.py::test_x[hdp]@dask") == "tests/test_a.py::test_x[hdp]"
    assert bare_id("tests/test_a.py::test_x[a@b]") == "tests/test_a.py::test_x[a@b]"
    assert bare_id("tests/test_a.py::test_y") == "tests/test_a.py::test_y"


def test_a_test_sharing_a_long_set_up_is_long(tmp_path):
    path = tmp_path / "times.txt"
    path.write_text("11.0 fixture:tests/test_a.py::compiled\n2.0 tests/test_a.py::test_slow@g\n")
    subset = object.__new__(FastSubset)  # the plugin's state alone, no pytest configuration
    subset.long, subset.long_fixtures = over_budget(recorded_times(path))
    compiled = SimpleNamespace(baseid="tests/test_a.py", argname="compiled")
    elsewhere = SimpleNamespace(baseid="tests/test_b.py", argname="compiled")

    def item(nodeid, *fixtures):
        defs = {f.argname: (f,) for f in fixtures}
        return SimpleNamespace(nodeid=nodeid,
                               _fixtureinfo=SimpleNamespace(name2fixturedefs=defs))

    assert subset.is_long(item("tests/test_a.py::test_slow@g"))
    assert subset.is_long(item("tests/test_a.py::test_short", compiled))
    assert not subset.is_long(item("tests/test_b.py::test_short", elsewhere))
    assert not subset.is_long(item("tests/test_a.py::test_short"))
