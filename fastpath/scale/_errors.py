"""Where a chunk sits in a stream, and the errors that name it (chunk, row, column)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd


class StreamError(ValueError):
    """Bad input in a stream; the message names the chunk, the row and the column."""


@dataclass(frozen=True)
class Where:
    """Position of a chunk in a stream, for error messages."""

    kind: str  # "chunk" or "partition"
    index: int
    start: int | None  # first row in the whole stream, when known
    n_rows: int
    offset: int = 0  # first row within the chunk/partition (a block of a partition)

    def __str__(self) -> str:
        if self.start is None or self.n_rows == 0:
            return f"{self.kind} {self.index}"
        return f"{self.kind} {self.index} (rows {self.start}-{self.start + self.n_rows - 1})"

    def row(self, local: int) -> str:
        if self.start is None:
            return f"row {self.offset + local} of {self.kind} {self.index}"
        return f"row {self.start + local}"

    def sub(self, offset: int, n_rows: int) -> Where:
        """A block of ``n_rows`` rows starting ``offset`` rows into this one."""
        start = None if self.start is None else self.start + offset
        return Where(self.kind, self.index, start, n_rows, self.offset + offset)


def fail(where: Where, column: Any, local_row: int | None, msg: str) -> StreamError:
    parts = [str(where)]
    if local_row is not None:
        parts.append(where.row(local_row))
    if column is not None:
        parts.append(f"column {column!r}")
    return StreamError(", ".join(parts) + ": " + msg)


def check_columns(frame: pd.DataFrame, expected: Sequence[str], where: Where) -> pd.DataFrame:
    names = [str(c) for c in frame.columns]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise fail(where, None, None, f"duplicated column names {dup}")
    have = set(names)
    extra = [c for c in names if c not in set(expected)]
    if extra:
        raise fail(where, extra[0], None, "a new column that the first chunk did not have")
    missing = [c for c in expected if c not in have]
    if missing:
        raise fail(where, missing[0], None, "missing (the first chunk had it)")
    if names != list(frame.columns):
        frame = frame.set_axis(names, axis=1)
    if names != list(expected):
        frame = frame[list(expected)]
    return frame


def first_true(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])
