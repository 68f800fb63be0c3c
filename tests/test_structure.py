"""Structure learning: MI/CMI against independent counts, TAN/kDB against brute force."""

from __future__ import annotations

import itertools
import json
import math
import re
import time
from collections import Counter

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare
from sklearn.metrics import mutual_info_score

import fastpath.structure as structure_pkg
from fastpath.structure import (
    Structure,
    conditional_mutual_information,
    kdb,
    kdb_from_scores,
    mutual_information,
    naive_bayes,
    sample_order,
    tan,
    tan_from_scores,
)
from fastpath.structure._scores import mi_order, mutual_information_scores

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---------------------------------------------------------------- independent references
def brute_mi(x, y) -> float:
    """I(X; Y) by dictionary counting, in nats."""
    n = len(x)
    nxy = Counter(zip(x.tolist(), y.tolist(), strict=True))
    nx_ = Counter(x.tolist())
    ny = Counter(y.tolist())
    return sum(c / n * math.log(c * n / (nx_[a] * ny[b])) for (a, b), c in nxy.items())


def brute_cmi(xa, xb, y) -> float:
    """I(A; B | Y) = sum p(a,b,y) log p(a,b,y) p(y) / (p(a,y) p(b,y)), by dict counting."""
    n = len(y)
    a, b, c = xa.tolist(), xb.tolist(), y.tolist()
    nabc = Counter(zip(a, b, c, strict=True))
    nac = Counter(zip(a, c, strict=True))
    nbc = Counter(zip(b, c, strict=True))
    nc = Counter(c)
    return sum(
        v / n * math.log(v * nc[cc] / (nac[(aa, cc)] * nbc[(bb, cc)]))
        for (aa, bb, cc), v in nabc.items()
    )


def random_data(rng, n, cards, n_classes):
    X = (
        np.column_stack([rng.integers(0, c, size=n) for c in cards])
        if cards
        else np.zeros((n, 0), dtype=np.int64)
    )
    y = rng.integers(0, n_classes, size=n)
    return X.reshape(n, len(cards)), y


def is_acyclic(parents) -> bool:
    g = nx.DiGraph()
    g.add_nodes_from(range(len(parents)))
    g.add_edges_from((p, i) for i, ps in enumerate(parents) for p in ps)
    return nx.is_directed_acyclic_graph(g)


@st.composite
def datasets(draw, max_attributes=6, max_rows=50):
    m = draw(st.integers(0, max_attributes))
    cards = draw(st.lists(st.integers(1, 4), min_size=m, max_size=m))
    n_classes = draw(st.integers(1, 3))
    n = draw(st.integers(0, max_rows))
    seed = draw(st.integers(0, 2**32 - 1))
    X, y = random_data(np.random.default_rng(seed), n, cards, n_classes)
    return X, y, cards, n_classes


# ---------------------------------------------------------------- mutual information
@pytest.mark.parametrize("seed", range(5))
def test_mi_matches_brute_force_and_sklearn(seed):
    rng = np.random.default_rng(seed)
    cards = [int(c) for c in rng.integers(1, 7, size=8)]
    n_classes = int(rng.integers(2, 5))
    X, y = random_data(rng, 300, cards, n_classes)
    # make some attributes depend on the class
    X[:, 0] = (y + rng.integers(0, 2, size=300)) % cards[0]
    mi = mutual_information(X, y, cards, n_classes)
    assert mi.shape == (8,)
    for j in range(8):
        assert mi[j] == pytest.approx(brute_mi(X[:, j], y), abs=1e-12)
        assert mi[j] == pytest.approx(mutual_info_score(y, X[:, j]), abs=1e-12)


def test_mi_exact_cases():
    y = np.array([0, 1, 0, 1, 0, 1, 0, 1])
    X = np.column_stack([y, 1 - y, np.zeros(8, int), [0, 0, 1, 1, 0, 0, 1, 1]])
    mi = mutual_information(X, y, [2, 2, 1, 2], 2)
    assert mi[0] == pytest.approx(math.log(2), abs=1e-15)
    assert mi[1] == pytest.approx(math.log(2), abs=1e-15)
    assert mi[2] == 0.0  # constant attribute: exactly zero
    assert mi[3] == 0.0  # exactly independent in the data: exactly zero


def test_mi_no_rows_and_no_attributes():
    assert mutual_information(np.zeros((0, 3), int), np.zeros(0, int), [2, 3, 4], 2).tolist() == [
        0.0,
        0.0,
        0.0,
    ]
    assert mutual_information(np.zeros((5, 0), int), np.zeros(5, int), [], 2).shape == (0,)
    cmi = conditional_mutual_information(np.zeros((0, 3), int), np.zeros(0, int), [2, 3, 4], 2)
    assert cmi.shape == (3, 3) and not cmi.any()


