"""Saving and loading fitted classifiers without pickle.

A model file is one ``.npz`` archive: numeric arrays (every member's trees: leaf paths, leaf
counts and probability table, prefixed ``member<e>_``) plus one JSON document (the estimator's
class and parameters, the classes, and per member the encoder's codings, the structure, the
selection, the tree specifications and m). A single classifier is a file with one member.
Loading uses ``np.load(..., allow_pickle=False)``, so a model file cannot run code. Class labels
and category labels must be JSON values (str, int, float, bool); others are refused at save time
rather than silently changed.

Version 1 files (a single classifier's ``hdpbn-model`` and an ensemble's ``hdpbn-ensemble``,
written before the classifiers shared one format) still load, into the same members.
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

from ..counts._context_tree import ContextTree
from ..counts._counting import TreeSpec
from ..encode._encoder import TableEncoder
from ..estimate._diagnostics import FitDiagnostics
from ..estimate.hdp._options import RENAMED_PRESETS
from ..pipeline._config import LEGACY_SAMPLER, hdp_options
from ..pipeline._fitted import FittedModel, Member
from ..structure._graphs import Structure
from ..structure._selective import SelectedStructure
from ..utils._files import atomic_write

FORMAT_VERSION = 2
#: the ``format`` of every model file
MODEL = "hdpbn-model"
#: the ``format`` of an ensemble's version 1 file
_ENSEMBLE_V1 = "hdpbn-ensemble"
#: which estimator wrote a version 1 file
_V1_CLASSES = {MODEL: "BayesNetClassifier", _ENSEMBLE_V1: "ESKDBClassifier"}


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
        elif key in ("categorical_features", "na_values", "exclude_features") and not (
                isinstance(value, str | type(None))):  # a sequence of labels
            value = [_label(v) for v in value]
        out[key] = _label(value) if not isinstance(value, list) else value
    return out


def _write_trees(prefix: str, specs, trees, tables, arrays: dict[str, np.ndarray]) -> list[dict]:
    """Every tree's leaf paths, leaf counts and table into ``arrays``; their metadata."""
    meta = []
    for i, (spec, tree, table) in enumerate(zip(specs, trees, tables, strict=True)):
        leaves = tree.leaves
        arrays[f"{prefix}tree{i}_paths"] = tree.paths()[leaves]
        arrays[f"{prefix}tree{i}_counts"] = np.asarray(tree.counts[leaves])
        arrays[f"{prefix}tree{i}_table"] = np.asarray(table)
        meta.append(
            {
                "child": spec.child,
                "conditioning": list(spec.conditioning),
                "n_values": spec.n_values,
                "cardinalities": list(spec.cardinalities),
                "child_name": tree.child_name,
                "conditioning_names": list(tree.conditioning_names or ()),
            }
        )
    return meta


def _read_trees(prefix: str, trees_meta: list[dict], arrays: dict[str, np.ndarray]):
    """The specs, context trees and (read-only) tables written by :func:`_write_trees`."""
    specs, trees, tables = [], [], []
    for i, t in enumerate(trees_meta):
        spec = TreeSpec(t["child"], tuple(t["conditioning"]), t["n_values"],
                        tuple(t["cardinalities"]))
        specs.append(spec)
        trees.append(
            ContextTree.from_leaf_counts(
                arrays[f"{prefix}tree{i}_paths"], arrays[f"{prefix}tree{i}_counts"],
                spec.cardinalities, spec.n_values, child_name=t["child_name"],
                conditioning_names=t["conditioning_names"],
            )
        )
        table = np.array(arrays[f"{prefix}tree{i}_table"], dtype=np.float64)
        if table.shape != (trees[-1].n_nodes, spec.n_values):
            raise ValueError(f"model file is corrupt: table {i} does not match its tree")
        table.flags.writeable = False
        tables.append(table)
    return specs, trees, tables


