"""Saving and loading fitted classifiers without pickle.

A model file is one ``.npz`` archive: numeric arrays (every member's trees: leaf paths, leaf
counts and probability table, prefixed ``member<e>_``) plus one JSON document (the classifier's
class and parameters, the classes, and per member the encoder's codings, the structure, the
selection, the tree specifications and m). A single classifier is a file with one member.
Loading uses ``np.load(..., allow_pickle=False)``, so a model file cannot run code. Class labels
and category labels must be JSON values (str, int, float, bool); others are refused at save time
rather than silently changed.

The format is version :data:`FORMAT_VERSION`, hdpbn 0.1.0's, whether or not the members have
discriminative weights; files of other versions (those of development states before 0.1.0)
are refused, naming the version. The classifier's parameters are stored as JSON values; a
``sampler`` that is an :class:`~fastpath.estimate.HDPOptions` as a mapping of its fields, and an
``estimation`` that is an instance of a registered estimator's options class (an
:class:`~fastpath.estimate.HLSOptions`, or any registered estimator's dataclass,
:mod:`fastpath.pipeline._registry`) as ``{"name": <the estimation method's name>, "options":
<its fields>}``; such a file loads where that estimation method is registered. The JSON
document names the class that wrote it (``"classifier"``), which loading checks.
``tests/data/models-0.1.0`` holds files of this format, which every later version must load
and predict from bit for bit.

Untrusted files
---------------
A model file may come from anywhere, so loading reads it defensively, in memory and time
bounded by what the file declares and by the limits below, and checks everything before it is
used. Every way a file can fail to be a usable model raises :class:`ModelFileError` (a
``ValueError``) naming the file and what is wrong; a missing file raises
``FileNotFoundError``:

* not a zip archive, truncated or damaged (a member's CRC, its compressed data), members
  compressed or encrypted in ways ``np.savez`` never writes;
* too large: more than :data:`MAX_MEMBERS` members, members whose declared sizes add up to more
  than :data:`MAX_MODEL_BYTES`, a JSON document over :data:`MAX_META_BYTES`, an array no model
  file has (refused unread), or a member larger than 1 MiB that declares it expands more than
  :data:`MAX_RATIO` times (more than deflate can: a forged size). A member is never read past
  its declared size, and deflate expands at most about 1000 times, so loading holds at most
  about 1000 times the file's size (and :data:`MAX_MODEL_BYTES`);
* an array whose ``.npy`` header does not fit its member (its shape times its item size is not
  the member's size), of Python objects (never unpickled), or of a type a model never holds;
* a JSON document that is not UTF-8 JSON, nested too deeply, not an hdpbn model, of a newer
  version, or another classifier's (when loading into a given class);
* fields of the wrong type, ids and indices out of range, or fields that disagree: every
  tree's child, conditioning columns and cardinalities against its member's encoder and the
  classes, its leaf paths and counts against its specification, its probability table against
  its tree (probabilities in [0, 1]), the structures against the number of columns
  (:mod:`._model_checks`); and, once loaded into a classifier (``load``), the parameters
  against the classifier's own checks.

So a crafted file fails when it is loaded, never later in a prediction kernel.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import re
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
from ..estimate.hdp._options import HDPOptions
from ..pipeline._config import hdp_options
from ..pipeline._fitted import FittedModel, Member
from ..pipeline._intervals import from_stored, model_draws, stored_draws
from ..pipeline._registry import ESTIMATORS, estimator_of, uses_sampler
from ..structure._graphs import Structure
from ..structure._selective import SelectedStructure
from ..utils._files import atomic_write
from ._model_checks import Checker, ModelFileError

__all__ = ["ModelFileError", "model_class_name", "read_model", "read_model_meta", "save_model"]

#: the model-file format of hdpbn 0.1.0: the one version written and read. Its number follows
#: the development states' versions 1 to 3, never to be read as one of them.
FORMAT_VERSION = 4
#: the ``format`` of every model file
MODEL = "hdpbn-model"

#: the most members (arrays) a model file may have
MAX_MEMBERS = 1_000_000
#: the most bytes a model file's members may expand to, together (they are all read)
MAX_MODEL_BYTES = 16 * 2**30
#: the most bytes of the JSON document
MAX_META_BYTES = 1 * 2**30
#: the most a member larger than :data:`RATIO_FLOOR` may declare it expands (its declared size
#: over its compressed size): deflate cannot expand more than 1032 times, and a model's arrays
#: do come close (the counts of a wide, sparse tree are mostly zeros), so a larger ratio is a
#: forged size; memory is bounded by this ratio times the file's size and by MAX_MODEL_BYTES
MAX_RATIO = 1100
RATIO_FLOOR = 2**20
#: the arrays of a model file: its JSON document, and each member's trees'
_MEMBER_NAME = re.compile(
    r"meta|member\d+_tree\d+_(?:paths|counts|table|draws|alphas)|member\d+_term_weights")
#: the longest ``.npy`` header read (numpy's own default limit)
MAX_HEADER_BYTES = 10_000


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
        elif key == "class_weight" and isinstance(value, dict):  # label, weight, label, ...
            value = [_label(v) for pair in value.items() for v in pair]
        elif key == "sampler" and isinstance(value, HDPOptions):  # field -> value (or values)
            out[key] = _option_fields(value, "sampler")
            continue
        elif key == "estimation" and not isinstance(value, str):  # a registered options class
            record, _ = estimator_of(value)
            out[key] = {"name": record.name, "options": _option_fields(value, "estimation")}
            continue
        out[key] = _label(value) if not isinstance(value, list) else value
    return out


def _option_fields(options: Any, key: str) -> dict[str, Any]:
    """The fields of an options object (a dataclass: an ``HDPOptions``, a registered
    estimator's options) as JSON values, a tuple as a list; ``ValueError`` naming the
    parameter for another object or a field that is not a JSON value."""
    if not dataclasses.is_dataclass(options) or isinstance(options, type):
        raise ValueError(f"{key}={options!r:.80}: a model file stores options that are a "
                         f"dataclass of JSON values; options of type {type(options).__name__} "
                         "cannot be saved")
    out = {}
    for f in dataclasses.fields(options):
        v = getattr(options, f.name)
        try:
            out[f.name] = [_label(x) for x in v] if isinstance(v, tuple | list) else _label(v)
        except TypeError as exc:
            raise ValueError(f"{key}={options!r:.80}: field {f.name!r} cannot be saved "
                             f"({exc})") from None
    return out


def _options_of(stored: dict) -> Any:
    """The options object of a stored ``estimation`` (:func:`_option_fields`' mapping, with
    the estimation method's name): an instance of that registered estimator's options class,
    a list field as a tuple (``ValueError`` when the name is not registered with an options
    class)."""
    name, fields = stored.get("name"), stored.get("options")
    record = ESTIMATORS.get(name) if isinstance(name, str) else None
    if record is None or record.options is None or not isinstance(fields, dict):
        raise ValueError(f"estimation {name!r:.60} with options is not a registered estimation "
                         f"method with an options class (registered: {tuple(ESTIMATORS)})")
    return record.options(**{k: tuple(v) if isinstance(v, list) else v
                             for k, v in fields.items()})


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


def _read_trees(prefix: str, trees_meta: list[dict], arrays: dict[str, np.ndarray],
                check: Checker):
    """The specs, context trees and (read-only) tables written by :func:`_write_trees` (their
    specifications already checked against the member: :meth:`Checker.tree`)."""
    specs, trees, tables = [], [], []
    for i, t in enumerate(trees_meta):
        spec = TreeSpec(t["child"], tuple(t["conditioning"]), t["n_values"],
                        tuple(t["cardinalities"]))
        specs.append(spec)
        field = f"{prefix}tree{i}"
        paths, counts, table = (_array(arrays, f"{field}_{part}", check)
                                for part in ("paths", "counts", "table"))
        check.leaves(paths, counts, field, len(spec.cardinalities), spec.n_values)
        names = t.get("conditioning_names")
        trees.append(check.built(f"{field}_paths", lambda paths=paths, counts=counts, t=t,
                                 spec=spec, names=names: ContextTree.from_leaf_counts(
            paths, counts, spec.cardinalities, spec.n_values, child_name=t.get("child_name"),
            conditioning_names=names)))
        check.table(table, f"{field}_table", i, (trees[-1].n_nodes, spec.n_values))
        table = np.array(table, dtype=np.float64)
        table.flags.writeable = False
        tables.append(table)
    return specs, trees, tables


def _array(arrays: dict[str, np.ndarray], key: str, check: Checker) -> np.ndarray:
    if key not in arrays:
        raise check.fail(key, "is missing (an array of the model)")
    return arrays[key]


def _fit_warnings(meta: dict, check: Checker) -> tuple[str, ...]:
    """The fit's recorded warnings."""
    return tuple(check.strings(meta.get("fit_warnings"), "fit_warnings"))


def _excluded_features(meta: dict) -> tuple[str, ...]:
    """The columns the fit left out (checked by :meth:`Checker.meta`)."""
    return tuple(meta["excluded_features"])


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


def _write_draws(model: FittedModel, arrays: dict[str, np.ndarray]) -> int | None:
    """The tables' posterior draws that credible intervals read (a fit whose sampler kept
    them: :mod:`fastpath.pipeline._intervals`, at most ``DEFAULT_INTERVAL_DRAWS``), each
    member tree's as ``member<e>_tree<i>_draws`` (draws, nodes, values) and ``_alphas``
    (draws, depth); their number, or None (nothing written: a model without draws)."""
    source = model.posterior_draws_ or model.hdp_results_
    if source is None:
        return None
    try:
        draws = model_draws(model.members_, source)
    except ValueError:  # no draws (the default), or not every tree's
        return None
    for e, member in enumerate(stored_draws(model.members_, draws)):
        for i, (tables, alphas) in enumerate(member):
            arrays[f"member{e}_tree{i}_draws"] = np.asarray(tables, dtype=np.float64)
            arrays[f"member{e}_tree{i}_alphas"] = np.asarray(alphas, dtype=np.float64)
    return draws.n_draws


def _read_draws(meta: dict, members: list[Member], arrays: dict[str, np.ndarray],
                check: Checker) -> Any:
    """The draws :func:`_write_draws` wrote (None when the file has none), every array
    checked against its tree: probabilities of every node, positive concentrations, the
    same number of draws everywhere."""
    n_draws = meta.get("posterior_draws")
    if n_draws is None:
        if any(k.endswith(("_draws", "_alphas")) for k in arrays):
            raise check.fail("posterior_draws", "is missing, but the file holds draws")
        return None
    n_draws = check.int(n_draws, "posterior_draws", 1, 10**9)
    stored = []
    for e, member in enumerate(members):
        stored.append([])
        for i, tree in enumerate(member.trees):
            field = f"member{e}_tree{i}"
            tables = _array(arrays, f"{field}_draws", check)
            alphas = _array(arrays, f"{field}_alphas", check)
            shape = (n_draws, tree.n_nodes, tree.n_values)
            if tables.dtype.kind != "f" or tables.shape != shape:
                raise check.fail(f"{field}_draws", f"must be floats of shape {shape}, got "
                                                   f"{tables.dtype} of shape {tables.shape}")
            if alphas.dtype.kind != "f" or alphas.shape != (n_draws, tree.depth):
                raise check.fail(f"{field}_alphas", f"must be floats of shape "
                                                    f"{(n_draws, tree.depth)}, got "
                                                    f"{alphas.dtype} of shape {alphas.shape}")
            with np.errstate(invalid="ignore"):
                if not (np.isfinite(tables).all() and (tables >= 0).all()
                        and (tables <= 1 + 1e-9).all()):
                    raise check.fail(f"{field}_draws", "must hold probabilities (finite, in "
                                                       "[0, 1])")
                if not (np.isfinite(alphas).all() and (alphas > 0).all()):
                    raise check.fail(f"{field}_alphas", "must be positive concentrations")
            stored[-1].append((tables, alphas))
    return from_stored(stored)


def save_model(class_name: str, params: dict[str, Any], model: FittedModel,
               path: str | os.PathLike) -> None:
    """Write a fitted classifier (its class name, its parameters and learned
    state) to ``path`` (``.npz``)."""
    arrays: dict[str, np.ndarray] = {}
    names = model.feature_names_in_
    meta = {
        "format": MODEL,
        "version": FORMAT_VERSION,
        "classifier": class_name,
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
                "term_weights": _write_weights(f"member{e}_", member.term_weights, arrays),
            }
            for e, member in enumerate(model.members_)
        ],
    }
    if model.discriminative_penalty_ is not None:
        meta["discriminative_penalty"] = float(model.discriminative_penalty_)
    n_draws = _write_draws(model, arrays)
    if n_draws is not None:  # a model without draws writes the file it always wrote
        meta["posterior_draws"] = n_draws
    _write(path, meta, arrays)