# ---------------------------------------------------------------- conditional MI
@pytest.mark.parametrize("seed", range(5))
def test_cmi_matches_brute_force(seed):
    rng = np.random.default_rng(100 + seed)
    cards = [int(c) for c in rng.integers(1, 6, size=7)]
    n_classes = int(rng.integers(1, 4))
    X, y = random_data(rng, 200, cards, n_classes)
    X[:, 1] = (X[:, 0] + y) % cards[1]  # a strong conditional dependence
    cmi = conditional_mutual_information(X, y, cards, n_classes)
    assert cmi.shape == (7, 7)
    for i, j in itertools.product(range(7), repeat=2):
        want = 0.0 if i == j else brute_cmi(X[:, i], X[:, j], y)
        assert cmi[i, j] == pytest.approx(want, abs=1e-12), (i, j)


def test_cmi_high_cardinality_matches_brute_force():
    # cardinalities above 256 use a wider code dtype; the sparse table scan kicks in too
    rng = np.random.default_rng(7)
    cards = [300, 2, 700, 5]
    X, y = random_data(rng, 400, cards, 3)
    cmi = conditional_mutual_information(X, y, cards, 3)
    mi = mutual_information(X, y, cards, 3)
    for i, j in itertools.combinations(range(4), 2):
        assert cmi[i, j] == pytest.approx(brute_cmi(X[:, i], X[:, j], y), abs=1e-12)
    for j in range(4):
        assert mi[j] == pytest.approx(brute_mi(X[:, j], y), abs=1e-12)


def test_cmi_identical_columns_is_conditional_entropy():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 500)
    a = rng.integers(0, 4, 500)
    X = np.column_stack([a, a, np.zeros(500, int)])
    cmi = conditional_mutual_information(X, y, [4, 4, 1], 2)
    h = 0.0  # H(A | Y)
    for c in (0, 1):
        sub = a[y == c]
        p = np.bincount(sub, minlength=4) / sub.size
        h -= sub.size / 500 * sum(q * math.log(q) for q in p if q > 0)
    assert cmi[0, 1] == pytest.approx(h, abs=1e-12)
    assert cmi[0, 2] == 0.0 and cmi[1, 2] == 0.0


def test_scores_agree_with_separate_functions():
    rng = np.random.default_rng(11)
    X, y = random_data(rng, 150, [3, 4, 2, 5], 3)
    mi, cmi = mutual_information_scores(X, y, [3, 4, 2, 5], 3)
    np.testing.assert_array_equal(mi, mutual_information(X, y, [3, 4, 2, 5], 3))
    np.testing.assert_array_equal(cmi, conditional_mutual_information(X, y, [3, 4, 2, 5], 3))


def test_inputs_of_other_integer_dtypes_and_order():
    rng = np.random.default_rng(12)
    X, y = random_data(rng, 120, [3, 4, 2], 2)
    ref = conditional_mutual_information(X, y, [3, 4, 2], 2)
    for dtype in (np.int8, np.uint16, np.int32):
        got = conditional_mutual_information(
            np.asfortranarray(X.astype(dtype)), y.astype(dtype), np.array([3, 4, 2]), 2
        )
        np.testing.assert_array_equal(got, ref)


@SETTINGS
@given(datasets())
def test_property_mi_cmi_bounds_and_symmetry(data):
    X, y, cards, n_classes = data
    mi, cmi = mutual_information_scores(X, y, cards, n_classes)
    m = len(cards)
    assert mi.shape == (m,) and cmi.shape == (m, m)
    assert np.all(mi >= 0) and np.all(cmi >= 0)
    np.testing.assert_array_equal(cmi, cmi.T)
    np.testing.assert_array_equal(np.diag(cmi), 0.0)
    for j in range(m):
        assert mi[j] <= math.log(min(cards[j], n_classes)) + 1e-12
    for i, j in itertools.combinations(range(m), 2):
        assert cmi[i, j] <= math.log(min(cards[i], cards[j])) + 1e-12
        if len(y):
            assert cmi[i, j] == pytest.approx(brute_cmi(X[:, i], X[:, j], y), abs=1e-12)


def test_cmi_timing_musk2_sized(capsys):
    """6,600 x 166 attributes of cardinality 5: ~13,700 pairs. Prints the time."""
    rng = np.random.default_rng(0)
    X = rng.integers(0, 5, size=(6600, 166))
    y = rng.integers(0, 2, size=6600)
    conditional_mutual_information(X[:10], y[:10], [5] * 166, 2)  # compile / load the cache
    t0 = time.perf_counter()
    cmi = conditional_mutual_information(X, y, [5] * 166, 2)
    elapsed = time.perf_counter() - t0
    with capsys.disabled():
        print(f"\n[structure] CMI 6,600 x 166 (13,695 pairs): {elapsed:.3f} s")
    assert cmi.shape == (166, 166)
    assert elapsed < 20.0  # generous: about 0.05-0.1 s on 2 cores


