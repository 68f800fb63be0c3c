"""The checks a model file's JSON document and arrays pass before anything is built from them.

A model file may come from anywhere (:mod:`._model_io` never unpickles, but a crafted JSON
document or array could still describe a model whose prediction kernels read out of bounds, or
whose arrays are far larger than the file). Every field is checked here for its type, its range
and its agreement with the others -- the columns of each member's encoder, the classes, the
tree specifications and the shapes of their arrays -- so that a bad file fails when it is
loaded, with a :class:`ModelFileError` naming the file and the field, and never later in a
numba kernel. The checks follow what :func:`~._model_io.save_model` writes; what a fit can
produce always passes.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..estimate._diagnostics import FitDiagnostics

#: a probability is at most 1 within this (rows need not sum to 1: m-estimates give a category
#: never seen in training 1/K at every node, and value back-off does not renormalise a row)
PROBABILITY_TOLERANCE = 1e-9
#: the largest total of a tree's leaf counts: its internal nodes add them up in int64
MAX_TOTAL_COUNT = 2**62


class ModelFileError(ValueError):
    """A file that is not a usable hdpbn model file: not a zip archive, damaged, too large for
    what it holds, or with a JSON document or arrays that do not describe a model (the message
    names the file and the field). A subclass of ``ValueError``, which loading raised before."""


def _type_name(v: Any) -> str:
    return "null" if v is None else type(v).__name__


class Checker:
    """Raises :class:`ModelFileError` naming the file ``name`` and the field at fault."""

    def __init__(self, name: str) -> None:
        self.name = name

    def fail(self, field: str, problem: str) -> ModelFileError:
        return ModelFileError(f"{self.name!r} is not a valid hdpbn model file: {field} "
                              f"{problem}")

    # ------------------------------------------------------------------ JSON values
    def dict(self, v: Any, field: str, required: tuple[str, ...] = ()) -> dict:
        if not isinstance(v, dict):
            raise self.fail(field, f"must be an object, got {_type_name(v)}")
        missing = [k for k in required if k not in v]
        if missing:
            raise self.fail(field, f"lacks {', '.join(missing)}")
        return v

    def list(self, v: Any, field: str, length: int | None = None) -> list:
        if not isinstance(v, list):
            raise self.fail(field, f"must be a list, got {_type_name(v)}")
        if length is not None and len(v) != length:
            raise self.fail(field, f"has {len(v)} entries, expected {length}")
        return v

    def int(self, v: Any, field: str, lo: int | None = None, hi: int | None = None) -> int:
        """An int in ``[lo, hi)``."""
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.fail(field, f"must be an integer, got {v!r:.60}")
        if (lo is not None and v < lo) or (hi is not None and v >= hi):
            span = f"[{'-inf' if lo is None else lo}, {'inf' if hi is None else hi})"
            raise self.fail(field, f"is {v}, out of range {span}")
        return v

    def number(self, v: Any, field: str, *, finite: bool = True, lo: float | None = None
               ) -> float:
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise self.fail(field, f"must be a number, got {v!r:.60}")
        if finite and not math.isfinite(v):
            raise self.fail(field, f"must be finite, got {v!r}")
        if lo is not None and not v >= lo:
            raise self.fail(field, f"must be >= {lo}, got {v!r}")
        return v

    def str(self, v: Any, field: str) -> str:
        if not isinstance(v, str):
            raise self.fail(field, f"must be a string, got {v!r:.60}")
        return v

    def scalar(self, v: Any, field: str) -> Any:
        """A label: a JSON scalar (str, int, float, bool, null)."""
        if not (v is None or isinstance(v, str | int | float)):
            raise self.fail(field, f"must be a label (string or number), got {_type_name(v)}")
        return v

    def optional(self, check: Callable[..., Any], v: Any, field: str, *args: Any) -> Any:
        return None if v is None else check(v, field, *args)

    def strings(self, v: Any, field: str, length: int | None = None) -> list[str]:
        for i, s in enumerate(self.list(v, field, length)):
            self.str(s, f"{field}[{i}]")
        return v

    def built(self, field: str, build: Callable[[], Any]) -> Any:
        """``build()``, its errors on a bad description (the constructors' own checks) as a
        :class:`ModelFileError` naming ``field``."""
        try:
            return build()
        except ModelFileError:
            raise
        except (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError,
                RecursionError) as exc:
            raise self.fail(field, f"is not valid ({type(exc).__name__}: {exc})") from None

    # ------------------------------------------------------------------ the document
    def meta(self, meta: dict, entries: list[dict]) -> None:
        """Every field of the JSON document ``meta`` whose members are ``entries``."""
        params = self.dict(meta.get("params"), "params")
        for key, value in params.items():
            if key == "sampler" and isinstance(value, dict):  # an HDPOptions' fields
                self.fields(value, "params['sampler']")
            elif key == "estimation" and isinstance(value, dict):  # name and options' fields
                self.str(value.get("name"), "params['estimation']['name']")
                self.fields(self.dict(value.get("options"), "params['estimation']['options']"),
                            "params['estimation']['options']")
            elif isinstance(value, list):
                for i, v in enumerate(value):
                    self.scalar(v, f"params[{key!r}][{i}]")
            else:
                self.scalar(value, f"params[{key!r}]")
        classes = self.list(meta.get("classes"), "classes")
        if not classes:
            raise self.fail("classes", "is empty")
        for i, c in enumerate(classes):
            self.scalar(c, f"classes[{i}]")
        if len(set(classes)) != len(classes):
            raise self.fail("classes", "repeats a class")
        n_features = self.int(meta.get("n_features_in"), "n_features_in", 1)
        names = self.optional(self.strings, meta.get("feature_names_in"), "feature_names_in",
                              n_features)
        if names is not None and len(set(names)) != len(names):
            # a fit refuses such columns; prediction would select a column twice by name
            raise self.fail("feature_names_in", "repeats a name")
        excluded = self.strings(meta.get("excluded_features"), "excluded_features")
        known = names if names is not None else [f"x{j}" for j in range(n_features)]
        if len(set(excluded)) != len(excluded) or not set(excluded) <= set(known):
            raise self.fail("excluded_features", "must name distinct columns of the model")
        if len(excluded) >= n_features:
            raise self.fail("excluded_features", "leaves out every column")
        diagnostics = self.optional(self.dict, meta.get("diagnostics"), "diagnostics")
        if diagnostics is not None:  # read by hdpbn diagnose from the document alone
            self.built("diagnostics", lambda: FitDiagnostics.from_dict(diagnostics))
        if not entries:
            raise self.fail("members", "is empty")
        for e, entry in enumerate(entries):
            # the members code the columns the fit did not leave out
            self.member(self.dict(entry, f"members[{e}]"), f"members[{e}]",
                        n_features - len(excluded), len(classes))

    def fields(self, fields: dict, field: str) -> None:
        """An options object's stored fields: each a JSON scalar or a list of them."""
        for name, v in fields.items():
            for i, x in enumerate(v if isinstance(v, list) else [v]):
                self.scalar(x, f"{field}[{name!r}]" + (f"[{i}]" if isinstance(v, list) else ""))

    def member(self, entry: dict, field: str, n_features: int, n_classes: int) -> None:
        encoder = self.dict(entry.get("encoder"), f"{field}.encoder", ("codings",))
        cards = self.encoder(encoder, f"{field}.encoder", n_features)
        self.dict(entry.get("structure"), f"{field}.structure")
        self.optional(self.dict, entry.get("selection"), f"{field}.selection")
        trees = self.list(entry.get("trees"), f"{field}.trees")
        if not trees:
            raise self.fail(f"{field}.trees", "is empty (the class prior is tree 0)")
        for i, t in enumerate(trees):
            self.tree(self.dict(t, f"{field}.trees[{i}]", ("child", "conditioning", "n_values",
                                                           "cardinalities")),
                      f"{field}.trees[{i}]", i, cards, n_classes)
        m = entry.get("m")
        if m is not None:
            self.number(m, f"{field}.m", lo=0)
            scores = self.dict(entry.get("m_scores", {}), f"{field}.m_scores")
            for key, value in scores.items():
                self.built(f"{field}.m_scores", lambda key=key: float(key))
                self.number(value, f"{field}.m_scores[{key!r}]", finite=False)

    def encoder(self, encoder: dict, field: str, n_features: int) -> list[int]:
        """The encoder's checked fields; the cardinality of each column."""
        spec = encoder.get("categorical_features")
        if isinstance(spec, list):
            for i, v in enumerate(spec):
                self.scalar(v, f"{field}.categorical_features[{i}]")
        elif spec is not None:
            self.str(spec, f"{field}.categorical_features")
        na_values = encoder.get("na_values")
        if na_values is not None:
            self.strings(na_values, f"{field}.na_values")
        if encoder.get("numeric_errors", "coerce") not in ("coerce", "raise"):
            raise self.fail(f"{field}.numeric_errors", f"must be 'coerce' or 'raise', got "
                            f"{encoder['numeric_errors']!r:.60}")
        if encoder.get("discretization", "mdl") not in ("mdl", "stochastic", "random"):
            raise self.fail(f"{field}.discretization",
                            "must be 'mdl', 'stochastic' or 'random', got "
                            f"{encoder['discretization']!r:.60}")
        codings = self.list(encoder["codings"], f"{field}.codings", n_features)
        return [self.coding(self.dict(c, f"{field}.codings[{j}]",
                                      ("name", "kind", "categories", "cut_points",
                                       "missing_code")), f"{field}.codings[{j}]")
                for j, c in enumerate(codings)]

    def coding(self, c: dict, field: str) -> int:
        """A column's checked coding; its cardinality."""
        if isinstance(c["name"], bool) or not isinstance(c["name"], str | int):
            raise self.fail(f"{field}.name", f"must be a string, got {c['name']!r:.60}")
        categories = self.list(c["categories"], f"{field}.categories")
        cuts = self.list(c["cut_points"], f"{field}.cut_points")
        if c["kind"] == "nominal":
            for i, v in enumerate(categories):
                self.scalar(v, f"{field}.categories[{i}]")
            if cuts:
                raise self.fail(f"{field}.cut_points", "must be empty for a nominal column")
            base = len(categories)
        elif c["kind"] == "numeric":
            if categories:
                raise self.fail(f"{field}.categories", "must be empty for a numeric column")
            for i, v in enumerate(cuts):
                self.number(v, f"{field}.cut_points[{i}]")
            if any(a > b for a, b in itertools.pairwise(cuts)):
                raise self.fail(f"{field}.cut_points", "must be sorted")
            base = len(cuts) + 1
        else:
            raise self.fail(f"{field}.kind",
                            f"must be 'nominal' or 'numeric', got {c['kind']!r:.60}")
        missing = c["missing_code"]
        if missing is not None:
            # the code after the values': the prediction kernels index tables with it
            self.int(missing, f"{field}.missing_code", base, base + 1)
        self.strings(c.get("missing_tokens", []), f"{field}.missing_tokens")
        return base + (missing is not None)

    def tree(self, t: dict, field: str, i: int, cards: list[int], n_classes: int) -> None:
        """A tree's specification, against the member's columns and the classes."""
        n_columns = len(cards)
        if i == 0:  # the class prior
            if t["child"] != -1 or t["conditioning"] != [] or t["cardinalities"] != []:
                raise self.fail(field, "must be the class prior (child -1, no conditioning)")
            self.int(t["n_values"], f"{field}.n_values", n_classes, n_classes + 1)
        else:
            child = self.int(t["child"], f"{field}.child", 0, n_columns)
            self.int(t["n_values"], f"{field}.n_values", cards[child], cards[child] + 1)
        conditioning = self.list(t["conditioning"], f"{field}.conditioning")
        given = self.list(t["cardinalities"], f"{field}.cardinalities", len(conditioning))
        for d, (col, card) in enumerate(zip(conditioning, given, strict=True)):
            col = self.int(col, f"{field}.conditioning[{d}]", -1, n_columns)
            want = n_classes if col < 0 else cards[col]
            # the tree's lookups are sized by these: the codes of the column must fit them
            self.int(card, f"{field}.cardinalities[{d}]", want, want + 1)
        self.optional(self.scalar, t.get("child_name"), f"{field}.child_name")
        self.optional(self.strings, t.get("conditioning_names"), f"{field}.conditioning_names",
                      len(conditioning))

    # ------------------------------------------------------------------ arrays
    def integers(self, a: np.ndarray, field: str, n_columns: int) -> np.ndarray:
        if a.dtype.kind not in "iu" or a.ndim != 2 or a.shape[1] != n_columns:
            raise self.fail(field, f"must be integers of shape (L, {n_columns}), got "
                                   f"{a.dtype} of shape {a.shape}")
        return a

    def leaves(self, paths: np.ndarray, counts: np.ndarray, field: str, depth: int,
               n_values: int) -> None:
        """A tree's leaf paths and counts (their values are checked by the tree's builder)."""
        self.integers(paths, f"{field}_paths", depth)
        self.integers(counts, f"{field}_counts", n_values)
        if counts.shape[0] != paths.shape[0]:
            raise self.fail(f"{field}_counts", f"has {counts.shape[0]} rows, its paths "
                                               f"{paths.shape[0]}")
        if counts.size and (counts.min() < 0 or counts.max() > MAX_TOTAL_COUNT
                            or counts.sum(dtype=np.float64) > MAX_TOTAL_COUNT):
            raise self.fail(f"{field}_counts", "must be non-negative counts (that int64 can "
                                               "add up)")

    def table(self, table: np.ndarray, field: str, i: int, shape: tuple[int, int]) -> None:
        """Table ``i``: the probabilities of each node of its tree, ``shape`` (nodes,
        values)."""
        if table.dtype.kind != "f" or table.shape != shape:
            raise self.fail(field, f"(table {i} does not match its tree: floats of shape "
                                   f"{shape} expected, got {table.dtype} of shape "
                                   f"{table.shape})")
        with np.errstate(invalid="ignore"):
            ok = bool(np.isfinite(table).all() and (table >= 0).all()
                      and (table <= 1 + PROBABILITY_TOLERANCE).all())
        if not ok:
            raise self.fail(field, "must hold probabilities (finite, in [0, 1])")
