"""Untrusted inputs (issue 29): model files, CSV and ARFF that may have been crafted.

A model file that is not a usable model -- not a zip archive, truncated, a zip bomb, a ``.npy``
header that does not fit its member, a JSON nesting bomb, fields of the wrong type, ids out of
range, arrays of the wrong shape -- is refused when it is loaded with
:class:`~fastpath.classifier.ModelFileError` (a ``ValueError``) naming the file, in bounded time
and memory; a file that loads predicts finite probabilities summing to 1. Hypothesis mutates
valid model files (their bytes, the raw bytes of a member, the JSON document field by field,
the arrays) and checks that loading raises nothing else. ``read_table`` on mutated CSV and
ARFF text returns a table or raises its documented ``ValueError`` (never a
``UnicodeDecodeError``: undecodable bytes fall back to Latin-1).
"""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import struct
import time
import tracemalloc
import warnings
import zipfile

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastpath import BayesNetClassifier, ESKDBClassifier, HDPOptions, read_table
from fastpath.classifier import ModelFileError, _model_io, load_classifier
from fastpath.cli import main
from fastpath.io import load_dataset

FUZZ = settings(max_examples=50, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])


# ====================================================================== valid files
class Valid:
    """A valid model file (its bytes, JSON document and arrays) and rows to predict."""

    def __init__(self, clf, X, path) -> None:
        clf.save(path)
        self.data = path.read_bytes()
        self.X = X.iloc[:12].reset_index(drop=True)
        self.proba = clf.predict_proba(self.X)
        with np.load(io.BytesIO(self.data), allow_pickle=False) as npz:
            self.arrays = {n: npz[n] for n in npz.files if n != "meta"}
            self.meta = json.loads(bytes(npz["meta"]).decode("utf-8"))


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("valid")
    car_X, car_y = load_dataset("car")  # nominal columns
    credit_X, credit_y = load_dataset("credit-a")  # nominal + numeric, missing values
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kdb = BayesNetClassifier("kdb", k=1, estimation="m", m=1.0).fit(car_X.iloc[::8],
                                                                       car_y[::8])
        eskdb = ESKDBClassifier(2, 1, "m", m=1.0, random_state=0).fit(
            credit_X.iloc[::4], credit_y[::4])
        # HDP estimates and a selection: the diagnostics and the selection record are saved
        skdb = BayesNetClassifier("skdb", k=1, estimation="hdp",
                                  sampler=HDPOptions.preset("adaptive", n_iter=20),
                                  random_state=0).fit(credit_X.iloc[::4], credit_y[::4])
    return {"kdb": Valid(kdb, car_X, folder / "kdb.npz"),
            "eskdb": Valid(eskdb, credit_X, folder / "eskdb.npz"),
            "skdb-hdp": Valid(skdb, credit_X, folder / "skdb-hdp.npz")}


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """One path that every fuzzed example overwrites (hypothesis reruns the test body)."""
    return tmp_path_factory.mktemp("fuzz") / "suspicious-model.npz"


def _pack(meta, arrays, compressed: bool = True) -> bytes:
    buf = io.BytesIO()
    meta_bytes = meta if isinstance(meta, bytes) else json.dumps(meta).encode("utf-8")
    save = np.savez_compressed if compressed else np.savez
    save(buf, **arrays, meta=np.frombuffer(meta_bytes, dtype=np.uint8))
    return buf.getvalue()


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, raw in members.items():
            z.writestr(name, raw)
    return buf.getvalue()


def _npy(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    return buf.getvalue()


def _members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return {info.filename: z.read(info) for info in z.infolist()}


def check_outcome(path, data: bytes, valid: Valid) -> str:
    """Load ``data`` (written to ``path``): refused with ``ModelFileError`` naming the file, or
    loaded and then predicting finite probabilities that sum to 1 (or refusing rows whose
    column names no longer match the model's). Anything else propagates and fails the test."""
    path.write_bytes(data)
    try:
        clf = load_classifier(path)
    except ModelFileError as exc:
        assert str(path) in str(exc)
        assert "allow_pickle" not in str(exc)
        return "refused"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            proba = clf.predict_proba(valid.X)
        except ValueError as exc:
            # a mutated feature name: the user's rows do not fit the model, said as for any
            assert "feature names should match" in str(exc)
            return "rows refused"
    assert proba.shape == (len(valid.X), len(clf.classes_))
    assert np.isfinite(proba).all()
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-9)
    return "loaded"