# ---------------------------------------------------------------- naive Bayes
def test_naive_bayes():
    s = naive_bayes(4)
    assert s.kind == "nb" and s.k == 0
    assert s.parents == ((), (), (), ())
    assert s.order == (0, 1, 2, 3)
    assert s.mutual_information is None and s.cmi is None
    assert s.edges() == []
    assert naive_bayes(0).parents == ()
    for bad in (-1, 1.5, True, "3"):
        with pytest.raises(ValueError, match="n_attributes"):
            naive_bayes(bad)


# ---------------------------------------------------------------- TAN
def networkx_tan_edges(cmi):
    m = cmi.shape[0]
    g = nx.Graph()
    g.add_nodes_from(range(m))
    for i, j in itertools.combinations(range(m), 2):
        g.add_edge(i, j, weight=cmi[i, j])
    t = nx.maximum_spanning_tree(g)
    return {frozenset(e) for e in t.edges()}


@pytest.mark.parametrize("seed", range(8))
def test_tan_matches_networkx_spanning_tree(seed):
    rng = np.random.default_rng(200 + seed)
    m = int(rng.integers(2, 12))
    cards = [int(c) for c in rng.integers(2, 5, size=m)]
    X, y = random_data(rng, 400, cards, 3)
    for j in range(1, m):  # some chain dependence so the tree is not all noise
        if rng.random() < 0.5:
            X[:, j] = (X[:, j - 1] + (rng.random(400) < 0.3)) % cards[j]
    s = tan(X, y, cards, 3)
    w = s.cmi[np.triu_indices(m, 1)]
    assert np.unique(w).size == w.size, "test needs distinct weights"
    got = {frozenset(e) for e in s.edges()}
    assert got == networkx_tan_edges(s.cmi)
    mi = mutual_information(X, y, cards, 3)
    assert s.root == int(np.argmax(mi))
    assert s.parents[s.root] == ()
    assert all(len(ps) == 1 for i, ps in enumerate(s.parents) if i != s.root)
    assert s.kind == "tan" and s.k == 1
    # directed away from the root: every attribute reaches the root through its parents
    for i in range(m):
        v, steps = i, 0
        while v != s.root:
            v = s.parents[v][0]
            steps += 1
            assert steps <= m
    assert s.branching_order(s.order[-1]) == s.parents[s.order[-1]]


def test_tan_recovers_a_chain():
    rng = np.random.default_rng(5)
    n = 5000
    y = rng.integers(0, 2, n)
    x0 = (y + (rng.random(n) < 0.1)) % 2  # most informative about the class
    x1 = (x0 + (rng.random(n) < 0.1)) % 2
    x2 = (x1 + (rng.random(n) < 0.1)) % 2
    x3 = rng.integers(0, 3, n)
    X = np.column_stack([x2, x3, x0, x1])  # shuffled columns: x0 is column 2
    s = tan(X, y, [2, 3, 2, 2], 2)
    assert s.root == 2
    assert s.parents[3] == (2,)  # x1 <- x0
    assert s.parents[0] == (3,)  # x2 <- x1
    assert len(s.parents[1]) == 1


def test_tan_ties_are_deterministic_star():
    # every CMI is zero: the tie rule picks the lexicographically smallest pairs, a star on 0,
    # then rooted at the highest-MI attribute
    cmi = np.zeros((5, 5))
    mi = np.array([0.1, 0.1, 0.3, 0.0, 0.3])
    s = tan_from_scores(mi, cmi)
    assert s.root == 2  # first of the two 0.3's
    assert s.order == (2, 4, 0, 1, 3)
    assert s.parents == ((2,), (0,), (), (0,), (0,))
    # constant attributes in data: still a spanning tree
    X = np.zeros((10, 4), dtype=int)
    y = np.arange(10) % 2
    s = tan(X, y, [1, 1, 1, 1], 2)
    assert s.root == 0
    assert s.parents == ((), (0,), (0,), (0,))


def test_tan_small_sizes():
    s = tan(np.zeros((3, 0), int), np.zeros(3, int), [], 1)
    assert s.parents == () and s.root is None
    s = tan(np.zeros((3, 1), int), np.zeros(3, int), [1], 1)
    assert s.parents == ((),) and s.root == 0


