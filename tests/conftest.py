"""Fixtures shared by several test modules."""

from __future__ import annotations

import pytest

from fastpath.io import load_dataset


@pytest.fixture
def credit_csv(tmp_path):
    """credit-a as a CSV file with its target column ``class`` last."""
    X, y = load_dataset("credit-a")
    path = tmp_path / "credit.csv"
    X.assign(**{"class": y}).to_csv(path, index=False)
    return path
