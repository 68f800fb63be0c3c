"""Small bundled datasets (UCI, CC BY 4.0; see ``fastpath/data/README.md``)."""

from __future__ import annotations

from importlib import resources

import pandas as pd


def list_datasets() -> list[str]:
    """Names of the bundled datasets."""
    files = resources.files("fastpath") / "data"
    return sorted(
        p.name.removesuffix(".csv.gz") for p in files.iterdir() if p.name.endswith(".csv.gz")
    )


def dataset_path(name: str):
    """Path of a bundled dataset's ``.csv.gz`` file."""
    if name not in list_datasets():
        raise ValueError(f"unknown dataset {name!r}; bundled: {list_datasets()}")
    return resources.files("fastpath") / "data" / f"{name}.csv.gz"


def load_dataset(name: str) -> tuple[pd.DataFrame, pd.Series]:
    """Attributes and class of a bundled dataset (the class is the column named ``class``).

    Columns are read as strings or numbers as written; empty fields are missing values.
    """
    with dataset_path(name).open("rb") as fh:
        frame = pd.read_csv(fh, compression="gzip", keep_default_na=False, na_values=[""])
    return frame.drop(columns="class"), frame["class"]