# ---------------------------------------------------------------- kDB
def brute_kdb(mi, cmi, k):
    m = len(mi)
    order = sorted(range(m), key=lambda j: (-mi[j], j))
    parents = {}
    for pos, i in enumerate(order):
        best, best_score = (), -1.0
        for subset in itertools.combinations(order[:pos], min(k, pos)):
            score = sum(cmi[i, p] for p in subset)
            if score > best_score:
                best, best_score = subset, score
        parents[i] = set(best)
    return order, parents


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("k", [0, 1, 2, 3, 5])
def test_kdb_matches_brute_force(seed, k):
    rng = np.random.default_rng(300 + seed)
    m = int(rng.integers(1, 8))
    cards = [int(c) for c in rng.integers(2, 5, size=m)]
    X, y = random_data(rng, 300, cards, 2)
    s = kdb(X, y, cards, 2, k)
    mi, cmi = mutual_information_scores(X, y, cards, 2)
    w = cmi[np.triu_indices(m, 1)]
    assume_distinct = np.unique(w).size == w.size and np.unique(mi).size == mi.size
    assert assume_distinct, "test needs distinct scores"
    order, parents = brute_kdb(mi, cmi, k)
    assert s.order == tuple(order)
    for i in range(m):
        assert set(s.parents[i]) == parents[i], i
        # stored in branching order: decreasing CMI with the child
        vals = [cmi[i, p] for p in s.parents[i]]
        assert vals == sorted(vals, reverse=True)
        assert s.branching_order(i) == s.parents[i]
    assert s.kind == "kdb" and s.k == k


def test_kdb_zero_is_naive_bayes_and_parents_are_nested():
    rng = np.random.default_rng(9)
    cards = [3, 2, 4, 3, 2, 3]
    X, y = random_data(rng, 300, cards, 3)
    assert kdb(X, y, cards, 3, 0).parents == naive_bayes(6).parents
    mi, cmi = mutual_information_scores(X, y, cards, 3)
    structures = [kdb_from_scores(mi, cmi, k) for k in range(7)]
    for k in range(1, 7):
        for i in range(6):
            assert structures[k - 1].parents[i] == structures[k].parents[i][: k - 1]
    # k beyond the number of attributes: every earlier attribute is a parent
    s = structures[6]
    for pos, i in enumerate(s.order):
        assert set(s.parents[i]) == set(s.order[:pos])


def test_kdb_ties_by_index():
    mi = np.array([0.5, 0.4, 0.3, 0.2])
    cmi = np.zeros((4, 4))
    cmi[3, 1] = cmi[1, 3] = 0.2
    s = kdb_from_scores(mi, cmi, 2)
    assert s.parents == ((), (0,), (0, 1), (1, 0))
    assert s.branching_order(3) == (1, 0)
    s = kdb_from_scores(np.zeros(4), np.zeros((4, 4)), 1)
    assert s.order == (0, 1, 2, 3)
    assert s.parents == ((), (0,), (0,), (0,))


@SETTINGS
@given(datasets(), st.integers(0, 4))
def test_property_structures(data, k):
    X, y, cards, n_classes = data
    m = len(cards)
    s = kdb(X, y, cards, n_classes, k)
    rank = {j: r for r, j in enumerate(s.order)}
    assert sorted(s.order) == list(range(m))
    assert np.all(np.diff(s.mutual_information[list(s.order)]) <= 0)
    for i, ps in enumerate(s.parents):
        assert len(ps) == min(k, rank[i])
        assert all(rank[p] < rank[i] for p in ps)
    assert is_acyclic(s.parents)
    t = tan(X, y, cards, n_classes)
    assert is_acyclic(t.parents)
    assert len(t.edges()) == max(m - 1, 0)
    if m:
        g = nx.Graph()
        g.add_nodes_from(range(m))
        g.add_edges_from(t.edges())
        assert nx.is_tree(g)
    assert Structure.from_dict(json.loads(json.dumps(s.to_dict()))) == s
    assert Structure.from_dict(json.loads(json.dumps(t.to_dict()))) == t


# ---------------------------------------------------------------- branching order
def test_branching_order_uses_cmi_with_index_ties():
    cmi = np.zeros((5, 5))
    for i, j, v in [(4, 0, 0.1), (4, 1, 0.3), (4, 2, 0.3), (4, 3, 0.2)]:
        cmi[i, j] = cmi[j, i] = v
    s = Structure(
        kind="kdb",
        parents=((), (0,), (0, 1), (0, 1, 2), (0, 3, 2, 1)),
        order=(0, 1, 2, 3, 4),
        k=4,
        mutual_information=np.array([5, 4, 3, 2, 1.0]),
        conditional_mutual_information=cmi,
    )
    assert s.branching_order(4) == (1, 2, 3, 0)
    assert s.branching_order(0) == ()
    no_cmi = Structure(kind="kdb", parents=s.parents, order=s.order, k=4)
    assert no_cmi.branching_order(4) == (0, 3, 2, 1)  # stored order
    with pytest.raises(IndexError):
        s.branching_order(5)


# ---------------------------------------------------------------- export
EDGE_RE = re.compile(r'^\s*"((?:[^"\\]|\\.)*)"\s*->\s*"((?:[^"\\]|\\.)*)"', re.MULTILINE)


