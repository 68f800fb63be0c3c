"""One thread knob for the calling thread: numba's parallel kernels and the library's pools.

:func:`limit_threads` ``(n)`` is a context manager. Inside it, on the thread that entered it:

* :func:`numba_threads` returns ``n`` (at most ``numba.config.NUMBA_NUM_THREADS``);
* every kernel built with :func:`threaded_kernel` runs its *serial* compilation when that count
  is 1, so numba's thread pool is never started, and its ``parallel=True`` compilation on
  ``n`` threads otherwise (``numba.set_num_threads``, which numba keeps per thread);
* the library's Python thread pools (the HDP sampler's, the members', the pass statistics')
  size themselves by :func:`numba_threads`.

BLAS is not limited: no stage of fastpath calls it (asking OpenBLAS to use one thread would
start its thread pool).

Everything is restored on exit, and the contexts nest. numba's count is thread-local: a worker
thread started inside the block does not inherit it and must enter its own ``limit_threads``
(the others oversubscribe the cores). numba's workqueue threading layer cannot run parallel
kernels from several threads at once, so the parallel compilations are launched one at a time
(each already uses the cores it is given); serial ones run concurrently.

``n`` is a positive int; :func:`fastpath.utils._validation.n_threads` turns scikit-learn's
``n_jobs`` into one.

:func:`threaded_kernel` compiles one Python function twice, ``njit(cache=True, **options)`` and
``njit(cache=True, parallel=True, **options)`` (``prange`` is ``range`` in the first), under
distinct names: numba's on-disk cache is keyed on the function's qualified name and source line,
not on its flags, so the two compilations of one name would overwrite each other's cache files.
"""

from __future__ import annotations

import threading
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numba
from numba.core.dispatcher import Dispatcher
from numba.np.ufunc import parallel as numba_parallel

from ._validation import check_int

_local = threading.local()  # .n: the count limit_threads set for this thread (absent: none)
_parallel_launch = threading.Lock()


def _pool_started() -> bool:
    """Whether numba's threading layer is loaded (``numba.get_num_threads`` and
    ``numba.set_num_threads`` start it, with its threads, when it is not)."""
    # a numba without this private flag: assume started (correct, may start the pool early)
    return bool(getattr(numba_parallel, "_is_initialized", True))


def numba_threads() -> int:
    """The number of threads numba's parallel kernels use on the calling thread.

    Inside :func:`limit_threads`, its ``n`` (capped at ``numba.config.NUMBA_NUM_THREADS``);
    elsewhere numba's own count for this thread (``numba.get_num_threads``), or its default
    when the threading layer has not been started (asking it would start it).
    """
    n = getattr(_local, "n", None)
    if n is not None:
        return n
    if _pool_started():
        return int(numba.get_num_threads())
    return int(numba.config.NUMBA_NUM_THREADS)


@contextmanager
def limit_threads(n: int) -> Iterator[int]:
    """Run the block with at most ``n`` threads in numba's kernels and the library's pools.

    Parameters
    ----------
    n : int
        A positive number of threads (see the module docstring for what it governs).

    Yields
    ------
    int
        The numba thread count in force (``n`` capped at ``numba.config.NUMBA_NUM_THREADS``).
    """
    n = check_int("n", n, 1)
    count = min(n, int(numba.config.NUMBA_NUM_THREADS))
    previous = getattr(_local, "n", None)
    # with one thread the serial kernels never need the pool: do not start it to set its count
    set_numba = count > 1 or _pool_started()
    numba_before = numba.get_num_threads() if set_numba else None
    if set_numba:
        numba.set_num_threads(count)
    _local.n = count
    try:
        yield count
    finally:
        _local.n = previous
        if numba_before is not None:
            numba.set_num_threads(numba_before)


class ThreadedKernel:
    """A numba kernel compiled serial and parallel from one Python function; calling it runs
    the serial one when :func:`numba_threads` is 1, else the parallel one.

    Attributes
    ----------
    serial, parallel : numba Dispatcher
        The two compilations (``serial`` under the function's name + ``"_serial"``). A numba
        kernel calling this one must call one of them: the dispatch is in Python.
    """

    def __init__(self, fn: Callable, **options: Any) -> None:
        self.parallel: Dispatcher = numba.njit(cache=True, parallel=True, **options)(fn)
        self.serial: Dispatcher = numba.njit(cache=True, **options)(_renamed(fn, "_serial"))
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__module__ = fn.__module__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    def __call__(self, *args: Any) -> Any:
        if numba_threads() == 1:
            return self.serial(*args)
        with _parallel_launch:  # one parallel launch at a time (module docstring)
            return self.parallel(*args)

    @property
    def dispatchers(self) -> tuple[Dispatcher, Dispatcher]:
        return self.serial, self.parallel


def threaded_kernel(fn: Callable | None = None, **options: Any) -> Any:
    """Decorator: ``@threaded_kernel`` or ``@threaded_kernel(nogil=True)`` makes a
    :class:`ThreadedKernel` (``cache=True`` always; ``options`` go to both compilations)."""
    if fn is None:
        return lambda f: ThreadedKernel(f, **options)
    return ThreadedKernel(fn, **options)


def _renamed(fn: Callable, suffix: str) -> Callable:
    """A copy of ``fn`` (same code, globals and source file) under another (qualified) name."""
    out = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__ + suffix, fn.__defaults__,
                             fn.__closure__)
    out.__qualname__ = fn.__qualname__ + suffix
    out.__module__ = fn.__module__
    out.__doc__ = fn.__doc__
    out.__kwdefaults__ = fn.__kwdefaults__
    return out
