"""numpy's SeedSequence states, many keys at once (fastpath.utils._seeds)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastpath.utils._seeds import seed_states


def numpy_states(entropy, keys, n_words=4):
    return np.array([np.random.SeedSequence(entropy, spawn_key=tuple(int(x) for x in key))
                     .generate_state(n_words, np.uint64) for key in keys], dtype=np.uint64)


@settings(max_examples=60, deadline=None)
@given(entropy=st.integers(0, 2**160),
       keys=st.lists(st.lists(st.integers(0, 2**32 - 1), min_size=3, max_size=3),
                     min_size=1, max_size=8),
       n_words=st.integers(1, 6))
def test_the_states_are_numpys_word_for_word(entropy, keys, n_words):
    keys = np.array(keys, dtype=np.int64)
    np.testing.assert_array_equal(seed_states(entropy, keys, n_words),
                                  numpy_states(entropy, keys, n_words))


@pytest.mark.parametrize("key_length", [1, 2, 5, 7])
def test_keys_of_any_length(key_length):
    rng = np.random.default_rng(key_length)
    keys = rng.integers(0, 2**32, size=(10, key_length))
    for entropy in (0, 1, 2**32, np.random.SeedSequence(5).entropy):
        np.testing.assert_array_equal(seed_states(entropy, keys), numpy_states(entropy, keys))


def test_the_samplers_streams_are_the_seed_sequences_children():
    # estimate_trees' documented keys: chain c of tree i draws from (i, c, 0), its posterior
    # draws from (i, c, 1)
    from fastpath.estimate.hdp._api import _seed_states

    states = _seed_states(123, 4, 2)
    for i in range(4):
        for c in range(2):
            for purpose in range(2):
                want = np.random.SeedSequence(123, spawn_key=(i, c, purpose)).generate_state(
                    4, np.uint64)
                np.testing.assert_array_equal(states[i, c, purpose], want)


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3"])
def test_bad_entropy_is_refused(bad):
    with pytest.raises(ValueError, match="entropy"):
        seed_states(bad, np.zeros((1, 3), dtype=np.int64))


def test_bad_keys_are_refused():
    with pytest.raises(ValueError, match="spawn-key"):
        seed_states(1, np.array([[2**32, 0, 0]]))
    with pytest.raises(ValueError, match="shaped"):
        seed_states(1, np.zeros(3, dtype=np.int64))
