"""fastpath.classifier._model_io: model files as arrays + JSON, never pickle.

A saved and reloaded classifier must predict exactly as the original (every structure, both
estimators) and carry the same learned state field by field, member by member. Files of the
format of hdpbn 0.1.0 (``tests/data/models-0.1.0``, kept from now on) load and predict exactly
as they did; files of the development versions before it are refused naming their version.
Files that are not models are refused with a ``ValueError`` naming the file; labels that JSON
cannot hold are refused when saving (``TypeError``, nothing written); loading never unpickles,
checked with a crafted archive whose object array would run code if it were unpickled.
"""

from __future__ import annotations

import json
import os
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from fastpath import BayesNetClassifier, ESKDBClassifier, HDPOptions
from fastpath.classifier import load_classifier
from fastpath.classifier._model_io import FORMAT_VERSION, read_model, read_model_meta, save_model
from fastpath.io import load_dataset
from fastpath.pipeline import FittedModel

#: files of the format of hdpbn 0.1.0, with the predictions the code that wrote them made
RELEASE_MODELS = os.path.join(os.path.dirname(__file__), "data", "models-0.1.0")

TREE_ARRAYS = ("level_offsets", "parent", "branch_value", "counts", "child_offsets",
               "lookup_offsets", "child_lookup")


@pytest.fixture(scope="module")
def credit():
    X, y = load_dataset("credit-a")  # nominal + numeric columns, missing values, str labels
    return X, np.asarray(y)


def _fitted(clf) -> FittedModel:
    return FittedModel(**{n: getattr(clf, n, None) for n in FittedModel.attribute_names()})


def _dict_or_none(obj):
    return None if obj is None else obj.to_dict()


def assert_same_fitted(a: FittedModel, b: FittedModel) -> None:
    """Every field a model file holds is equal (``hdp_results_`` are not saved)."""
    assert list(a.classes_) == list(b.classes_)
    assert [type(c) for c in a.classes_] == [type(c) for c in b.classes_]
    assert a.n_features_in_ == b.n_features_in_
    if a.feature_names_in_ is None:
        assert b.feature_names_in_ is None
    else:
        assert list(a.feature_names_in_) == list(b.feature_names_in_)
    assert len(a.members_) == len(b.members_)
    for ma, mb in zip(a.members_, b.members_, strict=True):
        assert ma.encoder.codings_ == mb.encoder.codings_
        assert ma.encoder.to_dict() == mb.encoder.to_dict()
        assert ma.structure == mb.structure
        assert ma.tree_specs == mb.tree_specs
        assert len(ma.trees) == len(mb.trees)
        for ta, tb in zip(ma.trees, mb.trees, strict=True):
            assert ta.n_values == tb.n_values
            assert ta.branch_cardinalities == tb.branch_cardinalities
            assert (ta.child_name, ta.conditioning_names) == (tb.child_name,
                                                              tb.conditioning_names)
            for name in TREE_ARRAYS:
                np.testing.assert_array_equal(getattr(ta, name), getattr(tb, name),
                                              err_msg=name)
        for pa, pb in zip(ma.probability_tables, mb.probability_tables, strict=True):
            np.testing.assert_array_equal(pa, pb)
            assert not pb.flags.writeable
        assert _dict_or_none(ma.selection) == _dict_or_none(mb.selection)
        assert ma.m == mb.m and ma.m_scores == mb.m_scores
    assert _dict_or_none(a.diagnostics_) == _dict_or_none(b.diagnostics_)