def test_the_valid_files_load_and_predict_as_saved(models, work):
    for valid in models.values():
        assert check_outcome(work, valid.data, valid) == "loaded"
        np.testing.assert_array_equal(load_classifier(work).predict_proba(valid.X), valid.proba)
        # repacked the way the tests below repack mutations: still the same model
        assert check_outcome(work, _pack(valid.meta, valid.arrays), valid) == "loaded"


def test_tables_whose_rows_do_not_sum_to_1_load(tmp_path):
    """m-estimates with value back-off do not renormalise a row: such files are valid."""
    rng = np.random.default_rng(5)
    a = rng.choice(["x", "y", "z"], 400)
    y = rng.integers(0, 2, 400)
    b = np.where(y == 0, a, rng.choice(["x", "y", "z"], 400))  # zero joint counts when y = 0
    X = pd.DataFrame({"a": a, "b": b})
    clf = BayesNetClassifier("kdb", k=1, estimation="m", m_backoff="value").fit(X, y)
    sums = np.concatenate([t.sum(axis=1) for t in clf.members_[0].probability_tables])
    assert np.abs(sums - 1).max() > 0.01
    clf.save(tmp_path / "value.npz")
    loaded = load_classifier(tmp_path / "value.npz")
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))


# ====================================================================== crafted archives
def _refused(path, data: bytes, match: str) -> ModelFileError:
    path.write_bytes(data)
    with pytest.raises(ModelFileError, match=match) as info:
        load_classifier(path)
    assert str(path) in str(info.value)
    return info.value


