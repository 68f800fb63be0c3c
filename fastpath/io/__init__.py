"""Tables in: CSV/TSV (optionally compressed), Parquet and ARFF files, and the bundled datasets.

The first arrow of the pipeline: a file becomes a :class:`pandas.DataFrame` whose columns are
declared nominal or numeric (:class:`TableWithTypes`).
"""

from ._arff import write_arff
from ._datasets import dataset_path, list_datasets, load_dataset
from ._tables import SUPPORTED_FORMATS, read_table
from ._typed_table import NOMINAL, NUMERIC, TableWithTypes

__all__ = [
    "NOMINAL",
    "NUMERIC",
    "SUPPORTED_FORMATS",
    "TableWithTypes",
    "dataset_path",
    "list_datasets",
    "load_dataset",
    "read_table",
    "write_arff",
]
