"""Wall seconds per stage of a fit, from timers put around the stages' functions.

Used by the experiment runner (each cell's ``estimation_seconds``) and by
``benchmarks/eskdb_stages.py`` (every stage of an ensemble's fit).
"""

from __future__ import annotations

import functools
import importlib
import time
from collections.abc import Mapping, Sequence

__all__ = ["StageClock"]


class StageClock:
    """Wall seconds per stage while entered, from timers wrapped around the stages' functions.

    ``stages`` maps a stage's name to the ``(owner, attribute)`` pairs whose calls make it up:
    ``owner`` a module (``"fastpath.pipeline._members"``: a function as the pipeline looks it
    up) or a class (``"fastpath.encode._encoder:TableEncoder"``: a method). A stage function
    called while another stage runs (the encoder's ``fit`` calling its own ``transform``)
    counts in the outer stage only, so the stages add up to at most the fit. The wrappers cost
    a few microseconds a call, unlike a profiler, which would inflate Python-heavy stages.
    """

    def __init__(self, stages: Mapping[str, Sequence[tuple[str, str]]]) -> None:
        self.stages = dict(stages)
        self.seconds = dict.fromkeys(self.stages, 0.0)
        self._active: str | None = None
        self._saved: list[tuple[object, str, object]] = []

    def _wrap(self, stage: str, function):
        @functools.wraps(function)
        def timed(*args, **kwargs):
            if self._active is not None:
                return function(*args, **kwargs)
            self._active = stage
            t0 = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds[stage] += time.perf_counter() - t0
                self._active = None
        return timed

    def __enter__(self) -> StageClock:
        for stage, targets in self.stages.items():
            for owner_name, attribute in targets:
                module_name, _, class_name = owner_name.partition(":")
                owner = importlib.import_module(module_name)
                if class_name:
                    owner = getattr(owner, class_name)
                function = owner.__dict__[attribute]
                self._saved.append((owner, attribute, function))
                setattr(owner, attribute, self._wrap(stage, function))
        return self

    def __exit__(self, *exc) -> None:
        for owner, attribute, function in reversed(self._saved):
            setattr(owner, attribute, function)
        self._saved.clear()
