"""A data frame with the declared type (nominal or numeric) of every column: what readers return."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

NOMINAL = "nominal"
NUMERIC = "numeric"


@dataclass(frozen=True)
class TableWithTypes:
    """A data frame with the declared type of each of its columns.

    Attributes
    ----------
    frame : pandas.DataFrame
        numeric columns are float64, nominal columns are Categorical with str categories.
    types : dict[str, str]
        ``column -> "nominal" | "numeric"``, in column order.
    relation : str or None
        ARFF ``@relation`` name; ``None`` for other formats.
    source_format : str
        ``"csv"``, ``"tsv"``, ``"parquet"`` or ``"arff"``.
    """

    frame: pd.DataFrame
    types: dict[str, str] = field(default_factory=dict)
    relation: str | None = None
    source_format: str = "csv"

    @property
    def nominal_columns(self) -> list[str]:
        return [c for c, t in self.types.items() if t == NOMINAL]

    @property
    def numeric_columns(self) -> list[str]:
        return [c for c, t in self.types.items() if t == NUMERIC]

    def __len__(self) -> int:
        return len(self.frame)