def fitted_kdb():
    rng = np.random.default_rng(21)
    cards = [3, 2, 4, 3, 2]
    X, y = random_data(rng, 300, cards, 2)
    return kdb(X, y, cards, 2, 2)


def test_to_dot_edges():
    s = fitted_kdb()
    dot = s.to_dot()
    assert dot.startswith("digraph BNC {") and dot.rstrip().endswith("}")
    assert dot.count("{") == dot.count("}") == 1
    edges = EDGE_RE.findall(dot)
    want = [("class", f"x{i}") for i in range(5)] + [
        (f"x{p}", f"x{i}") for i in range(5) for p in s.branching_order(i)
    ]
    assert edges == want
    names = ["age", 'say "hi"', "b\\c", "d", "e"]
    dot = s.to_dot(feature_names=names, class_name="income")
    edges = EDGE_RE.findall(dot)
    unescape = [
        (a.replace('\\"', '"').replace("\\\\", "\\"), b.replace('\\"', '"').replace("\\\\", "\\"))
        for a, b in edges
    ]
    assert unescape[:5] == [("income", n) for n in names]
    assert set(unescape[5:]) == {(names[p], names[i]) for p, i in s.edges()}
    with pytest.raises(ValueError, match="distinct"):
        s.to_dot(feature_names=["a", "a", "b", "c", "d"])
    with pytest.raises(ValueError, match="class_name"):
        s.to_dot(feature_names=["a", "b", "c", "d", "e"], class_name="a")
    with pytest.raises(ValueError, match="5 attributes"):
        s.to_dot(feature_names=["a"])


def test_to_networkx():
    s = fitted_kdb()
    g = s.to_networkx(feature_names=list("abcde"), class_name="Y")
    assert isinstance(g, nx.DiGraph)
    assert set(g.nodes) == set("abcdeY")
    class_edges = {(u, v) for u, v, d in g.edges(data=True) if d["role"] == "class"}
    assert class_edges == {("Y", c) for c in "abcde"}
    attr_edges = {
        (g.nodes[u]["index"], g.nodes[v]["index"])
        for u, v, d in g.edges(data=True)
        if d["role"] == "attribute"
    }
    assert attr_edges == set(s.edges())
    for i, name in enumerate("abcde"):
        preds = sorted(
            (g.edges[p, name]["rank"], g.nodes[p]["index"])
            for p in g.predecessors(name)
            if p != "Y"
        )
        assert tuple(idx for _, idx in preds) == s.branching_order(i)
        assert g.nodes[name]["mutual_information"] == s.mutual_information[i]
    assert nx.is_directed_acyclic_graph(g)
    g0 = naive_bayes(3).to_networkx()
    assert set(g0.edges) == {("class", "x0"), ("class", "x1"), ("class", "x2")}


def test_dict_round_trip():
    for s in (fitted_kdb(), naive_bayes(3), tan_from_scores(np.arange(4.0), np.zeros((4, 4)))):
        d = s.to_dict()
        text = json.dumps(d)
        back = Structure.from_dict(json.loads(text))
        assert back == s
        assert back.to_dict() == d
        assert Structure.from_json(s.to_json()) == s
        if s.cmi is not None:
            np.testing.assert_array_equal(back.cmi, s.cmi)  # exact float round trip
            assert not back.cmi.flags.writeable
    with pytest.raises(ValueError, match="format"):
        Structure.from_dict({"kind": "nb"})
    d = fitted_kdb().to_dict()
    d["version"] = 99
    with pytest.raises(ValueError, match="version"):
        Structure.from_dict(d)
    d = fitted_kdb().to_dict()
    d["order"][:2] = d["order"][1::-1]  # the second attribute's parent now ranks after it
    with pytest.raises(ValueError, match="earlier"):
        Structure.from_dict(d)


# ---------------------------------------------------------------- validation
def test_input_validation():
    X = np.array([[0, 1], [1, 2], [0, 0]])
    y = np.array([0, 1, 1])
    for bad_k in (-1, 1.5, "2", True, None):
        with pytest.raises(ValueError, match=r"\bk\b"):
            kdb(X, y, [2, 3], 2, bad_k)
    with pytest.raises(ValueError, match="attribute 1"):
        mutual_information(X, y, [2, 2], 2)
    with pytest.raises(ValueError, match="attribute 0"):
        conditional_mutual_information(X - 1, y, [2, 3], 2)
    with pytest.raises(ValueError, match="class codes"):
        tan(X, y, [2, 3], 1)
    with pytest.raises(ValueError, match="rows"):
        mutual_information(X, y[:2], [2, 3], 2)
    with pytest.raises(ValueError, match="cardinalities"):
        mutual_information(X, y, [2, 3, 4], 2)
    with pytest.raises(ValueError, match="cardinalities"):
        mutual_information(X, y, [2, 0], 2)
    with pytest.raises(ValueError, match="2-D"):
        mutual_information(X[:, 0], y, [2], 2)
    with pytest.raises(ValueError, match="n_classes"):
        mutual_information(X, y, [2, 3], 0)
    with pytest.raises(TypeError, match="integer"):
        mutual_information(X.astype(float), y, [2, 3], 2)