def _fit_warnings(meta: dict) -> tuple[str, ...] | None:
    """The fit's recorded warnings (None for files written before they were kept)."""
    kept = meta.get("fit_warnings")
    if kept is None:
        return None
    if not isinstance(kept, list) or not all(isinstance(w, str) for w in kept):
        raise ValueError("model file is corrupt: fit_warnings must be a list of strings")
    return tuple(kept)


def _excluded_features(meta: dict) -> tuple[str, ...]:
    """The columns the fit left out (none in files written before columns were left out)."""
    kept = meta.get("excluded_features", [])
    if not isinstance(kept, list) or not all(isinstance(c, str) for c in kept):
        raise ValueError("model file is corrupt: excluded_features must be a list of strings")
    return tuple(kept)


def _encoder_dict(encoder: TableEncoder) -> dict:
    out = encoder.to_dict()
    for c in out["codings"]:
        c["categories"] = [_label(v) for v in c["categories"]]
    return out


def _write(path: str | os.PathLike, meta: dict, arrays: dict[str, np.ndarray]) -> None:
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
    # written whole or not at all: a crash while saving over a model leaves the old one
    with atomic_write(path, "wb") as fh:
        np.savez_compressed(fh, **arrays)


def save_model(class_name: str, params: dict[str, Any], model: FittedModel,
               path: str | os.PathLike) -> None:
    """Write a fitted classifier (the estimator's class name, its parameters and learned
    state) to ``path`` (``.npz``)."""
    arrays: dict[str, np.ndarray] = {}
    names = model.feature_names_in_
    meta = {
        "format": MODEL,
        "version": FORMAT_VERSION,
        "estimator": class_name,
        "params": _jsonable_params(params),
        "classes": [_label(c) for c in model.classes_],
        "n_features_in": int(model.n_features_in_),
        "feature_names_in": None if names is None else [str(c) for c in names],
        "diagnostics": (
            model.diagnostics_.to_dict() if model.diagnostics_ is not None else None
        ),
        "fit_warnings": list(model.fit_warnings_ or ()),
        "excluded_features": list(model.excluded_features_ or ()),
        "members": [
            {
                "encoder": _encoder_dict(member.encoder),
                "structure": member.structure.to_dict(),
                "selection": (
                    None if member.selection is None else member.selection.to_dict()
                ),
                "trees": _write_trees(f"member{e}_", member.tree_specs, member.trees,
                                      member.probability_tables, arrays),
                "m": member.m,
                "m_scores": {str(k): v for k, v in (member.m_scores or {}).items()},
            }
            for e, member in enumerate(model.members_)
        ],
    }
    _write(path, meta, arrays)


def read_model_meta(path: str | os.PathLike) -> dict[str, Any]:
    """The JSON document of a model file (``ValueError`` naming the file when it is not one)."""
    with _open(path, None) as (meta, _):
        return meta


def model_class_name(path: str | os.PathLike) -> str:
    """The name of the estimator class that wrote the model file ``path`` (``ValueError``
    naming the file when it is not one)."""
    return _class_name(read_model_meta(path))


def _class_name(meta: dict) -> str:
    if meta.get("version", 0) >= 2:
        return meta["estimator"]
    return _V1_CLASSES[meta["format"]]


@contextlib.contextmanager
def _open(path: str | os.PathLike,
          class_name: str | None) -> Iterator[tuple[dict[str, Any], Any]]:
    """The metadata and the open archive of a model file written by ``class_name`` (any
    estimator when None); every way a file can fail to be one (missing, not a zip archive,
    truncated, corrupt, foreign, too new, another estimator's) is an error naming it."""
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
            meta = _meta(name, data, class_name)
            yield meta, data
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
            raise ValueError(f"{name!r} is a damaged model file ({exc})") from None


