"""The readable model's inputs and shapes, its precision, and the tree generator (no NUTS).

The model needs JAX in double precision, which these tests switch on for themselves (scoped,
as a user would, :func:`hdpbn_ppl.model.double_precision`); importing hdpbn_ppl must not.
"""

import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("numpyro")
pytestmark = pytest.mark.ppl

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from numpyro import handlers  # noqa: E402

from fastpath.counts import TYING_STRATEGIES, tying_groups  # noqa: E402
from hdpbn_ppl import suite  # noqa: E402
from hdpbn_ppl.model import HDPTree, double_precision, hdp_model  # noqa: E402


@pytest.fixture(autouse=True)
def _x64():
    with double_precision():
        yield


@pytest.mark.parametrize("tying", TYING_STRATEGIES)
def test_hdptree_levels_match_the_context_tree(tying):
    tree = suite.model_tree((2, 3, 2), 4, 60, seed=3, alpha=(1.0, 2.0, 0.5), alpha0=4.0)
    t = HDPTree.from_tree(tree, tying)
    groups = tying_groups(tree, tying)
    np.testing.assert_array_equal(t.groups, groups)
    assert t.n_groups == groups.max() + 1
    for d in range(1, tree.depth + 1):
        lo, hi = tree.level_offsets[d], tree.level_offsets[d + 1]
        # parent indices are local to the previous level
        np.testing.assert_array_equal(t.parent[d] + tree.level_offsets[d - 1], tree.parent[lo:hi])
        np.testing.assert_array_equal(t.group[d], groups[lo:hi])
    for d in range(tree.depth):
        lo, hi = tree.level_offsets[d], tree.level_offsets[d + 1]
        np.testing.assert_array_equal(t.observed[d], tree.counts[lo:hi] > 0)
        np.testing.assert_array_equal(t.reference[d], tree.counts[lo:hi].argmax(axis=1))
        np.testing.assert_array_equal(t.node_total[d], tree.counts[lo:hi].sum(axis=1))
    np.testing.assert_array_equal(t.leaf_counts, tree.counts[tree.leaves])


# about 12 s: outside make test
# (10 minutes on 2 cores); make study runs it
@pytest.mark.study
def test_readable_model_prior_draw_has_one_row_per_node():
    tree = suite.get("m_d3_k2_sparse").build()
    t = HDPTree.from_tree(tree, "level")

    def draw(key):
        tr = handlers.trace(handlers.seed(hdp_model, key)).get_trace(t, None)
        return {name: site["value"] for name, site in tr.items()}

    values = jax.jit(draw)(jax.random.PRNGKey(0))  # one compilation, not one per operation
    rows = [values[name].shape for name in t.site_names()]
    assert rows == [(n, tree.n_values) for n in tree.nodes_per_level]
    assert values["alpha"].shape == (t.n_groups,)
    assert values["n"].shape == t.leaf_counts.shape
    np.testing.assert_array_equal(np.asarray(values["n"]).sum(1), t.leaf_totals)


def test_model_rejects_trees_it_cannot_describe():
    tree = suite.model_tree((2,), 2, 10, seed=1, alpha=(1.0,))
    with pytest.raises(ValueError):
        HDPTree.from_tree(tree, "level", alpha0=0.0)
    with pytest.raises(ValueError):
        HDPTree.from_tree(tree, "nonsense")


def test_model_tree_is_reproducible_and_observed_only():
    a = suite.model_tree((3, 2), 4, 200, seed=9, alpha=(2.0, 1.0), path_concentration=0.5)
    b = suite.model_tree((3, 2), 4, 200, seed=9, alpha=(2.0, 1.0), path_concentration=0.5)
    np.testing.assert_array_equal(a.counts, b.counts)
    assert a.n_rows == 200
    assert (a.counts[a.leaves].sum(axis=1) > 0).all()
    # (the suite's coverage and the prior draws' truth: tests/test_validation_suite.py)


# a fresh process importing JAX (about 9 s): outside make test
# (10 minutes on 2 cores); make study runs it
@pytest.mark.study
def test_model_refuses_single_precision_and_says_how_to_switch():
    t = HDPTree.from_tree(suite.get("m_d1_k2_n10").build(), "level")
    with jax.enable_x64(False):
        with pytest.raises(RuntimeError, match="double precision") as err:
            handlers.trace(handlers.seed(hdp_model, 0)).get_trace(t)
        assert "double_precision()" in str(err.value) and "jax_enable_x64" in str(err.value)
        with double_precision():  # switched on for this block only
            handlers.trace(handlers.seed(hdp_model, 0)).get_trace(t)
            assert jnp.zeros(1).dtype == jnp.float64
        assert jnp.zeros(1).dtype == jnp.float32


def _fresh_python(code: str) -> list[str]:
    """What ``code`` prints in a new interpreter (none of this process's imports or settings)."""
    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=True).stdout.split()


# a fresh process importing JAX (about 9 s): outside make test
# (10 minutes on 2 cores); make study runs it
@pytest.mark.study
def test_import_changes_neither_jax_nor_the_environment():
    code = ("import os, jax; import hdpbn_ppl, hdpbn_ppl.infer, hdpbn_ppl.cli; "
            "print(jax.config.jax_enable_x64, 'JAX_ENABLE_X64' in os.environ)")
    assert _fresh_python(code) == ["False", "False"]


# a fresh process importing JAX (about 9 s): outside make test
# (10 minutes on 2 cores); make study runs it
@pytest.mark.study
def test_numpyro_is_whole_when_arviz_is_imported_first():
    # ArviZ puts a lazy placeholder for numpyro in sys.modules; hdpbn_ppl.infer must still load
    # numpyro whole (numpyro.factor, used by NUTS's potential, needs distributions.distribution)
    code = ("import arviz; import hdpbn_ppl.infer; import numpyro.distributions as d; "
            "print(hasattr(d, 'distribution'))")
    assert _fresh_python(code) == ["True"]