def _bounded(path, data: bytes, match: str, *, seconds: float = 2.0,
             peak_bytes: int = 8 * 2**20) -> None:
    """Refused quickly, and without allocating what the file claims to hold."""
    path.write_bytes(data)
    tracemalloc.start()
    start = time.perf_counter()
    try:
        with pytest.raises(ModelFileError, match=match):
            load_classifier(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - start < seconds
    assert peak < peak_bytes, f"peak {peak} bytes"


def test_a_zip_bomb_member_is_refused_before_it_is_expanded(models, work):
    # 32 MiB of zeros deflate to about 32 KiB, under an array name no model file has
    bomb = dict(models["kdb"].arrays, padding=np.zeros(4 * 2**20))
    data = _pack(models["kdb"].meta, bomb)
    assert len(data) < 200_000
    _bounded(work, data, r"holds an array 'padding\.npy', which no model file has")
    # under a model's array name, declaring more than deflate can expand: a forged size
    members = _members(models["kdb"].data)
    members["member0_tree1_table.npy"] = _npy(np.zeros(4 * 2**20))
    forged = _lie_about_size(_zip(members), "member0_tree1_table.npy", 2**31)
    _bounded(work, forged, r"member 'member0_tree1_table\.npy' would expand \d+ times.*"
                           r"more than deflate can")


def test_a_sparse_model_whose_arrays_compress_a_thousand_times_loads(tmp_path):
    """The counts of a wide, sparse tree are mostly zeros: they deflate almost as far as
    deflate goes (about 1000 times), and such a model is no zip bomb."""
    rng = np.random.default_rng(0)
    n = 1400  # a tree of 1,400 seen contexts x 200 values: 2.2 MB of counts, mostly zeros
    X = pd.DataFrame({"id": [f"c{i}" for i in range(n)],
                      "x": rng.choice([f"v{v}" for v in range(200)], n)})
    y = rng.choice(["p", "q"], n)
    model = BayesNetClassifier("kdb", k=1, estimation="m", exclude_features=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y)
    model.save(tmp_path / "sparse.npz")
    with zipfile.ZipFile(tmp_path / "sparse.npz") as z:
        ratios = [i.file_size / i.compress_size for i in z.infolist() if i.file_size > 2**20]
    assert ratios and max(ratios) > 200  # what the first limit refused
    np.testing.assert_array_equal(load_classifier(tmp_path / "sparse.npz").predict_proba(X),
                                  model.predict_proba(X))


def test_members_declaring_more_than_the_limit_are_refused(models, work, monkeypatch):
    data = models["kdb"].data
    monkeypatch.setattr(_model_io, "MAX_MODEL_BYTES", 1000)
    _refused(work, data, r"would expand to \d+ bytes, more than the 1000")
    monkeypatch.setattr(_model_io, "MAX_MODEL_BYTES", 2**30)
    monkeypatch.setattr(_model_io, "MAX_META_BYTES", 100)
    _refused(work, data, r"array 'meta' has \d+ bytes, more than 100")


def _lie_about_size(data: bytes, member: str, size: int) -> bytes:
    """``data`` with ``member``'s uncompressed size set to ``size`` in both of its headers."""
    out = bytearray(data)
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        struct.pack_into("<I", out, z.getinfo(member).header_offset + 22, size)  # local
    central = out.find(b"PK\x01\x02")
    while central >= 0:
        name_len = struct.unpack_from("<H", out, central + 28)[0]
        if out[central + 46 : central + 46 + name_len] == member.encode():
            struct.pack_into("<I", out, central + 24, size)
            return bytes(out)
        central = out.find(b"PK\x01\x02", central + 4)
    raise AssertionError(f"no member {member!r}")


def test_a_member_that_lies_about_its_size_is_never_expanded_past_it(models, work):
    # a member declaring 1,000 bytes whose deflated data expand to 32 MiB: zipfile stops at
    # the declared size (and finds the CRC wrong), or the .npy header (32 MiB of float64) does
    # not fit 1,000 bytes, whichever is read first
    members = _members(models["kdb"].data)
    members["member0_tree1_table.npy"] = _npy(np.zeros(4 * 2**20))
    data = _lie_about_size(_zip(members), "member0_tree1_table.npy", 1000)
    _bounded(work, data, r"'member0_tree1_table' declares shape \(4194304,\)|"
                         r"damaged model file \(Bad CRC-32 for file 'member0_tree1_table")


def test_a_header_declaring_a_huge_shape_is_refused_before_allocating(models, work):
    members = _members(models["kdb"].data)
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f8", "fortran_order": False, "shape": (10**12, 3)})
    members["member0_tree1_table.npy"] = header.getvalue() + bytes(48)
    _bounded(work, _zip(members), r"declares shape \(1000000000000, 3\) of float64 "
                                  r"\(24000000000000 bytes\), but its member holds 48")


@pytest.mark.parametrize("field,value,match", [
    ("method", 99, "damaged model file.*compression method"),
    ("flags", 1, "damaged model file.*encrypted"),
])
def test_members_stored_as_savez_never_writes_are_a_damaged_file(models, work, field, value,
                                                                 match):
    data = bytearray(models["kdb"].data)
    # every member's compression method (or its flags: encrypted), local and central headers
    for magic, offset in ((b"PK\x03\x04", 8), (b"PK\x01\x02", 10)):
        offset -= 2 if field == "flags" else 0
        at = data.find(magic)
        while at >= 0:
            struct.pack_into("<H", data, at + offset, value)
            at = data.find(magic, at + 4)
    _refused(work, bytes(data), match)


@pytest.mark.parametrize("data,match", [
    (b"", "not an .npz archive"),
    (b"hello, world\n", "not an .npz archive"),
    (b"PK\x05\x06" + bytes(18), "no metadata"),  # an empty zip archive
], ids=["empty", "text", "empty-zip"])
def test_files_that_are_no_archive_are_refused(work, data, match):
    _refused(work, data, match)


def test_a_truncated_archive_is_refused(models, work):
    data = models["eskdb"].data
    for cut in (len(data) - 10, len(data) // 2, 30):
        _refused(work, data[:cut], "not an .npz archive|damaged")


@pytest.mark.parametrize("array,match", [
    (np.array(["a", "b"]), "of type <U1, which a model never holds"),
    (np.zeros(2, dtype=[("a", "<i8")]), "which a model never holds"),
    (np.zeros((2, 2), dtype=np.complex128), "which a model never holds"),
])
def test_arrays_of_types_a_model_never_holds_are_refused(models, work, array, match):
    arrays = dict(models["kdb"].arrays, member0_tree1_counts=array)
    _refused(work, _pack(models["kdb"].meta, arrays), match)


# ====================================================================== crafted JSON documents
def test_a_json_nesting_bomb_is_refused(models, work):
    start = time.perf_counter()
    bomb = b"[" * 200_000 + b"]" * 200_000
    _refused(work, _pack(bomb, models["kdb"].arrays), "nested too deeply")
    # nested less deeply than Python's limit, inside a valid document: not a parameter value
    meta = json.loads(json.dumps(models["kdb"].meta))
    deep: list = []
    for _ in range(500):
        deep = [deep]
    meta["params"]["n_jobs"] = deep
    _refused(work, _pack(meta, models["kdb"].arrays), r"params\['n_jobs'\]\[0\] must be a label")
    assert time.perf_counter() - start < 5


@pytest.mark.parametrize("meta_bytes,match", [
    (b"\xff\xfe{}", "unreadable metadata"),
    (b'{"format": "hdpbn-model", "version": 1' + b"1" * 5000 + b"}", "unreadable metadata"),
    (b'{"format": "hdpbn-model", "version": "2"}', "version must be an integer"),
    (b'{"format": "hdpbn-model", "version": 4, "classifier": 7}', "classifier must be"),
    (b'["hdpbn-model"]', "not an hdpbn model file"),
], ids=["not-utf8", "4000-digit-int", "version-str", "classifier-int", "a-list"])
def test_documents_that_are_no_model_are_refused(models, work, meta_bytes, match):
    _refused(work, _pack(meta_bytes, models["kdb"].arrays), match)


def _set(doc, path, value):
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value


MEMBER = ("members", 0)
CRAFTED_FIELDS = [
    # ids out of range
    ((*MEMBER, "trees", 1, "child"), 99, r"trees\[1\]\.child is 99, out of range \[0, 6\)"),
    ((*MEMBER, "trees", 2, "conditioning", 1), 6, r"conditioning\[1\] is 6, out of range"),
    ((*MEMBER, "trees", 2, "conditioning", 1), -2, r"conditioning\[1\] is -2, out of range"),
    ((*MEMBER, "trees", 1, "n_values"), 40, r"trees\[1\]\.n_values is 40"),
    ((*MEMBER, "trees", 2, "cardinalities", 1), 2, r"trees\[2\]\.cardinalities\[1\] is 2"),
    ((*MEMBER, "trees", 0, "n_values"), 3, r"trees\[0\]\.n_values is 3"),
    ((*MEMBER, "encoder", "codings", 0, "missing_code"), 0, r"missing_code is 0"),
    ((*MEMBER, "structure", "parents", 0), [17], r"structure is not valid.*parent 17"),
    ("n_features_in", 5, r"feature_names_in has 6 entries, expected 5"),
    ("classifier", "Pickle", "holds a Pickle, which this hdpbn does not know"),
    # wrong types
    ("classes", "unacc", "classes must be a list, got str"),
    ("classes", [["a"], "b"], r"classes\[0\] must be a label"),
    ("classes", ["a", "a"], "classes repeats a class"),
    ("n_features_in", "6", "n_features_in must be an integer"),
    ("n_features_in", 6.0, "n_features_in must be an integer"),
    ("members", {}, "members must be a list"),
    ("members", [], "members is empty"),
    ((*MEMBER, "trees", 1, "child"), 1.5, r"child must be an integer, got 1\.5"),
    ((*MEMBER, "trees", 1, "child"), True, r"child must be an integer, got True"),
    ((*MEMBER, "trees", 1), None, r"trees\[1\] must be an object, got null"),
    ((*MEMBER, "encoder", "codings", 0, "kind"), "ordinal", "must be 'nominal' or 'numeric'"),
    ((*MEMBER, "encoder", "codings", 0, "categories", 0), {"a": 1},
     r"categories\[0\] must be a label"),
    ((*MEMBER, "encoder", "codings"), "abc", "codings must be a list"),
    ((*MEMBER, "m"), -1, r"m must be >= 0"),
    ((*MEMBER, "m"), float("nan"), r"m must be finite"),
    ("feature_names_in", [1, 2, 3, 4, 5, 6], r"feature_names_in\[0\] must be a string"),
    ("feature_names_in", ["a", "b", "c", "d", "e", "a"], "feature_names_in repeats a name"),
    ("fit_warnings", "x", "fit_warnings must be a list"),
    ("diagnostics", {"trees": 5}, "diagnostics is not valid"),
    # parameters that are not the classifier's
    (("params", "structure"), "forest", "parameters are not BayesNetClassifier's"),
    (("params", "n_jobs"), 0, "parameters are not BayesNetClassifier's"),
    (("params", "no_such_parameter"), 1, "parameters are not BayesNetClassifier's"),
]


@pytest.mark.parametrize("path,value,match", CRAFTED_FIELDS,
                         ids=[f"{'.'.join(map(str, p)) if isinstance(p, tuple) else p}={v!r:.12}"
                              for p, v, _ in CRAFTED_FIELDS])
def test_crafted_fields_are_refused_naming_the_field(models, work, path, value, match):
    valid = models["kdb"]
    meta = json.loads(json.dumps(valid.meta))
    _set(meta, path if isinstance(path, tuple) else (path,), value)
    _refused(work, _pack(meta, valid.arrays), match)


def test_a_member_with_other_columns_than_the_model_is_refused(models, work):
    meta = json.loads(json.dumps(models["eskdb"].meta))
    meta["members"][1]["encoder"]["codings"].pop()
    _refused(work, _pack(meta, models["eskdb"].arrays),
             r"members\[1\]\.encoder\.codings has 14 entries, expected 15")


@pytest.mark.parametrize("command", ["predict", "diagnose"])
def test_the_command_line_says_what_is_wrong_in_one_line(models, work, tmp_path, capsys,
                                                         command):
    meta = json.loads(json.dumps(models["kdb"].meta))
    meta["members"][0]["trees"][1]["conditioning"][0] = 999  # main at cae69ec: a segfault
    work.write_bytes(_pack(meta, models["kdb"].arrays))
    data = tmp_path / "rows.csv"
    models["kdb"].X.to_csv(data, index=False)
    argv = (["predict", str(data), "--model", str(work)] if command == "predict"
            else ["diagnose", str(work)])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"hdpbn {command}: error: ")
    assert str(work) in err and "trees[1].conditioning[0] is 999, out of range" in err


def test_the_crafted_fields_are_read_where_they_are(models):
    """The fields crafted above are what the file has (so each test changes what it says)."""
    member = models["kdb"].meta["members"][0]
    assert member["trees"][0]["child"] == -1 and member["trees"][1]["child"] >= 0
    assert member["trees"][2]["conditioning"][0] == -1
    assert len(member["trees"][2]["conditioning"]) == 2
    assert member["trees"][2]["cardinalities"][1] != 2
    assert member["trees"][1]["n_values"] != 40
    assert len(member["encoder"]["codings"]) == 6 == models["kdb"].meta["n_features_in"]
    assert member["encoder"]["codings"][0]["missing_code"] is None
    assert len(models["kdb"].meta["classes"]) == 4


# ====================================================================== crafted arrays
CRAFTED_ARRAYS = [
    ("member0_tree6_paths", lambda a: a[:, :0], r"member0_tree6_paths must be integers of "
                                                r"shape \(L, 1\)"),
    ("member0_tree6_paths", lambda a: a.astype(np.float64), "must be integers"),
    ("member0_tree6_paths", lambda a: a + 50, r"member0_tree6_paths is not valid.*path values"),
    ("member0_tree6_paths", lambda a: a - 50, r"member0_tree6_paths is not valid.*path values"),
    ("member0_tree6_counts", lambda a: a[:-1], "has 3 rows, its paths 4"),
    ("member0_tree6_counts", lambda a: -a, "must be non-negative counts"),
    ("member0_tree6_counts", lambda a: a * 2**61, "must be non-negative counts"),
    ("member0_tree6_counts", lambda a: a.astype(np.uint64) + np.uint64(2**63),
     "must be non-negative counts"),
    ("member0_tree6_table", lambda a: a[:-1], "table 6 does not match its tree"),
    ("member0_tree6_table", lambda a: a.astype(np.int64), "table 6 does not match its tree"),
    ("member0_tree6_table", lambda a: -a, "must hold probabilities"),
    ("member0_tree6_table", lambda a: a + 1, "must hold probabilities"),
    ("member0_tree6_table", lambda a: np.where(a > 0, np.nan, a), "must hold probabilities"),
    ("member0_tree0_table", lambda a: np.full_like(a, np.inf), "must hold probabilities"),
]


@pytest.mark.parametrize("key,change,match", CRAFTED_ARRAYS)
def test_arrays_that_do_not_fit_their_trees_are_refused(models, work, key, change, match):
    valid = models["kdb"]
    assert valid.arrays["member0_tree6_paths"].shape == (4, 1)  # what the changes assume
    arrays = dict(valid.arrays, **{key: change(valid.arrays[key])})
    _refused(work, _pack(valid.meta, arrays), match)


def test_a_missing_array_is_refused_naming_it(models, work):
    arrays = dict(models["eskdb"].arrays)
    del arrays["member1_tree2_counts"]
    _refused(work, _pack(models["eskdb"].meta, arrays), "member1_tree2_counts is missing")


# ====================================================================== fuzzing model files
@FUZZ
@given(name=st.sampled_from(["kdb", "eskdb", "skdb-hdp"]), compressed=st.booleans(), data=st.data())
def test_flipped_or_truncated_bytes_never_raise_anything_else(models, work, name,
                                                              compressed, data):
    valid = models[name]
    raw = bytearray(_pack(valid.meta, valid.arrays, compressed))
    edits = data.draw(st.lists(st.tuples(st.integers(0, len(raw) - 1), st.integers(0, 255)),
                               min_size=1, max_size=4))
    for at, byte in edits:
        raw[at] = byte
    if data.draw(st.booleans()):
        raw = raw[: data.draw(st.integers(0, len(raw)))]
    check_outcome(work, bytes(raw), valid)


@FUZZ
@given(name=st.sampled_from(["kdb", "eskdb", "skdb-hdp"]), data=st.data())
def test_mutated_member_bytes_never_raise_anything_else(models, work, name, data):
    """Bytes of one member changed and the archive rebuilt (its CRCs right): the ``.npy``
    header, the array data or the JSON text itself is what the loader sees."""
    valid = models[name]
    members = _members(_pack(valid.meta, valid.arrays))
    member = data.draw(st.sampled_from(sorted(members)))
    raw = bytearray(members[member])
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, max(len(raw) - 1, 0)))
        kind = data.draw(st.sampled_from(["replace", "insert", "delete"]))
        byte = data.draw(st.sampled_from(b"\x00\x01\xff0123456789-.,:[]{}()'\"ex< |"))
        if kind == "replace" and raw:
            raw[at] = byte
        elif kind == "insert":
            raw.insert(at, byte)
        elif raw:
            del raw[at]
    members[member] = bytes(raw)
    check_outcome(work, _zip(members), valid)


