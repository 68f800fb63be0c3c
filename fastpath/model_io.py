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
from typing import TYPE_CHECKING, Any

import numpy as np

from .context_tree import ContextTree
from .counting import TreeSpec
from .encoding import TableEncoder
from .structure import Structure

if TYPE_CHECKING:
    from .classifier import BayesNetClassifier

__all__ = ["FORMAT_VERSION", "load_model", "save_model"]

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


def save_model(model: BayesNetClassifier, path: str | os.PathLike) -> None:
    """Write a fitted :class:`~fastpath.BayesNetClassifier` to ``path`` (an ``.npz`` file)."""
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
        "params": _jsonable_params(model.get_params()),
        "classes": [_label(c) for c in model.classes_],
        "n_features_in": int(model.n_features_in_),
        "feature_names_in": (
            [str(c) for c in model.feature_names_in_]
            if hasattr(model, "feature_names_in_")
            else None
        ),
        "encoder": model.encoder_.to_dict(),
        "structure": model.structure_.to_dict(),
        "trees": trees_meta,
        "m": getattr(model, "m_", None),
        "diagnostics": (
            model.diagnostics_.to_dict() if hasattr(model, "diagnostics_") else None
        ),
        "m_scores": {str(k): v for k, v in getattr(model, "m_scores_", {}).items()},
        "selection": (
            model.selection_.to_dict() if hasattr(model, "selection_") else None
        ),
    }
    for c in meta["encoder"]["codings"]:
        c["categories"] = [_label(v) for v in c["categories"]]
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
    with open(path, "wb") as fh:
        np.savez_compressed(fh, **arrays)


def load_model(path: str | os.PathLike) -> BayesNetClassifier:
    """Read a model written by :func:`save_model`."""
    from .classifier import BayesNetClassifier

    with np.load(path, allow_pickle=False) as data:
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
        arrays = {name: data[name] for name in data.files}

    model = BayesNetClassifier(**meta["params"])
    classes = meta["classes"]
    model.classes_ = np.asarray(classes, dtype=object if any(isinstance(c, str) for c in classes)
                                else None)
    model.n_features_in_ = meta["n_features_in"]
    if meta["feature_names_in"] is not None:
        model.feature_names_in_ = np.asarray(meta["feature_names_in"], dtype=object)
    model.encoder_ = TableEncoder.from_dict(meta["encoder"])
    model.structure_ = Structure.from_dict(meta["structure"])
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
    model.tree_specs_ = specs
    model.trees_ = trees
    model.probability_tables_ = tables
    if meta["m"] is not None:
        model.m_ = meta["m"]
        model.m_scores_ = {float(k): v for k, v in meta["m_scores"].items()}
    if meta.get("diagnostics") is not None:
        from .diagnostics import Diagnostics

        model.diagnostics_ = Diagnostics.from_dict(meta["diagnostics"])
    if meta.get("selection") is not None:
        from .selective import SelectedStructure

        model.selection_ = SelectedStructure.from_dict(meta["selection"])
    model._packed = model._pack(trees, tables)
    return model