# ====================================================================== round trips
@pytest.mark.parametrize("estimation", ["m", "hdp"])
@pytest.mark.parametrize("structure,k", [("nb", 0), ("tan", 1), ("kdb", 2), ("skdb", 2)])
def test_save_load_round_trip_is_exact(credit, tmp_path, structure, k, estimation):
    X, y = credit
    clf = BayesNetClassifier(structure, k=k, estimation=estimation,
                             sampler=HDPOptions.preset("adaptive", n_iter=20),
                             random_state=0).fit(X, y)
    path = tmp_path / "model.npz"
    clf.save(path)

    params, model = read_model(path)
    assert params == clf.get_params()
    assert_same_fitted(_fitted(clf), model)
    assert model.hdp_results_ is None and model.n_passes_ is None
    assert (model.diagnostics_ is None) == (estimation == "m")
    assert (model.members_[0].selection is None) == (structure != "skdb")

    loaded = BayesNetClassifier.load(path)
    assert loaded.get_params() == clf.get_params()
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))
    np.testing.assert_array_equal(loaded.predict(X), clf.predict(X))
    meta = read_model_meta(path)
    assert meta["format"] == "hdpbn-model" and meta["version"] == FORMAT_VERSION == 4


def test_round_trip_of_integer_labels_and_unnamed_columns(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, (200, 4))
    y = np.array([10, -2, 7])[(X[:, 0] + rng.integers(0, 2, 200)) % 3]
    clf = BayesNetClassifier("tan", categorical_features=np.array([0, 1, 2, 3]), m=1.0).fit(X, y)
    clf.save(tmp_path / "ints.npz")
    loaded = BayesNetClassifier.load(tmp_path / "ints.npz")
    assert_same_fitted(_fitted(clf), _fitted(loaded))
    assert loaded.predict(X).dtype.kind == "i"
    np.testing.assert_array_equal(loaded.predict(X), clf.predict(X))
    assert loaded.get_params()["categorical_features"] == [0, 1, 2, 3]


def test_a_generator_seed_is_saved_as_none(credit, tmp_path):
    X, y = credit
    clf = BayesNetClassifier("nb", random_state=np.random.default_rng(1)).fit(X, y)
    clf.save(tmp_path / "g.npz")
    params, _ = read_model(tmp_path / "g.npz")
    assert params["random_state"] is None


def test_the_file_is_one_npz_of_plain_arrays(credit, tmp_path):
    X, y = credit
    BayesNetClassifier("kdb", k=1, m=1.0).fit(X, y).save(tmp_path / "m.npz")
    with np.load(tmp_path / "m.npz", allow_pickle=False) as data:
        assert all(data[name].dtype != object for name in data.files)
        meta = json.loads(bytes(data["meta"]).decode("utf-8"))
    assert meta == read_model_meta(tmp_path / "m.npz")


# ====================================================================== files of 0.1.0
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # short runs
@pytest.mark.parametrize("name", ["kdb-hdp", "skdb-hdp-paper", "tan-m", "eskdb-hdp",
                                  "eskdb-hls"])
def test_files_of_the_release_format_load_and_predict_identically(credit, name):
    """Saved with the format of 0.1.0 on every third row of credit-a (make_models.py), with the
    predictions that code made: the loaded model predicts them, and a fit with the loaded
    parameters predicts them bit for bit (the stored ones up to another machine's exp, which
    may round the last place differently: numpy calls the C library's, and the ensembles'
    vectorised one is fastpath.utils._exp)."""
    X, y = credit
    X, y = X.iloc[::3].reset_index(drop=True), y[::3]
    path = os.path.join(RELEASE_MODELS, f"{name}.npz")
    assert read_model_meta(path)["version"] == FORMAT_VERSION
    expected = np.load(os.path.join(RELEASE_MODELS, f"{name}-proba.npy"))
    expected_log = np.load(os.path.join(RELEASE_MODELS, f"{name}-log-proba.npy"))
    loaded = load_classifier(path)
    assert isinstance(loaded, ESKDBClassifier if name.startswith("eskdb") else
                      BayesNetClassifier)
    np.testing.assert_allclose(loaded.predict_proba(X), expected, rtol=1e-14, atol=1e-300)
    # a logarithm near 0 keeps the absolute error of its argument near 1
    np.testing.assert_allclose(loaded.predict_log_proba(X), expected_log, rtol=1e-14,
                               atol=1e-15)
    refit = type(loaded)(**loaded.get_params()).fit(X, y)
    np.testing.assert_array_equal(refit.predict_proba(X), loaded.predict_proba(X))
    np.testing.assert_array_equal(refit.predict_log_proba(X), loaded.predict_log_proba(X))