def test_structure_validation():
    with pytest.raises(ValueError, match="cycle"):
        Structure(kind="kdb", parents=((1,), (0,)), order=(0, 1), k=1)
    with pytest.raises(ValueError, match="own parent"):
        Structure(kind="kdb", parents=((0,), ()), order=(0, 1), k=1)
    with pytest.raises(ValueError, match="more than k"):
        Structure(kind="kdb", parents=((), (0,), (0, 1)), order=(0, 1, 2), k=1)
    with pytest.raises(ValueError, match="permutation"):
        Structure(kind="nb", parents=((), ()), order=(0, 0), k=0)
    with pytest.raises(ValueError, match=r"must have 1"):
        Structure(kind="tan", parents=((), (), (1,)), order=(0, 1, 2), k=1, root=0)
    with pytest.raises(ValueError, match="kind"):
        Structure(kind="skdb", parents=(), order=(), k=1)
    with pytest.raises(ValueError, match="symmetric"):
        Structure(
            kind="nb",
            parents=((), ()),
            order=(0, 1),
            k=0,
            conditional_mutual_information=[[0, 1], [0, 0]],
        )


def test_structure_is_immutable():
    s = fitted_kdb()
    with pytest.raises(AttributeError):
        s.k = 3
    with pytest.raises(ValueError):
        s.cmi[0, 1] = 1.0
    with pytest.raises(ValueError):
        s.mutual_information[0] = 1.0
    assert hash(s) == hash(Structure.from_dict(s.to_dict()))
    assert "kDB-2" in repr(s)


# ---------------------------------------------------------------- ESKDB: sampled orders
# Zhang, Petitjean & Buntine (KAIS 2020): each ensemble member's kDB uses an attribute order
# sampled without replacement with probability proportional to I(X_j; Y).

# The chi-square tests below use fixed seeds, so they are deterministic; the threshold says how
# unlucky a correct sampler would have to be to fail under some other seed (1 in 1000).
CHI2_P_MIN = 1e-3


def exact_order_probability(weights, perm) -> float:
    """P(perm) under sequential sampling without replacement, with the zero-weight policy.

    Positive weights: prod_t w[perm[t]] / (sum of the weights not yet drawn). Zero weights
    come after every positive one, each of their orders with probability 1 / n_zero!.
    """
    w = [float(weights[j]) for j in perm]
    n_pos = sum(v > 0 for v in w)
    if any(v == 0 for v in w[:n_pos]):
        return 0.0  # a zero-weight attribute before a positive one
    p = 1.0
    for t in range(n_pos):
        p *= w[t] / sum(w[t:])
    return p / math.factorial(len(w) - n_pos)


def order_frequencies(weights, n_draws, seed):
    rng = np.random.default_rng(seed)  # one Generator, advanced: an ensemble's orders
    return Counter(sample_order(weights, rng) for _ in range(n_draws))


def chisquare_against(weights, counts, probability) -> tuple[float, set]:
    """p-value of the observed permutation counts against ``probability(perm)``; and the
    permutations seen outside the support."""
    perms = list(itertools.permutations(range(len(weights))))
    support = [q for q in perms if probability(weights, q) > 0]
    n = sum(counts.values())
    observed = np.array([counts.get(q, 0) for q in support], dtype=float)
    expected = np.array([n * probability(weights, q) for q in support])
    assert expected.min() >= 5, "too few draws for the chi-square approximation"
    return float(chisquare(observed, expected).pvalue), set(counts) - set(support)


@pytest.mark.parametrize(
    ("weights", "seed"),
    [
        ([0.5, 0.3, 0.15, 0.05], 11),  # 24 permutations, rarest expected ~59 of 20000
        ([0.2, 0.2, 0.6], 12),  # ties in weight
        ([0.6, 0.0, 0.4, 0.0], 13),  # zero MI: last, both orders of the zeros equally likely
        ([0.0, 0.0, 0.0], 14),  # all zero: uniform permutation
        ([1e-300, 3e-300, 2e-300], 15),  # tiny weights: only ratios matter
    ],
)
def test_sample_order_follows_sequential_sampling_chi_square(weights, seed):
    counts = order_frequencies(weights, 20_000, seed)
    pvalue, outside = chisquare_against(weights, counts, exact_order_probability)
    assert not outside, f"orders with probability 0 drawn: {outside}"
    assert pvalue > CHI2_P_MIN, pvalue