def read_model_meta(path: str | os.PathLike) -> dict[str, Any]:
    """The JSON document of a model file (:class:`ModelFileError`, a ``ValueError``, naming
    the file when it is not one; its arrays are not read)."""
    with _open(path, None) as (meta, _):
        return meta


def with_article(name: str) -> str:
    """``name`` after its indefinite article, as it is read aloud: "a BayesNetClassifier",
    "an ESKDBClassifier" (a name starting with a vowel letter)."""
    return f"{'an' if name[:1].upper() in 'AEIOU' else 'a'} {name}"


def model_class_name(path: str | os.PathLike) -> str:
    """The name of the classifier class that wrote the model file ``path``
    (:class:`ModelFileError` naming the file when it is not one)."""
    return read_model_meta(path)["classifier"]


class _Archive:
    """The ``.npy`` members of an open zip archive, each read only after its declared sizes
    passed the limits of the module docstring (checked for every member when opened)."""

    def __init__(self, name: str, zf: zipfile.ZipFile) -> None:
        self.name = name
        self.zf = zf
        infos = zf.infolist()
        if len(infos) > MAX_MEMBERS:
            raise ModelFileError(f"{name!r} is not an hdpbn model file: {len(infos)} archive "
                                 f"members, more than a model has ({MAX_MEMBERS})")
        self.infos: dict[str, zipfile.ZipInfo] = {}
        total = 0
        for info in infos:
            if not info.filename.endswith(".npy"):
                continue  # np.savez writes .npy members only; anything else is never read
            if not _MEMBER_NAME.fullmatch(info.filename[:-4]):
                # refused unread: a model's arrays are its document and its trees' arrays
                raise ModelFileError(
                    f"{name!r} is not an hdpbn model file: it holds an array "
                    f"{info.filename!r}, which no model file has")
            size, packed = info.file_size, max(info.compress_size, 1)
            if size > RATIO_FLOOR and size > MAX_RATIO * packed:
                raise ModelFileError(
                    f"{name!r} is not an hdpbn model file: member {info.filename!r} would "
                    f"expand {size / packed:.0f} times, to {size} bytes, more than deflate "
                    "can (its declared size is a lie)")
            total += size
            self.infos[info.filename[:-4]] = info
        if total > MAX_MODEL_BYTES:
            raise ModelFileError(
                f"{name!r} is not an hdpbn model file: its members would expand to {total} "
                f"bytes, more than the {MAX_MODEL_BYTES} a model file may hold "
                "(fastpath.classifier._model_io.MAX_MODEL_BYTES)")

    @property
    def files(self) -> list[str]:
        return list(self.infos)

    def array(self, key: str, max_bytes: int | None = None) -> np.ndarray:
        """Member ``key``'s array: its ``.npy`` header read first, and the data only when the
        shape and type it declares fill the member exactly (at most ``max_bytes``)."""
        info = self.infos[key]
        where = f"{self.name!r} is not a valid hdpbn model file: array {key!r}"
        if max_bytes is not None and info.file_size > max_bytes:
            raise ModelFileError(f"{where} has {info.file_size} bytes, more than "
                                 f"{max_bytes}")
        with self.zf.open(info) as fh:
            try:
                version = np.lib.format.read_magic(fh)
                if version == (1, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_1_0(
                        fh, max_header_size=MAX_HEADER_BYTES)
                elif version == (2, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_2_0(
                        fh, max_header_size=MAX_HEADER_BYTES)
                else:
                    raise ValueError(f".npy format version {version} is not one np.savez "
                                     "writes")
            except _ZIP_ERRORS:
                raise
            except Exception as exc:  # numpy parses the header as a Python literal: a bad
                # one raises ValueError, SyntaxError, tokenize.TokenError, RecursionError, ...
                raise ModelFileError(f"{where} has no valid .npy header ({exc})") from None
            if dtype.hasobject:
                raise ModelFileError(f"{where} holds Python objects, which a model file never "
                                     "has (they are not unpickled)")
            if dtype.kind not in "biuf" or dtype.fields is not None or dtype.subdtype:
                raise ModelFileError(f"{where} is of type {dtype}, which a model never holds")
            n_bytes = math.prod(shape) * dtype.itemsize
            if n_bytes != info.file_size - fh.tell():
                raise ModelFileError(
                    f"{where} declares shape {shape} of {dtype} ({n_bytes} bytes), but its "
                    f"member holds {info.file_size - fh.tell()} bytes of data")
            data = fh.read(n_bytes)  # never more than the member's declared size
        if len(data) != n_bytes:
            raise ModelFileError(f"{where} is truncated")
        return np.frombuffer(data, dtype=dtype).reshape(shape, order="F" if fortran else "C")


#: what reading a damaged zip archive or one of its members raises (zipfile raises
#: NotImplementedError for a compression method it lacks, RuntimeError for an encrypted member)
_ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError,
               RuntimeError)


@contextlib.contextmanager
def _open(path: str | os.PathLike,
          class_name: str | None) -> Iterator[tuple[dict[str, Any], _Archive]]:
    """The metadata and the open archive of a model file written by ``class_name`` (any
    classifier when None); every way a file can fail to be one (not a zip archive, truncated,
    corrupt, too large, foreign, too new, another classifier's) is a :class:`ModelFileError`
    naming it, and a missing file a ``FileNotFoundError``."""
    name = os.fspath(path)
    if not Path(name).exists():
        raise FileNotFoundError(f"no such file: {name!r}")
    try:
        zf = zipfile.ZipFile(name)
    except (*_ZIP_ERRORS, ValueError):
        raise ModelFileError(f"{name!r} is not an hdpbn model file (not an .npz archive)"
                             ) from None
    with zf:
        try:
            archive = _Archive(name, zf)
            meta = _meta(name, archive, class_name)
        except _ZIP_ERRORS as exc:
            raise ModelFileError(f"{name!r} is a damaged model file ({exc})") from None
        yield meta, archive


def _read_arrays(archive: _Archive) -> dict[str, np.ndarray]:
    """Every array of the archive (all of them, so that none is left unchecked)."""
    try:
        return {key: archive.array(key) for key in archive.files if key != "meta"}
    except _ZIP_ERRORS as exc:
        raise ModelFileError(f"{archive.name!r} is a damaged model file ({exc})") from None


def _meta(name: str, archive: _Archive, class_name: str | None) -> dict[str, Any]:
    if "meta" not in archive.infos:
        raise ModelFileError(f"{name!r} is not an hdpbn model file (no metadata)")
    raw = archive.array("meta", MAX_META_BYTES)
    if raw.dtype != np.uint8 or raw.ndim != 1:
        raise ModelFileError(f"{name!r} is not an hdpbn model file (its metadata is not a "
                             "JSON document)")
    try:
        meta = json.loads(str(memoryview(raw), "utf-8"))  # decoded without a copy of the bytes
    except RecursionError:
        raise ModelFileError(f"{name!r} is not an hdpbn model file (its metadata is nested "
                             "too deeply)") from None
    except ValueError:  # not UTF-8, not JSON, or an integer of more digits than Python reads
        raise ModelFileError(f"{name!r} is not an hdpbn model file (unreadable metadata)"
                             ) from None
    if not isinstance(meta, dict) or meta.get("format") != MODEL:
        raise ModelFileError(f"{name!r} is not an hdpbn model file")
    version = meta.get("version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise ModelFileError(f"{name!r} is not a valid hdpbn model file: version must be an "
                             f"integer, got {version!r:.60}")
    if version > FORMAT_VERSION:
        raise ModelFileError(
            f"{name!r}: model file version {version} is newer than this hdpbn understands "
            f"({FORMAT_VERSION}); upgrade hdpbn")
    if version < FORMAT_VERSION:
        raise ModelFileError(
            f"{name!r}: model file version {version} was written by a development version of "
            f"hdpbn before 0.1.0, whose format ({FORMAT_VERSION}) this one reads; fit the model "
            "again")
    if not isinstance(meta.get("classifier"), str):
        raise ModelFileError(f"{name!r} is not a valid hdpbn model file: classifier must be "
                             f"a class name, got {meta.get('classifier')!r:.60}")
    if class_name is not None and meta["classifier"] != class_name:
        raise ModelFileError(f"{name!r} holds {with_article(meta['classifier'])}; load it with "
                             f"{meta['classifier']}.load or fastpath.classifier.load_classifier")
    check = Checker(name)
    check.meta(meta, check.list(meta.get("members"), "members"))
    return meta


def _classes(meta: dict) -> np.ndarray:
    classes = meta["classes"]
    return np.asarray(classes, dtype=object if any(isinstance(c, str) for c in classes) else None)


def _feature_names(meta: dict) -> np.ndarray | None:
    names = meta["feature_names_in"]
    return None if names is None else np.asarray(names, dtype=object)


def _params(meta: dict) -> dict[str, Any]:
    """The stored parameters, a class weight's dict, the sampler's and the estimation
    method's options rebuilt."""
    params = dict(meta["params"])
    weights = params.get("class_weight")  # a dict: its labels and weights in turn
    if isinstance(weights, list):
        if len(weights) % 2:
            raise ValueError("class_weight must list labels and weights in pairs")
        params["class_weight"] = dict(zip(weights[::2], weights[1::2], strict=True))
    if isinstance(params.get("sampler"), dict):  # the fields of an HDPOptions
        params["sampler"] = HDPOptions(**params["sampler"])
    if isinstance(params.get("estimation"), dict):  # a registered estimator's options
        params["estimation"] = _options_of(params["estimation"])
    return params


def _diagnostics(meta: dict) -> FitDiagnostics | None:
    stored = meta.get("diagnostics")
    if stored is None:
        return None
    params = _params(meta)
    options = hdp_options(params) if uses_sampler(params.get("estimation")) else None
    return FitDiagnostics.from_dict(stored, options)


def _m_scores(entry: dict) -> dict[float, float] | None:
    if entry.get("m") is None:
        return None
    return {float(k): v for k, v in entry.get("m_scores", {}).items()}


def _structures(entry: dict, field: str, n_features: int, check: Checker
                ) -> tuple[Structure, SelectedStructure | None]:
    """A member's structure and selection, checked against the number of columns."""
    selection = None
    if entry.get("selection") is not None:
        selection = check.built(f"{field}.selection",
                                lambda: SelectedStructure.from_dict(entry["selection"]))
        rmse = selection.rmse
        if (rmse.ndim != 2 or not 1 <= selection.n_selected <= rmse.shape[0]
                or not 0 <= selection.k_selected < rmse.shape[1]):
            raise check.fail(f"{field}.selection", "selects outside its table of scores")
        for part in ("structure", "full_structure"):
            if getattr(selection, part).n_attributes != n_features:
                raise check.fail(f"{field}.selection.{part}",
                                 f"does not have the model's {n_features} attributes")
        if any(not 0 <= a < n_features for a in selection.attributes):
            raise check.fail(f"{field}.selection.attributes", "are not attributes of the model")
    structure = check.built(f"{field}.structure",
                            lambda: Structure.from_dict(entry["structure"]))
    if structure.n_attributes != n_features:
        raise check.fail(f"{field}.structure",
                         f"has {structure.n_attributes} attributes, the model {n_features}")
    return structure, selection


def read_model(path: str | os.PathLike,
               class_name: str | None = None) -> tuple[dict[str, Any], FittedModel]:
    """The parameters and the learned state written by :func:`save_model`; ``class_name``: the
    classifier that must have written it. Every field is checked first (:class:`ModelFileError`
    naming the file and the field, see the module docstring)."""
    with _open(path, class_name) as (meta, archive):
        arrays = _read_arrays(archive)
    check = Checker(os.fspath(path))
    entries = meta["members"]
    prefixes = [f"member{e}_" for e in range(len(entries))]
    n_features = meta["n_features_in"]
    excluded = _excluded_features(meta)
    members = []
    for e, (entry, prefix) in enumerate(zip(entries, prefixes, strict=True)):
        # the members' attributes: the columns the fit did not leave out
        structure, selection = _structures(entry, f"members[{e}]", n_features - len(excluded),
                                           check)
        specs, trees, tables = _read_trees(prefix, entry["trees"], arrays, check)
        encoder = check.built(f"members[{e}].encoder",
                              lambda entry=entry: TableEncoder.from_dict(entry["encoder"]))
        members.append(Member(
            encoder=encoder, structure=structure, tree_specs=specs, trees=trees,
            probability_tables=tables, selection=selection, m=entry.get("m"),
            m_scores=_m_scores(entry),
            term_weights=_read_weights(entry, f"member{e}_", arrays, len(trees),
                                       len(meta["classes"]), check)))
    params = check.built("params", lambda: _params(meta))
    model = FittedModel(
        classes_=_classes(meta),
        n_features_in_=n_features,
        feature_names_in_=_feature_names(meta),
        members_=members,
        diagnostics_=check.built("diagnostics", lambda: _diagnostics(meta)),
        fit_warnings_=_fit_warnings(meta, check),
        excluded_features_=excluded,
        posterior_draws_=_read_draws(meta, members, arrays, check),
        discriminative_penalty_=check.optional(check.number, meta.get("discriminative_penalty"),
                                               "discriminative_penalty"),
    )
    return params, model


def _write_weights(prefix: str, weights: np.ndarray | None, arrays: dict[str, np.ndarray]
                   ) -> bool:
    """Store a member's discriminative weights (trees x classes) as ``<prefix>term_weights``;
    whether it has any."""
    if weights is None:
        return False
    arrays[f"{prefix}term_weights"] = np.asarray(weights, np.float64)
    return True


def _read_weights(entry: dict, prefix: str, arrays: dict[str, np.ndarray], n_trees: int,
                  n_classes: int, check: Checker) -> np.ndarray | None:
    """A member's weights :func:`_write_weights` stored (None when it has none), checked:
    finite, non-negative, one row per tree and a column per class."""
    field = f"{prefix}term_weights"
    if not entry.get("term_weights"):
        if field in arrays:
            raise check.fail(field, "is in the file, but its member says it has no weights")
        return None
    weights = _array(arrays, field, check)
    if weights.dtype.kind != "f" or weights.shape != (n_trees, n_classes):
        raise check.fail(field, f"must be floats of shape {(n_trees, n_classes)}, got "
                                f"{weights.dtype} of shape {weights.shape}")
    if not (np.isfinite(weights).all() and (weights >= 0).all()):
        raise check.fail(field, "must hold finite, non-negative weights")
    return weights