@pytest.mark.parametrize("version", [1, 2, 3])
def test_files_of_development_versions_are_refused_naming_the_version(credit, tmp_path,
                                                                       version):
    X, y = credit
    BayesNetClassifier("nb", estimation="m").fit(X, y).save(tmp_path / "m.npz")
    with np.load(tmp_path / "m.npz", allow_pickle=False) as data:
        arrays = {name: data[name] for name in data.files}
    meta = json.loads(bytes(arrays.pop("meta")).decode("utf-8"))
    meta["version"] = version
    _write_meta(tmp_path / "old.npz", json.dumps(meta).encode(), **arrays)
    with pytest.raises(ValueError, match=rf"model file version {version} was written by a "
                                         r"development version of hdpbn before 0\.1\.0"):
        BayesNetClassifier.load(tmp_path / "old.npz")


def test_a_file_loads_only_into_the_estimator_that_saved_it(credit, tmp_path):
    X, y = credit
    ESKDBClassifier(2, 1, "m", random_state=0).fit(X, y).save(tmp_path / "e.npz")
    with pytest.raises(ValueError, match="holds an ESKDBClassifier; load it with"):
        BayesNetClassifier.load(tmp_path / "e.npz")
    with pytest.raises(ValueError, match="holds a BayesNetClassifier"):
        ESKDBClassifier.load(os.path.join(RELEASE_MODELS, "tan-m.npz"))
    assert isinstance(load_classifier(tmp_path / "e.npz"), ESKDBClassifier)


# ====================================================================== not a model
def _write_meta(path, meta_bytes, **arrays):
    np.savez(path, meta=np.frombuffer(meta_bytes, dtype=np.uint8), **arrays)


def _no_meta(path):
    np.savez(path, tree0_table=np.ones((1, 2)))


def _wrong_format(path):
    _write_meta(path, json.dumps({"format": "something-else", "version": 1}).encode())


def _newer_version(path):
    _write_meta(path, json.dumps({"format": "hdpbn-model",
                                  "version": FORMAT_VERSION + 1}).encode())


def _not_an_npz(path):
    path.write_text("buying,maint,class\nhigh,low,acc\n")


def _meta_not_json(path):
    _write_meta(path, b"\xff\xfe not json")


def _saved_model_bytes(path) -> bytes:
    X, y = load_dataset("car")
    good = path.with_name("good.npz")
    BayesNetClassifier("nb", random_state=0).fit(X, y).save(good)
    return good.read_bytes()