def _paths(doc, prefix=()):
    """Every path to a value of a JSON document (the document's own fields first)."""
    if isinstance(doc, dict):
        items = doc.items()
    elif isinstance(doc, list):
        items = enumerate(doc)
    else:
        return
    for key, value in items:
        yield (*prefix, key)
        yield from _paths(value, (*prefix, key))


REPLACEMENTS = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 12), st.sampled_from([2**31, 2**63, -(2**63)]),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=4),
    st.builds(list), st.builds(dict), st.lists(st.integers(-2, 8), max_size=4),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


@FUZZ
@given(name=st.sampled_from(["kdb", "eskdb", "skdb-hdp"]), data=st.data())
def test_mutated_json_fields_never_raise_anything_else(models, work, name, data):
    """Values replaced by others (of another type, out of range), ints nudged, lists made
    longer or shorter, keys removed -- anywhere in the document, or (half the time) in a
    member's trees and encoder, where the prediction kernels' indices come from."""
    valid = models[name]
    meta = json.loads(json.dumps(valid.meta))
    paths = list(_paths(meta))
    focused = [p for p in paths if p[:1] == ("members",) and len(p) > 3
               and p[2] in ("trees", "encoder")]
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(focused if data.draw(st.booleans()) else paths))
        parent = meta
        for key in path[:-1]:
            parent = parent[key]
        old = parent[path[-1]]
        how = data.draw(st.sampled_from(["replace", "nudge", "grow", "shrink", "remove"]))
        if how == "nudge" and isinstance(old, int) and not isinstance(old, bool):
            parent[path[-1]] = old + data.draw(st.sampled_from([-2, -1, 1, 2, 1000]))
        elif how == "grow" and isinstance(old, list):
            old.append(data.draw(REPLACEMENTS) if not old or data.draw(st.booleans())
                       else json.loads(json.dumps(old[-1])))
        elif how == "shrink" and isinstance(old, list) and old:
            del old[data.draw(st.integers(0, len(old) - 1))]
        elif how == "remove" and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = data.draw(REPLACEMENTS)
        paths = list(_paths(meta))
        focused = [p for p in paths if p[:1] == ("members",) and len(p) > 3
                   and p[2] in ("trees", "encoder")] or paths
    check_outcome(work, _pack(meta, valid.arrays), valid)


