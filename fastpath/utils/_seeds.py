"""numpy's ``SeedSequence`` states for many spawn keys in one compiled call.

``np.random.SeedSequence(entropy, spawn_key=key).generate_state(4, np.uint64)`` is the state a
sampler's stream starts from (:mod:`fastpath.estimate.hdp`: one per tree, chain and purpose).
Built in Python, one costs about as much as sampling a small tree, and an ensemble fit needs
two per tree (docs/performance.md, "Per-tree and per-member Python, counting,
normalisation"). :func:`seed_states` computes the same states for a whole array of keys in one
numba call, with numpy's algorithm (O'Neill's ``seed_seq_fe``, as numpy's
``bit_generator.pyx`` implements it: the entropy and the key hashed into a pool of four 32-bit
words, then the pool hashed into the output words); tests compare it with numpy itself, word
for word.
"""

from __future__ import annotations

import numbers

import numpy as np
from numba import njit

#: numpy's constants (``numpy/random/bit_generator.pyx``)
_POOL_SIZE = 4
_INIT_A = 0x43B0D7E5
_MULT_A = 0x931E8875
_INIT_B = 0x8B51F9DD
_MULT_B = 0x58F38DED
_MIX_MULT_L = 0xCA01F9DD
_MIX_MULT_R = 0x4973F715
_MASK32 = 0xFFFFFFFF
_XSHIFT = 16


def _words(value: int) -> list[int]:
    """``value`` as numpy's ``_coerce_to_uint32_array`` splits an int: little-endian 32-bit
    words, ``[0]`` for 0."""
    if value == 0:
        return [0]
    out = []
    while value > 0:
        out.append(value & _MASK32)
        value >>= 32
    return out


@njit(cache=True, nogil=True, inline="always")
def _hashmix(value, hash_const):
    # (value, new hash constant); all arithmetic modulo 2**32, held in uint64
    value = (value ^ hash_const) & np.uint64(_MASK32)
    hash_const = (hash_const * np.uint64(_MULT_A)) & np.uint64(_MASK32)
    value = (value * hash_const) & np.uint64(_MASK32)
    value ^= value >> np.uint64(_XSHIFT)
    return value, hash_const


@njit(cache=True, nogil=True, inline="always")
def _mix(x, y):
    result = (np.uint64(_MIX_MULT_L) * x - np.uint64(_MIX_MULT_R) * y) & np.uint64(_MASK32)
    result ^= result >> np.uint64(_XSHIFT)
    return result


@njit(cache=True, nogil=True)
def _seed_states(run_words, keys, n_words64, out):
    n_run = run_words.shape[0]
    n_key = keys.shape[1]
    entropy = np.empty(n_run + n_key, dtype=np.uint64)
    for j in range(n_run):
        entropy[j] = run_words[j]
    pool = np.empty(_POOL_SIZE, dtype=np.uint64)
    n_entropy = entropy.shape[0]
    for r in range(keys.shape[0]):
        for j in range(n_key):
            entropy[n_run + j] = np.uint64(keys[r, j])
        # mix_entropy
        hash_const = np.uint64(_INIT_A)
        for i in range(_POOL_SIZE):
            v = entropy[i] if i < n_entropy else np.uint64(0)
            pool[i], hash_const = _hashmix(v, hash_const)
        for i_src in range(_POOL_SIZE):
            for i_dst in range(_POOL_SIZE):
                if i_src != i_dst:
                    h, hash_const = _hashmix(pool[i_src], hash_const)
                    pool[i_dst] = _mix(pool[i_dst], h)
        for i_src in range(_POOL_SIZE, n_entropy):
            for i_dst in range(_POOL_SIZE):
                h, hash_const = _hashmix(entropy[i_src], hash_const)
                pool[i_dst] = _mix(pool[i_dst], h)
        # generate_state(n_words64, uint64): 2 * n_words64 32-bit words, paired little-endian
        hash_b = np.uint64(_INIT_B)
        for w in range(2 * n_words64):
            data = pool[w % _POOL_SIZE] ^ hash_b
            hash_b = (hash_b * np.uint64(_MULT_B)) & np.uint64(_MASK32)
            data = (data * hash_b) & np.uint64(_MASK32)
            data ^= data >> np.uint64(_XSHIFT)
            if w % 2 == 0:
                out[r, w // 2] = data
            else:
                out[r, w // 2] |= data << np.uint64(32)


def seed_states(entropy: int, keys: np.ndarray, n_words: int = 4) -> np.ndarray:
    """``SeedSequence(entropy, spawn_key=tuple(keys[r])).generate_state(n_words, np.uint64)``
    for every row ``r`` of ``keys``, shape ``(len(keys), n_words)``.

    Parameters
    ----------
    entropy : int
        A non-negative integer (a ``SeedSequence``'s ``entropy``).
    keys : array of int, shape (n, key_length)
        Spawn keys of one length, each entry in ``[0, 2**32)`` (one 32-bit word, as numpy
        splits it); ``key_length >= 1``.
    n_words : int
        64-bit words per state.
    """
    if (isinstance(entropy, bool) or not isinstance(entropy, numbers.Integral)
            or entropy < 0):
        raise ValueError(f"entropy must be a non-negative integer, got {entropy!r}")
    keys = np.ascontiguousarray(keys, dtype=np.int64)
    if keys.ndim != 2 or keys.shape[1] < 1:
        raise ValueError(f"keys must be shaped (n, key_length >= 1), got {keys.shape}")
    if keys.size and (keys.min() < 0 or keys.max() > _MASK32):
        raise ValueError("every spawn-key entry must be in [0, 2**32)")
    run = _words(int(entropy))
    # with a spawn key, numpy pads the entropy's words with zeros to the pool size
    run += [0] * max(0, _POOL_SIZE - len(run))
    out = np.zeros((keys.shape[0], int(n_words)), dtype=np.uint64)
    _seed_states(np.asarray(run, dtype=np.uint64), keys, int(n_words), out)
    return out