def _truncated(path):
    data = _saved_model_bytes(path)
    path.write_bytes(data[: len(data) // 2])


def _corrupted(path):
    data = bytearray(_saved_model_bytes(path))
    middle = len(data) // 2  # inside a compressed member
    data[middle : middle + 64] = bytes(64)
    path.write_bytes(bytes(data))


def _garbage(path):
    path.write_bytes(np.random.default_rng(0).bytes(4096))


BAD_FILES = [
    pytest.param(_no_meta, id="no-meta"),
    pytest.param(_wrong_format, id="wrong-format"),
    pytest.param(_newer_version, id="newer-version"),
    pytest.param(_not_an_npz, id="not-an-npz"),
    pytest.param(_meta_not_json, id="meta-not-json"),
    pytest.param(_truncated, id="truncated"),
    pytest.param(_corrupted, id="corrupted"),
    pytest.param(_garbage, id="garbage-bytes"),
]


@pytest.mark.parametrize("make", BAD_FILES)
@pytest.mark.parametrize("reader", [read_model, read_model_meta, BayesNetClassifier.load],
                         ids=["read_model", "read_model_meta", "load"])
def test_a_file_that_is_not_a_model_is_refused_naming_it(tmp_path, make, reader):
    path = tmp_path / "suspicious-name.npz"
    make(path)
    if make is _corrupted and reader is read_model_meta:
        # only the arrays are damaged: the metadata alone still reads
        assert reader(path)["format"] == "hdpbn-model"
        return
    with pytest.raises(ValueError, match=r"suspicious-name\.npz") as info:
        reader(path)
    assert "allow_pickle" not in str(info.value)  # never advice to load unsafely


def test_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nope\.npz"):
        read_model_meta(tmp_path / "nope.npz")
    with pytest.raises(FileNotFoundError):
        BayesNetClassifier.load(tmp_path / "nope.npz")


def test_table_that_does_not_match_its_tree_is_corrupt(credit, tmp_path):
    X, y = credit
    BayesNetClassifier("nb", m=1.0).fit(X, y).save(tmp_path / "ok.npz")
    with np.load(tmp_path / "ok.npz", allow_pickle=False) as data:
        arrays = {n: data[n] for n in data.files}
    arrays["member0_tree1_table"] = arrays["member0_tree1_table"][:-1]
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ValueError, match="table 1 does not match its tree"):
        read_model(tmp_path / "bad.npz")


# ====================================================================== labels JSON cannot hold
def test_class_labels_that_are_not_json_values_are_refused_at_save(tmp_path):
    X = pd.DataFrame({"a": ["u", "v", "u", "v"] * 5})
    y = np.array([Fraction(1, 2), Fraction(1, 3)] * 10, dtype=object)
    clf = BayesNetClassifier("nb", m=1.0).fit(X, y)
    path = tmp_path / "frac.npz"
    with pytest.raises(TypeError, match=r"cannot save label .*Fraction"):
        clf.save(path)
    assert not path.exists()


def test_category_labels_that_are_not_json_values_are_refused_at_save(tmp_path):
    X = pd.DataFrame({"a": np.array([Fraction(1, 2), Fraction(2, 3)] * 10, dtype=object)})
    clf = BayesNetClassifier("nb", m=1.0).fit(X, ["p", "q"] * 10)
    assert clf.encoder_.codings_[0].kind == "nominal"
    path = tmp_path / "frac.npz"
    with pytest.raises(TypeError, match="labels must be JSON values"):
        clf.save(path)
    assert not path.exists()


def test_save_model_refuses_labels_directly(credit, tmp_path):
    X, y = credit
    clf = BayesNetClassifier("nb", m=1.0).fit(X, y)
    model = _fitted(clf)
    classes = np.empty(2, dtype=object)
    classes[:] = [(1, 2), (3, 4)]
    model.classes_ = classes
    with pytest.raises(TypeError, match="of type tuple"):
        save_model("BayesNetClassifier", clf.get_params(), model, tmp_path / "t.npz")


# ====================================================================== no unpickling
class _Payload:
    """Unpickling this creates a directory: proof that code ran."""

    def __init__(self, target: str) -> None:
        self.target = target

    def __reduce__(self):
        return os.mkdir, (self.target,)


@pytest.mark.parametrize("member", ["member0_tree1_table", "meta"])
def test_loading_never_unpickles_a_crafted_object_array(credit, tmp_path, member):
    X, y = credit
    BayesNetClassifier("nb", m=1.0).fit(X, y).save(tmp_path / "ok.npz")
    with np.load(tmp_path / "ok.npz", allow_pickle=False) as data:
        arrays = {n: data[n] for n in data.files}
    sentinel = tmp_path / "code-ran"
    payload = np.empty(1, dtype=object)
    payload[0] = _Payload(str(sentinel))
    arrays[member] = payload
    crafted = tmp_path / "crafted.npz"
    np.savez(crafted, **arrays)  # np.save pickles object arrays

    for reader in (read_model, read_model_meta, BayesNetClassifier.load):
        if member != "meta" and reader is read_model_meta:
            read_model_meta(crafted)  # the JSON is intact: only the meta is read
            continue
        with pytest.raises(ValueError, match=r"crafted\.npz.*holds Python objects") as info:
            reader(crafted)
        assert "allow_pickle" not in str(info.value)  # never advice to load unsafely
    assert not sentinel.exists()

    # the payload is live: unpickling it does run code
    with np.load(crafted, allow_pickle=True) as data:
        data[member]
    assert sentinel.exists()