ARRAYS = st.builds(
    lambda shape, dtype, fill: np.full(shape, fill).astype(dtype),
    st.lists(st.integers(0, 5), min_size=0, max_size=3).map(tuple),
    st.sampled_from([np.int64, np.int32, np.uint8, np.float64, np.float32, np.bool_]),
    st.sampled_from([0, 1, 2, -1, 0.5, 0.25, 7, 255]),
)


@FUZZ
@given(name=st.sampled_from(["kdb", "eskdb", "skdb-hdp"]), data=st.data())
def test_replaced_arrays_never_raise_anything_else(models, work, name, data):
    """Arrays replaced by others of another shape, type or values (or their values changed in
    place, their shape kept)."""
    valid = models[name]
    arrays = dict(valid.arrays)
    for _ in range(data.draw(st.integers(1, 2))):
        key = data.draw(st.sampled_from(sorted(arrays)))
        if data.draw(st.booleans()):
            arrays[key] = data.draw(ARRAYS)
        else:
            changed = arrays[key].copy()
            if changed.size:
                flat = changed.reshape(-1)
                value = data.draw(st.sampled_from([-1, 0, 1, 3, 100]))
                flat[data.draw(st.integers(0, flat.size - 1))] = np.array(value).astype(
                    flat.dtype)  # -1 wraps around in an unsigned array
            arrays[key] = changed
    check_outcome(work, _pack(valid.meta, arrays), valid)


