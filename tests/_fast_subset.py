"""``make test-fast`` (``pytest --fast``): the suite less its long tests, which must still reach
every module of ``fastpath``.

**Which tests.** ``--fast`` leaves out the tests marked ``slow`` or ``study`` and those whose
recorded CPU time is over :data:`BUDGET_S` seconds, or that use a fixture shared by a module
(or a wider scope) whose set-up is: such a set-up is paid by whichever of its tests runs first,
so a test recorded short may pay it in the subset. The times are in :data:`TIMES`
(``tests/test_times.txt``: one line per test or shared fixture of more than
:data:`RECORDED_FROM_S` seconds, ``seconds node-id`` or ``seconds fixture:<where>::<name>``,
longest first), which ``make test-times`` rewrites from a run of the whole suite (``pytest
--record-times``): CPU seconds of the test's set-up and call, in its process and the processes
it waited for, so that the numbers hardly depend on what else the machine runs. A new test
counts as short until the file is rewritten; a renamed one likewise.

**What keeps the subset worth running.** Under ``--fast``:

* *every module is reached*: each process records, with :mod:`sys.monitoring` (one event per
  function, then disabled: no measurable cost), the files of ``fastpath`` in which a function
  ran, and counts a module's numba kernels that were called (they run compiled, not as Python);
  the run fails, naming them, when a module of ``fastpath`` that defines a function or a class
  was reached by no test of the subset (a module of imports and constants, such as a package's
  ``__init__.py``, has nothing to run). A test left out that was a module's only test is then
  seen at once: give the module a short test;
* *every test is short*: those of the subset that took more than :data:`BUDGET_S` CPU seconds
  are listed at the end (``make test-times`` then leaves them out, ``make test`` still runs
  them).

Only a run of the whole suite checks the modules (a path, ``-k`` or ``-m`` selects part of it).
"""

from __future__ import annotations

import ast
import re
import resource
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "fastpath"
#: the recorded CPU seconds of the tests over RECORDED_FROM_S (``make test-times``)
TIMES = Path(__file__).with_name("test_times.txt")
#: CPU seconds (set-up and call) above which ``--fast`` leaves a test out: with it, the subset
#: runs in about a minute on 2 cores once the kernels are compiled
BUDGET_S = 0.5
#: the shortest time ``--record-times`` writes down
RECORDED_FROM_S = 0.5
_TOOL_NAME = "hdpbn-fast-subset"


def add_option(parser: pytest.Parser) -> None:
    parser.addoption("--fast", action="store_true",
                     help="make test-fast: leave out the tests marked slow or study and those "
                     f"over {BUDGET_S:g} CPU seconds in tests/test_times.txt; fail when a "
                     "module of fastpath is reached by no test left")
    parser.addoption("--record-times", action="store_true",
                     help="make test-times: rewrite tests/test_times.txt from this run (of "
                     "the whole suite)")