def _meta(name: str, data: Any, class_name: str | None) -> dict[str, Any]:
    if "meta" not in data.files:
        raise ValueError(f"{name!r} is not an hdpbn model file (no metadata)")
    try:
        meta = json.loads(bytes(data["meta"]).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ValueError(f"{name!r} is not an hdpbn model file (unreadable metadata)") from None
    if not isinstance(meta, dict) or meta.get("format") not in _V1_CLASSES:
        raise ValueError(f"{name!r} is not an hdpbn model file")
    if meta.get("version", 0) > FORMAT_VERSION:
        raise ValueError(
            f"{name!r}: model file version {meta['version']} is newer than this hdpbn "
            f"understands ({FORMAT_VERSION}); upgrade hdpbn"
        )
    if class_name is not None and _class_name(meta) != class_name:
        raise ValueError(f"{name!r} holds a {_class_name(meta)}; load it with "
                         f"{_class_name(meta)}.load or fastpath.classifier.load_classifier")
    return meta


def _classes(meta: dict) -> np.ndarray:
    classes = meta["classes"]
    return np.asarray(classes, dtype=object if any(isinstance(c, str) for c in classes) else None)


def _feature_names(meta: dict) -> np.ndarray | None:
    names = meta["feature_names_in"]
    return None if names is None else np.asarray(names, dtype=object)


def _params(meta: dict) -> dict[str, Any]:
    """The stored parameters; a file written before the classifiers had a ``sampler``
    parameter was fitted with the paper's sampler, and says so once loaded."""
    params = dict(meta["params"])
    params.setdefault("sampler", LEGACY_SAMPLER)
    # written before selection could be sampled: every row scored the candidates
    params.setdefault("selection_rows", None)
    # written before identifiers and dates were left out: every column was kept
    params.setdefault("exclude_features", None)
    # a preset saved under its former name is the same options (no FutureWarning per load)
    params["sampler"] = RENAMED_PRESETS.get(params["sampler"], params["sampler"])
    return params


def _diagnostics(meta: dict) -> FitDiagnostics | None:
    stored = meta.get("diagnostics")
    if stored is None:
        return None
    params = _params(meta)
    options = hdp_options(params) if params.get("estimator") == "hdp" else None
    return FitDiagnostics.from_dict(stored, options)


def _m_scores(entry: dict) -> dict[float, float] | None:
    return None if entry["m"] is None else {float(k): v for k, v in entry["m_scores"].items()}


def read_model(path: str | os.PathLike,
               class_name: str | None = None) -> tuple[dict[str, Any], FittedModel]:
    """The parameters and the learned state written by :func:`save_model` (or by version 1's
    single-classifier and ensemble writers); ``class_name``: the estimator that must have
    written it (``ValueError`` otherwise)."""
    with _open(path, class_name) as (meta, data):
        arrays = {name: data[name] for name in data.files}
    if meta["format"] == MODEL and meta.get("version", 0) < 2:
        entries = [dict(meta, selection=meta.get("selection"))]  # one member, fields on top
        prefixes = [""]
    else:
        entries = meta["members"]
        prefixes = [f"member{e}_" for e in range(len(entries))]
    members = []
    for entry, prefix in zip(entries, prefixes, strict=True):
        specs, trees, tables = _read_trees(prefix, entry["trees"], arrays)
        selection = (None if entry.get("selection") is None
                     else SelectedStructure.from_dict(entry["selection"]))
        structure = (Structure.from_dict(entry["structure"]) if "structure" in entry
                     else selection.structure)  # version 1 ensembles kept the selection only
        member = Member(TableEncoder.from_dict(entry["encoder"]), structure, specs, trees,
                        tables, selection, entry["m"], _m_scores(entry))
        member.pack()
        members.append(member)
    model = FittedModel(
        classes_=_classes(meta),
        n_features_in_=meta["n_features_in"],
        feature_names_in_=_feature_names(meta),
        members_=members,
        diagnostics_=_diagnostics(meta),
        fit_warnings_=_fit_warnings(meta),
        excluded_features_=_excluded_features(meta),
    )
    return _params(meta), model