# ====================================================================== fuzzing CSV and ARFF
CSV = (
    "colour,size,weight,\"note, quoted\",class\n"
    "red,1.5,10,\"a, b\",yes\n"
    "blue,,12,plain,no\n"
    "green,3.25,?,\"say \"\"hi\"\"\",yes\n"
    "red,4,15,,no\n"
)
ARFF = (
    "% a comment\n"
    "@relation 'toy data'\n"
    "@attribute colour {red, blue, 'dark green'}\n"
    "@attribute size numeric\n"
    "@attribute \"the note\" string\n"
    "@attribute when date 'yyyy-MM-dd'\n"
    "@attribute class {yes,no}\n"
    "@data\n"
    "red, 1.5, 'a, b', 2020-01-01, yes\n"
    "'dark green', ?, \"it\\'s\", ?, no % trailing comment\n"
    "{0 blue, 1 3, 2 x, 3 2021-02-03, 4 no}\n"
    "blue,2,'\\u00e9t\\u00e9',2022-03-04,yes\n"
)
SNIPPETS = st.sampled_from([
    ",", "\"", "'", "{", "}", "\n", "\r\n", "%", "@", " ", "\t", "\\", "?", "a", "1", "-",
    "1e400", "\x00", "\u00e9", "\ufeff", "@attribute x numeric\n", "@attribute y {a,b}\n",
    "@attribute z relational\n", "@data\n", "@relation r\n", "{1 a}", "{0 red, 4 yes}",
    ", {3}", "'\\u12", "\\'", "nan", "inf",
])


