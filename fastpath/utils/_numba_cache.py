"""Keep numba's on-disk cache honest across modules.

numba keys a cached function on its own source file only. A kernel that compiles in a function
of *another* module (``cache=True`` kernels calling ``log_stirling`` or the shared CMI term) would
keep the old code from its cache after that other module changed. :func:`flush_stale_cache`,
called at the bottom of such a module, stores a digest of the modules its kernels depend on next
to the cache files and drops the cache when the digest changes.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from numba.core.dispatcher import Dispatcher

from ._threads import ThreadedKernel


def flush_stale_cache(namespace: Mapping[str, Any], dependencies: Sequence[ModuleType]) -> bool:
    """Drop the numba cache of every kernel in ``namespace`` (a module's ``globals()``) when a
    module in ``dependencies`` changed since the cache was written; True when it did.

    Best effort: any failure (read-only cache folder, a numba without these internals) leaves
    the cache as it is and never breaks the import.
    """
    try:
        kernels = [obj for obj in namespace.values() if isinstance(obj, Dispatcher)]
        # a ThreadedKernel (fastpath.utils._threads) holds two dispatchers
        kernels += [d for obj in namespace.values() if isinstance(obj, ThreadedKernel)
                    for d in obj.dispatchers]
        own = [k for k in kernels if k.py_func.__module__ == namespace["__name__"]]
        if not own:
            return False
        digest = hashlib.sha256()
        for module in dependencies:
            digest.update(Path(module.__file__).read_bytes())
        stamp = Path(own[0]._cache._cache_path) / f"{namespace['__name__']}.deps-digest"
        if stamp.exists() and stamp.read_text() == digest.hexdigest():
            return False
        for kernel in kernels:
            kernel._cache.flush()
        stamp.write_text(digest.hexdigest())
        return True
    except Exception:  # pragma: no cover - best effort: never break the import
        return False


def module_kernels(namespace: Mapping[str, Any]) -> list[Dispatcher]:
    """The numba dispatchers of a module's namespace (a :class:`ThreadedKernel`'s two)."""
    out = []
    for obj in namespace.values():
        if isinstance(obj, Dispatcher):
            out.append(obj)
        elif isinstance(obj, ThreadedKernel):
            out.extend(obj.dispatchers)
    return out


def none_cached(kernels: Iterable[Dispatcher]) -> bool:
    """Whether numba's on-disk cache holds none of ``kernels`` compiled (a kernel's index file
    lists its compiled signatures; :func:`flush_stale_cache` writes empty ones): after an
    install, an upgrade or with a new ``NUMBA_CACHE_DIR``, the first use will compile them.
    Best effort: False when it cannot tell."""
    try:
        # an index of another source stamp (the file changed) loads as empty
        return not any(k._cache._cache_file._load_index() for k in kernels
                       if os.path.exists(k._cache._cache_file._index_path))
    except Exception:  # pragma: no cover - numba internals changed: say nothing
        return False