def _cpu() -> float:
    """CPU seconds of this process and of the child processes it waited for."""
    own, children = (resource.getrusage(who) for who in
                     (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def bare_id(nodeid: str) -> str:
    """A test's node id without the ``@group`` that pytest-xdist's ``--dist loadgroup`` appends
    in its workers: the same test has the same name in every run."""
    return re.sub(r"@[\w.-]+$", "", nodeid)


def recorded_times(path: Path = TIMES) -> dict[str, float]:
    """node id -> CPU seconds, as ``--record-times`` wrote them (empty without the file)."""
    if not path.is_file():
        return {}
    times = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            seconds, nodeid = line.split(" ", 1)
            times[bare_id(nodeid)] = float(seconds)
    return times


def runs_code(path: Path) -> bool:
    """Whether the module defines a function or a class (else it is imports and constants,
    which importing it runs: nothing a test could reach or miss)."""
    return any(isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
               for node in ast.walk(ast.parse(path.read_text())))


def configure(config: pytest.Config) -> None:
    """The plugins of ``--fast`` and ``--record-times``."""
    fast, record = config.getoption("fast"), config.getoption("record_times")
    if fast or record:
        config.pluginmanager.register(_Timer(), "hdpbn-test-timer")
    if fast:
        config.pluginmanager.register(FastSubset(config), "hdpbn-fast-subset")
        if config.pluginmanager.hasplugin("xdist"):
            config.pluginmanager.register(_WorkersReached(), "hdpbn-fast-subset-xdist")
    if record:
        config.pluginmanager.register(_Recorder(config), "hdpbn-test-times")


def _whole_suite(config: pytest.Config, markexpr: str) -> bool:
    """No path, keyword or marker of one's own (addopts gives 'not study')."""
    given = [Path(a.split("::")[0]).resolve() for a in config.args]
    return (markexpr in ("", "not study") and not config.option.keyword
            and all(p == ROOT / "tests" for p in given))


_FIXTURE = "fixture:"


def fixture_key(fixturedef: pytest.FixtureDef) -> str:
    """How :data:`TIMES` names a fixture: ``fixture:<where it is defined>::<name>``."""
    return f"{_FIXTURE}{getattr(fixturedef, 'baseid', '')}::{fixturedef.argname}"


def over_budget(times: dict[str, float]) -> tuple[set[str], set[str]]:
    """The tests and the shared fixtures (``fixture:...``) of ``times`` over :data:`BUDGET_S`."""
    long = {n for n, s in times.items() if s > BUDGET_S}
    fixtures = {n for n in long if n.startswith(_FIXTURE)}
    return long - fixtures, fixtures


class _Timer:
    """Each test's CPU seconds (set-up and call), and those of the shared fixtures its set-up
    built, on its call's report (``cpu_s``, ``fixture_cpu_s``), which pytest-xdist hands from
    the worker to the controller."""

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_setup(self, item):
        self.item = item
        item.stash[_FIXTURES] = []
        start = _cpu()
        yield
        item.stash[_CPU] = _cpu() - start

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        start = _cpu()
        yield
        item = getattr(self, "item", None)
        if fixturedef.scope != "function" and item is not None:
            item.stash[_FIXTURES].append((fixture_key(fixturedef), _cpu() - start))

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        start = _cpu()
        yield
        item.stash[_CPU] = item.stash.get(_CPU, 0.0) + _cpu() - start

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = (yield).get_result()
        if report.when == "call":
            report.user_properties.append(("cpu_s", item.stash.get(_CPU, 0.0)))
            report.user_properties.append(("fixture_cpu_s", item.stash.get(_FIXTURES, [])))


_CPU = pytest.StashKey[float]()
_FIXTURES = pytest.StashKey[list[tuple[str, float]]]()


def _cpu_of(report) -> float | None:
    return next((v for k, v in getattr(report, "user_properties", ()) if k == "cpu_s"), None)


class _Recorder:
    """``--record-times``: every test's CPU seconds, into :data:`TIMES` at the end."""

    def __init__(self, config: pytest.Config) -> None:
        self.whole = _whole_suite(config, config.option.markexpr)
        self.times: dict[str, float] = {}

    def pytest_runtest_logreport(self, report) -> None:
        seconds = _cpu_of(report)
        if report.when == "call" and seconds is not None:
            self.times[bare_id(report.nodeid)] = seconds
            for key, cpu in next((v for k, v in report.user_properties
                                  if k == "fixture_cpu_s"), ()):
                self.times[key] = cpu

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(session.config, "workerinput"):
            return
        if not self.whole:
            sys.stderr.write("--record-times: tests/test_times.txt left as it was (it needs "
                             "the whole suite)\n")
            return
        from fastpath.utils._files import write_text

        # each test's longest time of this run and the file's: a test that is long in some
        # runs (the first of a process to load a kernel from numba's cache pays for it) stays
        # out of the subset after a run in which it was short; a test no longer run is dropped
        before = recorded_times()
        times = {n: max(s, before.get(n, 0.0)) for n, s in self.times.items()}
        kept = sorted(((s, n) for n, s in times.items() if s > RECORDED_FROM_S), reverse=True)
        write_text(TIMES, "".join(
            [f"# CPU seconds (set-up and call) of the tests and shared fixtures over "
             f"{RECORDED_FROM_S:g} s: make test-times (tests/_fast_subset.py)\n"]
            + [f"{s:.2f} {n}\n" for s, n in kept]))


class _Reached:
    """The files of ``fastpath`` in which a function ran, in this process."""

    def __init__(self) -> None:
        self.files: set[str] = set()
        monitoring = sys.monitoring
        self.tool = next(i for i in (3, 4, 2, 1, 0) if monitoring.get_tool(i) is None)
        monitoring.use_tool_id(self.tool, _TOOL_NAME)
        prefix = str(PACKAGE) + "/"

        def started(code, offset):
            if code.co_filename.startswith(prefix) and code.co_name != "<module>":
                self.files.add(code.co_filename)
            return monitoring.DISABLE  # once per function is enough

        monitoring.restart_events()  # what an earlier recording disabled counts again
        monitoring.register_callback(self.tool, monitoring.events.PY_START, started)
        monitoring.set_events(self.tool, monitoring.events.PY_START)

    def stop(self) -> set[str]:
        """The files reached: those with a function run, or a numba kernel called."""
        sys.monitoring.set_events(self.tool, 0)
        sys.monitoring.free_tool_id(self.tool)
        kernels = set()
        dispatcher = sys.modules.get("numba.core.dispatcher")
        for name, module in list(sys.modules.items()):
            if dispatcher is None or not name.startswith("fastpath"):
                continue
            for value in list(vars(module).values()):
                if (isinstance(value, dispatcher.Dispatcher)
                        and getattr(value, "__module__", None) == name and value.signatures):
                    kernels.add(str(getattr(module, "__file__", "")))
        return {str(Path(f).relative_to(ROOT)) for f in self.files | kernels if f}


class FastSubset:
    """The plugin of ``--fast`` (module docstring)."""

    def __init__(self, config: pytest.Config) -> None:
        expr = config.option.markexpr
        self.whole = _whole_suite(config, expr)
        config.option.markexpr = ("not slow and not study" if expr in ("", "not study")
                                  else f"({expr}) and not slow and not study")
        self.long, self.long_fixtures = over_budget(recorded_times())
        self.reached: set[str] = set()
        self.missed: list[str] = []
        self.over: list[tuple[float, str]] = []
        self.monitor: _Reached | None = None
        # the controller of pytest-xdist runs no test: its workers record
        self.records = hasattr(config, "workerinput") or not config.getoption("numprocesses",
                                                                               None)

    def is_long(self, item: pytest.Item) -> bool:
        """Recorded over the budget, or using a shared fixture that is."""
        if bare_id(item.nodeid) in self.long:
            return True
        info = getattr(item, "_fixtureinfo", None)
        return info is not None and any(
            fixture_key(d) in self.long_fixtures
            for defs in info.name2fixturedefs.values() for d in defs)

    def pytest_collection_modifyitems(self, config: pytest.Config, items) -> None:
        left = [item for item in items if self.is_long(item)]
        if left:
            config.hook.pytest_deselected(items=left)
            items[:] = [item for item in items if not self.is_long(item)]

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if self.records:  # from the first test on (what importing the modules runs is not a test)
            self.monitor = _Reached()

    def pytest_runtest_logreport(self, report) -> None:
        seconds = _cpu_of(report)
        if report.when == "call" and seconds is not None and seconds > BUDGET_S:
            self.over.append((seconds, report.nodeid))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        config = session.config
        if self.monitor is not None:
            self.reached |= self.monitor.stop()
        if hasattr(config, "workerinput"):  # a worker: hand them to the controller
            config.workeroutput["fast_reached"] = sorted(self.reached)  # type: ignore
            return
        if not self.whole or session.testsfailed:
            return
        modules = {str(p.relative_to(ROOT)) for p in PACKAGE.rglob("*.py") if runs_code(p)}
        self.missed = sorted(modules - self.reached)
        if self.missed:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if self.over:
            terminalreporter.section(f"tests over {BUDGET_S:g} CPU seconds: make test-times "
                                     "leaves them out of make test-fast")
            for seconds, nodeid in sorted(self.over, reverse=True):
                terminalreporter.write_line(f"{seconds:6.1f} s  {nodeid}")
        if self.missed:
            terminalreporter.section("modules of fastpath no test of make test-fast reaches",
                                     red=True)
            for path in self.missed:
                terminalreporter.write_line(f"{path}: give it a test of under {BUDGET_S:g} s")


class _WorkersReached:
    """pytest-xdist's controller: each worker's files reached, into the plugin's."""

    def pytest_testnodedown(self, node, error) -> None:
        plugin = node.config.pluginmanager.get_plugin("hdpbn-fast-subset")
        plugin.reached.update(getattr(node, "workeroutput", {}).get("fast_reached", ()))
