"""``make test-fast``'s checks (tests/_fast_subset.py): what a run records as reached is the
modules whose functions ran or whose numba kernels were called, and the modules it excuses
exist."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from _fast_subset import ROOT, UNREACHABLE, _Reached, recorded_times


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


def test_the_modules_excused_exist():
    for path, why in UNREACHABLE.items():
        assert (ROOT / path).is_file() and why, path


def test_the_recorded_times_read_back(tmp_path):
    path = tmp_path / "times.txt"
    path.write_text("# comment\n12.50 tests/test_a.py::test_x[1 2]\n0.75 tests/test_b.py::t\n")
    assert recorded_times(path) == {"tests/test_a.py::test_x[1 2]": 12.5,
                                    "tests/test_b.py::t": 0.75}
    assert recorded_times(tmp_path / "none.txt") == {}