def test_sample_order_chi_square_rejects_a_wrong_sampler():
    """Power check: the same 20000 draws are rejected, with overwhelming confidence, against
    uniformly random orders and against sampling proportional to sqrt(MI), so passing the
    test above means something."""
    weights = [0.5, 0.3, 0.15, 0.05]
    counts = order_frequencies(weights, 20_000, 11)

    def uniform(w, perm):
        return 1.0 / math.factorial(len(w))

    def square_root(w, perm):  # sampling proportional to sqrt(MI)
        return exact_order_probability([math.sqrt(v) for v in w], perm)

    for wrong in (uniform, square_root):
        pvalue, _ = chisquare_against(weights, counts, wrong)
        assert pvalue < 1e-12, wrong.__name__


def test_sample_order_first_position_is_proportional_to_mi():
    weights = np.array([0.05, 0.4, 0.0, 0.25, 0.3])
    n = 20_000
    first = np.bincount([o[0] for o in (sample_order(weights, s) for s in range(n))],
                        minlength=weights.size)
    assert first[2] == 0  # zero MI is never first while a positive one remains
    positive = weights > 0
    expected = n * weights[positive] / weights.sum()
    assert chisquare(first[positive], expected).pvalue > CHI2_P_MIN


def test_sample_order_seeds_reproduce():
    mi = np.array([0.3, 0.1, 0.0, 0.25, 0.05, 0.0, 0.2])
    a = sample_order(mi, 7)
    assert a == sample_order(mi, 7) == sample_order(mi, np.random.default_rng(7))
    assert sorted(a) == list(range(7))
    assert all(type(j) is int for j in a)
    assert set(a[-2:]) == {2, 5}  # zero MI last
    assert len({sample_order(mi, s) for s in range(30)}) > 5  # seeds give different orders
    rng = np.random.default_rng(3)
    successive = [sample_order(mi, rng) for _ in range(5)]  # a Generator is advanced
    rng = np.random.default_rng(3)
    assert successive == [sample_order(mi, rng) for _ in range(5)]
    assert len(set(successive)) > 1
    assert sample_order(mi, np.random.RandomState(1)) == sample_order(
        mi, np.random.RandomState(1)
    )
    assert sample_order([], 0) == ()
    assert sample_order([0.4], 0) == (0,)
    assert sample_order((0.0, 0.1), 0) == (1, 0)


@pytest.mark.parametrize(
    ("mi", "match"),
    [
        ([0.1, -0.2, 0.3], "mutual_information must be non-negative.*attribute 1"),
        ([0.1, float("nan")], "mutual_information must be finite"),
        ([0.1, float("inf")], "mutual_information must be finite"),
        ([[0.1, 0.2]], "mutual_information must be 1-D"),
        (0.3, "mutual_information must be 1-D"),
        (["a", "b"], "mutual_information must be a 1-D array of numbers"),
    ],
)
def test_sample_order_rejects_bad_mutual_information(mi, match):
    with pytest.raises(ValueError, match=match):
        sample_order(mi, 0)


@pytest.mark.parametrize("seed", [-1, 1.5, "seed", True])
def test_sample_order_rejects_bad_random_state(seed):
    with pytest.raises(ValueError, match="random_state"):
        sample_order([0.1, 0.2], seed)


def test_sample_order_is_exported():
    assert structure_pkg.sample_order is sample_order
    assert "sample_order" in structure_pkg.__all__


def brute_kdb_in_order(cmi, k, order):
    """Parents of each attribute: the k earlier attributes *in order* with the highest CMI,
    ties by index, by enumerating and sorting every earlier attribute."""
    parents = {}
    for pos, i in enumerate(order):
        earlier = sorted(order[:pos], key=lambda p: (-cmi[i, p], p))
        parents[i] = tuple(earlier[:k])
    return parents


@pytest.mark.parametrize("seed", range(4))
def test_kdb_with_the_mi_order_equals_the_default(seed):
    rng = np.random.default_rng(100 + seed)
    cards = [3, 2, 4, 3, 2, 3, 2]
    X, y = random_data(rng, 200, cards, 3)
    mi, cmi = mutual_information_scores(X, y, cards, 3)
    for k in range(5):
        default = kdb_from_scores(mi, cmi, k)
        for order in (mi_order(mi), list(mi_order(mi)), np.array(mi_order(mi))):
            assert kdb_from_scores(mi, cmi, k, order) == default
        assert kdb_from_scores(mi, cmi, k, order=None) == default
        assert kdb(X, y, cards, 3, k, order=mi_order(mi)) == kdb(X, y, cards, 3, k)