@st.composite
def mutated_text(draw, text: str) -> bytes:
    chars = list(text)
    for _ in range(draw(st.integers(1, 5))):
        at = draw(st.integers(0, len(chars)))
        kind = draw(st.sampled_from(["insert", "delete", "replace"]))
        if kind == "insert":
            chars[at:at] = list(draw(SNIPPETS))
        elif chars and at < len(chars):
            if kind == "delete":
                del chars[at : at + draw(st.integers(1, 8))]
            else:
                chars[at] = draw(SNIPPETS)
    if draw(st.integers(0, 4)) == 0:
        chars = chars[: draw(st.integers(0, len(chars)))]
    raw = "".join(chars).encode(draw(st.sampled_from(["utf-8", "utf-8", "latin-1"])),
                                errors="replace")
    if draw(st.booleans()):  # a stray byte that is not UTF-8
        at = draw(st.integers(0, len(raw)))
        raw = raw[:at] + draw(st.sampled_from([b"\xff", b"\xe9", b"\xc3", b"\x80"])) + raw[at:]
    return raw


def _read_or_documented_error(path, raw: bytes) -> None:
    path.write_bytes(raw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            table = read_table(path)
        except ValueError as exc:
            # the documented errors; undecodable bytes fall back to Latin-1 instead
            assert not isinstance(exc, UnicodeDecodeError), exc
            return
    frame = table.frame
    assert set(table.types) == set(frame.columns)
    for column, kind in table.types.items():
        assert kind in ("nominal", "numeric")
        if kind == "numeric":
            assert frame[column].dtype == np.float64


@pytest.fixture(scope="module")
def text_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("text")


def test_the_valid_texts_read(text_dir):
    (text_dir / "ok.csv").write_text(CSV)
    (text_dir / "ok.arff").write_text(ARFF)
    csv, arff = read_table(text_dir / "ok.csv"), read_table(text_dir / "ok.arff")
    assert csv.frame.shape == (4, 5) and csv.types["size"] == "numeric"
    assert arff.frame.shape == (4, 5) and arff.types["colour"] == "nominal"
    assert arff.frame["the note"].tolist() == ["a, b", "it's", "x", "\u00e9t\u00e9"]


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(raw=mutated_text(CSV))
def test_mutated_csv_reads_or_raises_a_documented_error(text_dir, raw):
    _read_or_documented_error(text_dir / "fuzz.csv", raw)


@settings(max_examples=100, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(raw=mutated_text(ARFF))
def test_mutated_arff_reads_or_raises_a_documented_error(text_dir, raw):
    _read_or_documented_error(text_dir / "fuzz.arff", raw)


COMPRESSORS = {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(["csv", "arff"]), suffix=st.sampled_from(sorted(COMPRESSORS)),
       data=st.data())
def test_damaged_compressed_text_reads_or_raises_a_documented_error(text_dir, kind, suffix,
                                                                     data):
    raw = bytearray(COMPRESSORS[suffix]((CSV if kind == "csv" else ARFF).encode()))
    for _ in range(data.draw(st.integers(0, 3))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        raw = raw[: data.draw(st.integers(0, len(raw)))]
    _read_or_documented_error(text_dir / f"fuzz.{kind}.{suffix}", bytes(raw))


def test_limits_are_documented():
    doc = _model_io.__doc__
    for name in ("MAX_MEMBERS", "MAX_MODEL_BYTES", "MAX_META_BYTES", "MAX_RATIO",
                 "ModelFileError"):
        assert name in doc
