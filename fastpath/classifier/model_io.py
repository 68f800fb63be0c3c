"""Saving and loading fitted classifiers without pickle.

A model file is one ``.npz`` archive: numeric arrays (every tree's leaf paths and counts and its
probability table) plus one JSON document (parameters, classes, the encoder's codings, the
structure, the tree specifications). Loading uses ``np.load(..., allow_pickle=False)``, so a model
file cannot run code. Class labels and category labels must be JSON values (str, int, float,
bool); others are refused at save time rather than silently changed.
"""

from __future__ import annotations

import json
import os
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
    """The JSON document of a model file (``ValueError`` when it is not one)."""
    if not Path(path).exists():
        raise FileNotFoundError(f"no such file: {os.fspath(path)!r}")
    with np.load(path, allow_pickle=False) as data:
        return _meta(path, data)


def _meta(path: str | os.PathLike, data: Any) -> dict[str, Any]:
    if "meta" not in data.files:
        raise ValueError(f"{os.fspath(path)!r} is not an hdpbn model file (no metadata)")
    meta = json.loads(bytes(data["meta"]).decode("utf-8"))
    if meta.get("format") != "hdpbn-model":
        raise ValueError(f"{os.fspath(path)!r} is not an hdpbn model file")
    if meta.get("version", 0) > FORMAT_VERSION:
        raise ValueError(
            f"model file version {meta['version']} is newer than this hdpbn understands "
            f"({FORMAT_VERSION}); upgrade hdpbn"
        )
    return meta


def read_model(path: str | os.PathLike) -> tuple[dict[str, Any], FittedModel]:
    """The parameters and the learned state written by :func:`save_model`."""
    with np.load(path, allow_pickle=False) as data:
        meta = _meta(path, data)
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