@pytest.mark.parametrize("seed", range(6))
def test_kdb_with_a_given_order_matches_brute_force(seed):
    rng = np.random.default_rng(200 + seed)
    n = int(rng.integers(1, 8))
    mi = rng.random(n)
    cmi = rng.random((n, n))
    cmi = np.round(cmi + cmi.T, 1)  # rounded: ties exercise the index rule
    np.fill_diagonal(cmi, 0.0)
    orders = [sample_order(mi, seed), tuple(int(j) for j in rng.permutation(n))]
    for order in orders:
        for k in range(n + 1):
            s = kdb_from_scores(mi, cmi, k, order)
            assert s.order == order and s.kind == "kdb" and s.k == k
            want = brute_kdb_in_order(cmi, k, order)
            for i in range(n):
                assert s.parents[i] == want[i], (order, k, i)
                assert s.branching_order(i) == s.parents[i]
            # the structure round-trips with its order
            assert Structure.from_dict(s.to_dict()) == s
            assert Structure.from_json(s.to_json()).order == order


def test_kdb_with_a_sampled_order_from_data():
    rng = np.random.default_rng(5)
    cards = [3, 2, 4, 3, 2]
    X, y = random_data(rng, 150, cards, 2)
    mi, cmi = mutual_information_scores(X, y, cards, 2)
    order = sample_order(mi, 1)
    s = kdb(X, y, cards, 2, 2, order)
    assert s == kdb_from_scores(mi, cmi, 2, order)
    assert s.order == order
    rank = {j: r for r, j in enumerate(order)}
    assert all(rank[p] < rank[i] for i, ps in enumerate(s.parents) for p in ps)


@pytest.mark.parametrize(
    ("order", "match"),
    [
        ([0, 1], "order must list all 3 attributes once, got 2"),
        ([0, 1, 2, 3], "order must list all 3 attributes once, got 4"),
        ([0, 1, 1], r"order must be a permutation of range\(3\): repeats \[1\]"),
        ([0, 1, 3], r"order holds attribute 3, out of range \[0, 3\)"),
        ([0, -1, 2], r"order holds attribute -1"),
        ([0.0, 1.0, 2.0], "order must hold integer attribute indices"),
        ([True, False, True], "order must hold integer attribute indices"),
        ([[0, 1, 2]], "order must be a 1-D sequence"),
        ("012", "order must be a 1-D sequence"),
        (np.array(["0", "1", "2"]), "order must hold integer attribute indices"),
    ],
)
def test_kdb_rejects_bad_orders(order, match):
    mi = np.array([0.3, 0.2, 0.1])
    with pytest.raises(ValueError, match=match):
        kdb_from_scores(mi, np.zeros((3, 3)), 1, order)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n_members=st.integers(1, 4))
def test_score_cache_gives_every_member_its_own_scores(seed, n_members):
    """Members sharing some columns (same key) and not others (their own codes, key None):
    each member's (MI, CMI) from one shared cache equal mutual_information_scores of its codes,
    bit for bit, in any order of the calls, and the cache keeps only the keyed pairs."""
    from fastpath.structure._scores import ScoreCache

    rng = np.random.default_rng(seed)
    n, shared_cards, own_cards, n_classes = 60, [3, 2, 4], [5, 3], 3
    y = rng.integers(0, n_classes, n)
    shared = np.stack([rng.integers(0, c, n) for c in shared_cards], axis=1)
    cache = ScoreCache()
    members = []
    for _ in range(n_members):
        own = np.stack([rng.integers(0, c, n) for c in own_cards], axis=1)
        members.append(np.concatenate([shared[:, :2], own, shared[:, 2:]], axis=1))
    cards = shared_cards[:2] + own_cards + shared_cards[2:]
    keys = ["a", "b", None, None, "c"]
    for codes in members[::-1] + members:
        mi, cmi = cache.scores(codes, y, cards, n_classes, keys)
        want_mi, want_cmi = mutual_information_scores(codes, y, cards, n_classes)
        np.testing.assert_array_equal(mi, want_mi)
        np.testing.assert_array_equal(cmi, want_cmi)
    kept = cache._cmi[~np.isnan(cache._cmi)]
    assert kept.size == 6  # the pairs of a, b, c, both ways


def _literal_sequential_order(w, rng):
    """sample_order's definition in numpy, one rng.random() per draw (its former code)."""
    top = w.max() if w.size else 0.0
    remaining = np.flatnonzero(w > 0)
    weights = w[remaining] / top if remaining.size else w[remaining]
    order = []
    while remaining.size:
        cumulative = np.cumsum(weights)
        u = rng.random() * cumulative[-1]
        pick = min(int(np.searchsorted(cumulative, u, side="right")), remaining.size - 1)
        order.append(int(remaining[pick]))
        remaining = np.delete(remaining, pick)
        weights = np.delete(weights, pick)
    order.extend(int(j) for j in rng.permutation(np.flatnonzero(w == 0)))
    return tuple(order)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.one_of(st.just(0.0), st.floats(1e-300, 10.0)), max_size=40),
       st.integers(0, 2**32 - 1))
def test_sample_order_is_the_literal_sequential_draw(weights, seed):
    w = np.asarray(weights, dtype=float)
    assert sample_order(w, seed) == _literal_sequential_order(w, np.random.default_rng(seed))
