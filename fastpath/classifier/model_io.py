"""Saving and loading fitted classifiers without pickle.

A model file is one ``.npz`` archive: numeric arrays (every tree's leaf paths and counts and its
probability table) plus one JSON document (parameters, classes, the encoder's codings, the
structure, the tree specifications). Loading uses ``np.load(..., allow_pickle=False)``, so a model
file cannot run code. Class labels and category labels must be JSON values (str, int, float,
bool); others are refused at save time rather than silently changed.
"""

from __future__ import annotations

import contextlib
import json
import os
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ..counts.context_tree import ContextTree
from ..counts.counting import TreeSpec
from ..encode.encoder import TableEncoder
from ..estimate.diagnostics import FitDiagnostics
from ..pipeline.fitted import FittedModel
from ..structure.graphs import Structure
from ..structure.selective import SelectedStructure

__all__ = ["FORMAT_VERSION", "read_model", "read_model_meta", "save_model"]

FORMAT_VERSION = 1


def _label(v: Any) -> Any:
    if isinstance(v, np.generic):
        v = v.item()
    if v is None or isinstance(v, str | bool | int | float):
        return v
    raise TypeError(
        f"cannot save label {v!r} of type {type(v).__name__}: labels must be JSON values"
    )


def _jsonable_params(params: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in params.items():
        if key == "random_state" and not (value is None or isinstance(value, int)):
            value = None  # a Generator is not reproducible from a file anyway
        elif key == "categorical_features" and not isinstance(value, str | type(None)):
            value = [_label(v) for v in value]
        out[key] = _label(value) if not isinstance(value, list) else value
    return out


def save_model(params: dict[str, Any], model: FittedModel, path: str | os.PathLike) -> None:
    """Write a fitted classifier (its parameters and learned state) to ``path`` (``.npz``)."""
    arrays: dict[str, np.ndarray] = {}
    trees_meta = []
    for i, (spec, tree, table) in enumerate(
        zip(model.tree_specs_, model.trees_, model.probability_tables_, strict=True)
    ):
        leaves = tree.leaves
        arrays[f"tree{i}_paths"] = tree.paths()[leaves]
        arrays[f"tree{i}_counts"] = np.asarray(tree.counts[leaves])
        arrays[f"tree{i}_table"] = np.asarray(table)
        trees_meta.append(
            {
                "child": spec.child,
                "conditioning": list(spec.conditioning),
                "n_values": spec.n_values,
                "cardinalities": list(spec.cardinalities),
                "child_name": tree.child_name,
                "conditioning_names": list(tree.conditioning_names or ()),
            }
        )
    meta = {
        "format": "hdpbn-model",
        "version": FORMAT_VERSION,
        "params": _jsonable_params(params),
        "classes": [_label(c) for c in model.classes_],
        "n_features_in": int(model.n_features_in_),
        "feature_names_in": (
            [str(c) for c in model.feature_names_in_]
            if model.feature_names_in_ is not None
            else None
        ),
        "encoder": model.encoder_.to_dict(),
        "structure": model.structure_.to_dict(),
        "trees": trees_meta,
        "m": model.m_,
        "diagnostics": (
            model.diagnostics_.to_dict() if model.diagnostics_ is not None else None
        ),
        "m_scores": {str(k): v for k, v in (model.m_scores_ or {}).items()},
        "selection": (
            model.selection_.to_dict() if model.selection_ is not None else None
        ),
    }
    for c in meta["encoder"]["codings"]:
        c["categories"] = [_label(v) for v in c["categories"]]
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
    with open(path, "wb") as fh:
        np.savez_compressed(fh, **arrays)


def read_model_meta(path: str | os.PathLike) -> dict[str, Any]:
    """The JSON document of a model file (``ValueError`` naming the file when it is not one)."""
    with _open(path) as (meta, _):
        return meta


@contextlib.contextmanager
def _open(path: str | os.PathLike) -> Iterator[tuple[dict[str, Any], Any]]:
    """The metadata and the open archive of a model file; every way a file can fail to be one
    (missing, not a zip archive, truncated, corrupt, foreign, too new) is an error naming it."""
    name = os.fspath(path)
    if not Path(name).exists():
        raise FileNotFoundError(f"no such file: {name!r}")
    try:
        data = np.load(name, allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile):
        # numpy's own message would suggest allow_pickle=True: never advice for a model file
        raise ValueError(f"{name!r} is not an hdpbn model file (not an .npz archive)") from None
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise ValueError(f"{name!r} is not an hdpbn model file (not an .npz archive)")
    with data:
        try:
            meta = _meta(name, data)
            yield meta, data
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
            raise ValueError(f"{name!r} is a damaged model file ({exc})") from None


def _meta(name: str, data: Any) -> dict[str, Any]:
    if "meta" not in data.files:
        raise ValueError(f"{name!r} is not an hdpbn model file (no metadata)")
    try:
        meta = json.loads(bytes(data["meta"]).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ValueError(f"{name!r} is not an hdpbn model file (unreadable metadata)") from None
    if not isinstance(meta, dict) or meta.get("format") != "hdpbn-model":
        raise ValueError(f"{name!r} is not an hdpbn model file")
    if meta.get("version", 0) > FORMAT_VERSION:
        raise ValueError(
            f"{name!r}: model file version {meta['version']} is newer than this hdpbn "
            f"understands ({FORMAT_VERSION}); upgrade hdpbn"
        )
    return meta


def read_model(path: str | os.PathLike) -> tuple[dict[str, Any], FittedModel]:
    """The parameters and the learned state written by :func:`save_model`."""
    with _open(path) as (meta, data):
        arrays = {name: data[name] for name in data.files}
    classes = meta["classes"]
    specs, trees, tables = [], [], []
    for i, t in enumerate(meta["trees"]):
        spec = TreeSpec(t["child"], tuple(t["conditioning"]), t["n_values"],
                        tuple(t["cardinalities"]))
        specs.append(spec)
        trees.append(
            ContextTree.from_leaf_counts(
                arrays[f"tree{i}_paths"], arrays[f"tree{i}_counts"], spec.cardinalities,
                spec.n_values, child_name=t["child_name"],
                conditioning_names=t["conditioning_names"],
            )
        )
        table = np.array(arrays[f"tree{i}_table"], dtype=np.float64)
        if table.shape != (trees[-1].n_nodes, spec.n_values):
            raise ValueError(f"model file is corrupt: table {i} does not match its tree")
        table.flags.writeable = False
        tables.append(table)
    names = meta["feature_names_in"]
    model = FittedModel(
        classes_=np.asarray(classes, dtype=object if any(isinstance(c, str) for c in classes)
                            else None),
        n_features_in_=meta["n_features_in"],
        feature_names_in_=None if names is None else np.asarray(names, dtype=object),
        encoder_=TableEncoder.from_dict(meta["encoder"]),
        structure_=Structure.from_dict(meta["structure"]),
        tree_specs_=specs,
        trees_=trees,
        probability_tables_=tables,
        selection_=(None if meta.get("selection") is None
                    else SelectedStructure.from_dict(meta["selection"])),
        m_=meta["m"],
        m_scores_=(None if meta["m"] is None
                   else {float(k): v for k, v in meta["m_scores"].items()}),
        diagnostics_=(None if meta.get("diagnostics") is None
                      else FitDiagnostics.from_dict(meta["diagnostics"])),
    )
    return meta["params"], model
