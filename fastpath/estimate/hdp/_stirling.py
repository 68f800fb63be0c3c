"""Log unsigned Stirling numbers of the first kind, ``log S(n, t)``.

``S(n, t)`` is defined by ``Gamma(a + n) / Gamma(a) = sum_t a**t S(n, t)`` (paper, eq. 7); it
counts the permutations of ``n`` elements with ``t`` cycles and enters the HDP collapsed Gibbs
sampler (paper, section 4, Algorithms 3-4) through ratios such as ``S(n + 1, t + 1) / S(n, t)``.

One :class:`LogStirlingTable` is shared by all context trees of a model and grown on demand with
:meth:`LogStirlingTable.ensure`; numba kernels call :func:`log_stirling` with ``table.kernel_args``.

How values are computed
-----------------------
* ``n <= N_EXACT`` (2048): a stored triangular table of doubles, filled with the exact recurrence
  ``S(n + 1, t) = n S(n, t) + S(n, t - 1)`` in log space.  At most ``(N_EXACT + 1)(N_EXACT + 2)/2``
  doubles (16.8 MB) whatever ``n_max`` is; rows are added as ``ensure`` needs them.
* ``n > N_EXACT``: nothing is stored; each call evaluates one of three formulas.

  - ``t - 1 <= T_EDGE`` (30): ``S(n, t) = (n-1)! [x^(t-1)] prod_{k<n} (1 + x/k)``; the factors
    ``k <= 48`` form a constant polynomial, the rest follow from the power sums
    ``zeta(r, 49) - zeta(r, n)`` by Newton's identities (exact up to rounding, O(t^2) flops).
  - ``n - t <= T_EDGE``: ``S(n, n - m) = e_m(1, 2, ..., n - 1)`` from the Faulhaber power sums,
    again by Newton's identities.
  - otherwise the saddle-point (Daniels) expansion of the Cauchy integral
    ``S(n, t) = (1/2 pi i) oint Gamma(x + n) / Gamma(x) x^(-t-1) dx``, the uniform expansion behind
    Moser-Wyman, Hwang (1995) and Temme (1993).  With ``a`` the root of
    ``a (psi(a + n) - psi(a)) = t`` (the cycle count ``K`` of an Ewens(a) permutation, a sum of
    independent Bernoulli(a / (a + k)), then has mean ``t``),
    ``log S = log Gamma(a+n) - log Gamma(a) - t log a - log(2 pi k_2) / 2 + log(1 + C1 + .. + C4)``
    where ``k_r`` are the cumulants of ``K`` and ``C_j`` the terms of order ``k_2^-j`` in the
    standardized cumulants ``k_r / k_2^(r/2)``, ``r <= 10``.  Outside the strips ``k_2 >~ 25``, so
    the first neglected term (``k_2^-5``) is ~3e-11.  The power sums ``sum_k (a / (a + k))^j`` and
    ``sum_k log(1 + k / a)`` come from Euler-Maclaurin with ``log1p``/geometric-sum forms, so no
    large terms cancel; the saddle is solved approximately and refined by a Taylor shift.

Accuracy, worst absolute error of log S (``.venv/bin/python benchmarks/stirling_accuracy.py``;
details in ``docs/stirling.md``):

* table, all n <= 2048 and all t, vs exact integers: 3.3e-11;
* table-free formulas vs exact integers (n = 64..2048 all t; n <= 5000 in both strips): 4.0e-11;
* vs a 45-digit mpmath quadrature of the Cauchy integral, t near 1, at the strip boundaries,
  near the modes a log n (a = 0.1..100), in the middle and near n: 2.9e-11 for n <= 10^4,
  2.3e-10 at n = 10^5, 3.7e-9 at 10^6, 3.0e-8 at 10^7 -- one or two ulps of log S, which is
  ~1.5e8 at n = 10^7; where log S is small (t near n) the error stays below ~1e-10.

Memory: at most 16.8 MB for any ``n_max`` (the ``n <= N_EXACT`` table).  Cost: a table lookup
for ``n <= N_EXACT``; otherwise an edge-strip series or the saddle point, an order of magnitude
dearer (timings: docs/stirling.md, "Memory and speed").
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from numba import njit

#: Rows ``n <= N_EXACT`` are stored exactly (triangular array of doubles, 16.8 MB when full).
N_EXACT = 2048
#: Width of the strips ``t - 1 <= T_EDGE`` and ``n - t <= T_EDGE`` evaluated with exact power sums.
T_EDGE = 30

_EM_SHIFT = 16.0  # Euler-Maclaurin sums start at a + k >= _EM_SHIFT (explicit terms below)
_N_BERN = 10  # Bernoulli terms B_2 .. B_20 in the Euler-Maclaurin tails
_J = 10  # power sums / cumulants up to order 10
_K_HEAD = 48  # small-t strip: prod_{k<=_K_HEAD} (1 + x/k) is a constant polynomial


def _bernoulli_fractions(m: int) -> list[Fraction]:
    """B_0..B_m (B_1 = -1/2) as exact fractions (Akiyama-Tanigawa)."""
    out = []
    a = [Fraction(0)] * (m + 1)
    for i in range(m + 1):
        a[i] = Fraction(1, i + 1)
        for j in range(i, 0, -1):
            a[j - 1] = j * (a[j - 1] - a[j])
        out.append(a[0])  # B_i with B_1 = +1/2
    out[1] = Fraction(-1, 2)
    return out


def _stirling2(r: int, j: int) -> int:
    s = [[0] * (r + 1) for _ in range(r + 1)]
    s[0][0] = 1
    for i in range(1, r + 1):
        for k in range(1, i + 1):
            s[i][k] = k * s[i - 1][k] + s[i - 1][k - 1]
    return s[r][j]


_BF = _bernoulli_fractions(2 * _N_BERN + 2 * T_EDGE + 4)
#: Bernoulli numbers B_0.. (B_1 = -1/2) as doubles.
_BERN = np.array([float(b) for b in _BF])
#: _EM_LOG[k] = B_{2k} / (2k (2k - 1)), k = 1.._N_BERN (Stirling-series coefficients).
_EM_LOG = np.array(
    [0.0] + [float(_BF[2 * k] / (2 * k * (2 * k - 1))) for k in range(1, _N_BERN + 1)])
#: _EM_POW[j, k] = B_{2k} / (2k)! * j (j + 1) ... (j + 2k - 2), j = 1..T_EDGE + 1, k = 1.._N_BERN
#: (Euler-Maclaurin coefficients of sum_k (c + k)^-j).
_EM_POW = np.zeros((max(_J, T_EDGE + 1) + 1, _N_BERN + 1))
for _j in range(1, _EM_POW.shape[0]):
    for _k in range(1, _N_BERN + 1):
        _rise = math.prod(range(_j, _j + 2 * _k - 1))
        _EM_POW[_j, _k] = float(_BF[2 * _k] * _rise / math.factorial(2 * _k))
#: _FAUL[i, j] = C(i + 1, j) B_j / (i + 1), B_1 = -1/2, so that
#: sum_{k<n} k^i = n^(i+1) sum_j _FAUL[i, j] n^-j (Faulhaber).
_FAUL = np.zeros((T_EDGE + 1, T_EDGE + 2))
for _i in range(1, T_EDGE + 1):
    for _jj in range(0, _i + 1):
        _FAUL[_i, _jj] = float(math.comb(_i + 1, _jj) * _BF[_jj] / (_i + 1))
#: _CUM[r, j] = S2(r, j) (-1)^(j-1) (j-1)!: Bernoulli(p) cumulant k_r = sum_j _CUM[r, j] p^j.
_CUM = np.zeros((_J + 1, _J + 1))
for _r in range(1, _J + 1):
    for _j in range(1, _r + 1):
        _CUM[_r, _j] = _stirling2(_r, _j) * (-1) ** (_j - 1) * math.factorial(_j - 1)


def _stirling1_row(n: int) -> list[int]:
    row = [1]
    for m in range(n):
        nxt = [0] * (m + 2)
        for t in range(1, m + 2):
            nxt[t] = (m * row[t] if t <= m else 0) + row[t - 1]
        row = nxt
    return row


#: _HEAD[j] = [x^j] prod_{k=1}^{_K_HEAD} (1 + x/k) = S(_K_HEAD + 1, j + 1) / _K_HEAD!
_row = _stirling1_row(_K_HEAD + 1)
_HEAD = np.array(
    [float(Fraction(_row[j + 1], math.factorial(_K_HEAD))) for j in range(T_EDGE + 1)])
#: _HEAD_H1 = H_{_K_HEAD}; _HEAD_Z[r] = zeta(r, _K_HEAD + 1) = sum_{k > _K_HEAD} k^-r, r >= 2.
_HEAD_H1 = float(sum(Fraction(1, k) for k in range(1, _K_HEAD + 1)))
_HEAD_Z = np.zeros(T_EDGE + 2)
for _r in range(2, T_EDGE + 2):
    _K = 4 * _K_HEAD  # explicit terms, then an Euler-Maclaurin tail at _K
    _s = math.fsum(k ** (-_r) for k in range(_K_HEAD + 1, _K))
    _t = _K ** (1 - _r) / (_r - 1) + 0.5 * _K ** (-_r)
    for _k in range(1, _N_BERN + 1):
        _t += float(_BF[2 * _k] / math.factorial(2 * _k)) * math.prod(
            range(_r, _r + 2 * _k - 1)) * _K ** (-_r - 2 * _k + 1)
    _HEAD_Z[_r] = math.fsum([_s, _t])
#: _INV[k] = 1 / k (multiplications instead of divisions in the inner loops)
_INV = np.array([0.0] + [1.0 / k for k in range(1, 2 * T_EDGE + 4)])
_EULER_GAMMA = 0.57721566490153286061
_LOG_2PI = math.log(2.0 * math.pi)


# --------------------------------------------------------------------------------------------
# exact table


@njit(cache=True, nogil=True)
def _fill_rows(flat: np.ndarray, n_lo: int, n_hi: int) -> None:
    """Fill rows ``n_lo..n_hi`` (inclusive) of the triangular table, row ``n_lo - 1`` given.

    Row ``n`` occupies ``flat[n (n + 1) / 2 : n (n + 1) / 2 + n + 1]`` and holds ``log S(n, t)`` for
    ``t = 0..n``.
    """
    for n in range(n_lo, n_hi + 1):
        off = n * (n + 1) // 2
        if n == 0:
            flat[0] = 0.0
            continue
        prev = (n - 1) * n // 2
        m = n - 1  # S(n, t) = m S(m, t) + S(m, t - 1)
        logm = math.log(m) if m > 0 else -np.inf
        flat[off] = -np.inf  # S(n, 0) = 0 for n > 0
        for t in range(1, n):
            x = logm + flat[prev + t]
            y = flat[prev + t - 1]
            if x == -np.inf:
                flat[off + t] = y
            elif y == -np.inf:
                flat[off + t] = x
            elif x > y:
                flat[off + t] = x + math.log1p(math.exp(y - x))
            else:
                flat[off + t] = y + math.log1p(math.exp(x - y))
        flat[off + n] = 0.0  # S(n, n) = 1


# --------------------------------------------------------------------------------------------
# large n: edge strips


@njit(cache=True, nogil=True)
def _log_stirling_small_t(n: int, t: int) -> float:
    """``log S(n, t)`` for ``t - 1 <= T_EDGE`` and ``n > _K_HEAD``.

    ``S(n, t) = (n-1)! [x^(t-1)] prod_{k=1}^{n-1} (1 + x/k)``.  The product over ``k <= _K_HEAD`` is
    the constant polynomial ``_HEAD``; the rest has power sums
    ``q_r = sum_{_K_HEAD < k < n} k^-r = zeta(r, _K_HEAD + 1) - zeta(r, n)`` that decay like
    ``_K_HEAD^(1-r)``, so Newton's identities for its coefficients involve no cancellation
    (applied to the whole product they lose up to 8 digits at t ~ 30).
    """
    L = t - 1
    nf = float(n)
    if L == 0:
        return math.lgamma(nf)
    inv = 1.0 / nf
    inv2 = inv * inv
    q = np.empty(2 * (L + 1))  # q[i] = (-1)^(i-1) q_i, then the tail coefficients g
    # q_1 = H_{n-1} - H_{K} = psi(n) + gamma - H_K
    q1 = (math.log(nf) - 0.5 * inv - inv2 * (1.0 / 12.0 - inv2 * (1.0 / 120.0 - inv2 / 252.0))
          + _EULER_GAMMA - _HEAD_H1)
    q[1] = q1
    # in j g_j = sum_i (-1)^(i-1) q_i g_{j-i}, term i is at most q_i (L / q_1)^(i-1) times the
    # i = 1 term: stop at imax where that is below 1e-18
    ratio = L / q1
    bound = 1.0
    imax = L
    lead = 1.0  # n^(1-r)
    for r in range(2, L + 1):
        bound *= ratio
        if _HEAD_Z[r] * bound < 1e-18 * q1:
            imax = r - 1
            break
        # zeta(r, n) by Euler-Maclaurin (n > _K_HEAD); negligible once n^(1-r) << q_r
        lead *= inv
        z = 0.0
        if lead > 1e-18 * _HEAD_Z[r]:
            z = lead / (r - 1) + 0.5 * lead * inv
            powk = lead  # n^(1-r); times inv2 per k gives n^(-r-2k+1)
            for k in range(1, _N_BERN + 1):
                powk *= inv2
                term = _EM_POW[r, k] * powk
                z += term
                if abs(term) < 1e-18 * z:
                    break
        qr = _HEAD_Z[r] - z
        q[r] = qr if (r & 1) == 1 else -qr
    g = q[L + 1 :]
    g[0] = 1.0
    acc = _HEAD[L]
    for j in range(1, L + 1):
        lim = min(j, imax)
        s0 = 0.0
        s1 = 0.0
        i = 1
        while i < lim:
            s0 += q[i] * g[j - i]
            s1 += q[i + 1] * g[j - i - 1]
            i += 2
        if i == lim:
            s0 += q[i] * g[j - i]
        gj = (s0 + s1) * _INV[j]
        g[j] = gj
        acc += _HEAD[L - j] * gj
    return math.lgamma(nf) + math.log(acc)


@njit(cache=True, nogil=True)
def _log_stirling_small_m(n: int, m: int) -> float:
    """``log S(n, n - m)``, ``m <= T_EDGE``, via ``e_m(1, 2, ..., n - 1)`` and Newton's identities.

    With ``P_i = sum_{k<n} k^i`` (Faulhaber) and the variable scaled by ``P_1``, the identities read
    ``j c_j = sum_i (-1)^(i-1) (P_i / P_1^i) c_{j-i}`` where ``P_i / P_1^i = O(n^(1-i))``: no
    cancellation.  ``S(n, n - m) = P_1^m c_m``.
    """
    if m == 0:
        return 0.0
    nf = float(n)
    inv = 1.0 / nf
    w1 = 0.5 * (1.0 - inv)  # P_1 / n^2
    d = np.empty(2 * (m + 1))  # d[1..imax], then the coefficients c
    d[1] = 1.0
    scale = 1.0  # n^(1-i) / w1^i
    imax = m
    mpow = 1.0
    for i in range(2, m + 1):
        scale *= inv / w1
        # w_i = P_i / n^(i+1) = sum_j _FAUL[i, j] n^-j  (odd j > 1 vanish)
        wi = _FAUL[i, 0] + _FAUL[i, 1] * inv
        ninv = inv
        for j in range(2, i + 1, 2):
            ninv *= inv * inv if j > 2 else inv
            term = _FAUL[i, j] * ninv
            wi += term
            if abs(term) < 1e-18 * wi:
                break
        di = wi * scale / w1
        d[i] = -di if (i & 1) == 0 else di
        # term i of the identity is at most |d_i| m^(i-1) times the i = 1 term
        mpow *= m
        if di * mpow < 1e-18:
            imax = i
            break
    c = d[m + 1 :]
    c[0] = 1.0
    for j in range(1, m + 1):
        lim = min(j, imax)
        s0 = 0.0
        s1 = 0.0
        i = 1
        while i < lim:
            s0 += d[i] * c[j - i]
            s1 += d[i + 1] * c[j - i - 1]
            i += 2
        if i == lim:
            s0 += d[i] * c[j - i]
        c[j] = (s0 + s1) * _INV[j]
    return m * math.log(0.5 * nf * (nf - 1.0)) + math.log(c[m])


# --------------------------------------------------------------------------------------------
# large n: saddle point


@njit(cache=True, nogil=True)
def _h(x: float) -> float:
    """(1 + x) log1p(x) - x, accurately for small x."""
    if x < 0.125:
        # sum_{j>=2} (-1)^j x^j / (j (j - 1))
        s = 0.0
        pw = x * x
        for j in range(2, 22):
            term = pw / (j * (j - 1))
            s += term if (j & 1) == 0 else -term
            pw *= x
        return s
    return (1.0 + x) * math.log1p(x) - x


@njit(cache=True, nogil=True, fastmath={"contract"})
def _saddle_sums(a: float, n: int, out: np.ndarray) -> float:
    """out[j] = sum_{k=1}^{n-1} (a / (a + k))^j for j = 1.._J; returns
    sum_{k=1}^{n-1} log1p(k / a) = log Gamma(a + n) - log Gamma(a + 1) - (n - 1) log a.

    Terms ``k <= k0`` (while ``a + k < _EM_SHIFT``) are summed explicitly, the rest by
    Euler-Maclaurin with the integrals in cancellation-free form (``log1p``, geometric sums,
    ``(1 + x) log1p(x) - x``), so that e.g. ``sum_k log1p(k / a) ~ n^2 / 2a`` is accurate for
    ``a >> n``.
    """
    for j in range(1, _J + 1):
        out[j] = 0.0
    k0 = 0
    if a + 1.0 < _EM_SHIFT:
        k0 = min(int(_EM_SHIFT - a - 1.0) + 1, n - 1)
    prod = 1.0
    for k in range(1, k0 + 1):
        p = a / (a + k)
        prod *= 1.0 + k / a
        pw = 1.0
        for j in range(1, _J + 1):
            pw *= p
            out[j] += pw
    lam = math.log(prod)
    nt = n - 1 - k0
    if nt <= 0:
        return lam
    c = a + k0 + 1.0
    d = a + n
    ic = 1.0 / c
    id_ = 1.0 / d
    ic2 = ic * ic
    id2 = id_ * id_
    lg = math.log1p(nt * ic)  # log(d / c)
    # log terms: integral a h(n/a) - a h((k0+1)/a), boundary -lg/2, Bernoulli corrections
    lam += a * _h(n / a) - a * _h((k0 + 1.0) / a) - 0.5 * lg
    ick = ic
    idk = id_
    for kk in range(1, _N_BERN + 1):
        term = _EM_LOG[kk] * (idk - ick)
        lam += term
        if abs(term) < 1e-18 * abs(lam):
            break
        ick *= ic2
        idk *= id2
    # power sums
    u = a * ic
    v = a * id_
    x = c * id_  # 1 - x = nt / d exactly
    omx = nt * id_
    uj = 1.0
    vj = 1.0
    geo = 0.0  # 1 + x + ... + x^(j-2)
    for j in range(1, _J + 1):
        uj *= u
        vj *= v
        # a^j * integral_0^nt (c + x)^-j dx = a^j c^(1-j) (1 - x^(j-1)) / (j - 1)
        if j == 1:
            sj = a * lg
        else:
            geo = 1.0 + x * geo
            sj = c * uj * omx * geo * _INV[j - 1]
        sj += 0.5 * (uj - vj)
        cu = uj * ic  # a^j c^(-j-1)
        dv = vj * id_
        tol = 1e-17 if j <= 2 else 1e-14
        for kk in range(1, _N_BERN + 1):
            term = _EM_POW[j, kk] * (cu - dv)
            sj += term
            if abs(term) < tol * abs(sj):
                break
            cu *= ic2
            dv *= id2
        out[j] += sj
    return lam


@njit(cache=True, nogil=True, fastmath={"contract"})
def _saddle_start(n: int, L: float) -> float:
    """a with a (psi(a + n) - psi(a + 1)) ~= L to ~1e-3 relative (psi(x) ~ log(x - 1/2) + ...)."""
    nf = float(n)
    D = nf - 1.0
    if L < 0.5 * nf:
        ell = math.log1p(nf / L)
        ell = math.log1p(nf * ell / L)
        a = L / ell
    else:
        a = max(nf, nf * nf / (2.0 * (nf - L)) - nf / 1.5)
    for _ in range(30):
        u = a + nf - 0.5
        w = a + 0.5
        uw = u * w
        iuw = 1.0 / uw
        G = math.log1p(D / w) - D * (u + w) * iuw * iuw * (1.0 / 24.0)
        dG = D * iuw * ((u * u + uw + w * w) * iuw * iuw * (1.0 / 12.0) - 1.0)
        g = a * G
        step = (g - L) / (g + a * a * dG)  # Newton step in log a
        if step > 2.0:
            step = 2.0
        elif step < -2.0:
            step = -2.0
        # a *= exp(-step), (2,2) Pade: the iterate only has to be close, not exact
        s2 = step * step * (1.0 / 12.0)
        a *= (1.0 - 0.5 * step + s2) / (1.0 + 0.5 * step + s2)
        if abs(step) < 1e-2:  # the error is now ~step^2: the caller's Taylor shift does the rest
            break
    return a


@njit(cache=True, nogil=True, fastmath={"contract"})
def _log_stirling_saddle(n: int, t: int) -> float:
    """Saddle-point expansion, for 1 + T_EDGE < t < n - T_EDGE.

    The sums are evaluated once, at an approximate saddle ``theta = log a``; the exact saddle
    ``theta + delta`` and the cumulants there follow from Taylor series in ``delta`` (|delta| is
    ~1e-4, far inside the radius of convergence, pi).
    """
    L = float(t - 1)  # mean of K - 1 = sum_{k>=1} Bernoulli(a / (a + k))
    m = float(n - t)
    a = _saddle_start(n, L)
    theta = math.log(a)
    buf = np.empty(3 * (_J + 1))
    ps = buf[: _J + 1]
    lam = _saddle_sums(a, n, ps)
    # derivatives in theta of Phi(theta) - t theta: kap[1] = residual of the saddle equation,
    # kap[r] = k_r, the cumulants of K (sums of Bernoulli cumulants)
    kap = buf[_J + 1 : 2 * (_J + 1)]
    kap[0] = 0.0
    kap[1] = ps[1] - L
    for rr in range(2, _J + 1):
        sr = 0.0
        for j in range(1, rr + 1):
            sr += _CUM[rr, j] * ps[j]
        kap[rr] = sr
    # delta: root of sum_{s>=1} kap[s] delta^(s-1) / (s-1)!
    delta = -kap[1] / kap[2]
    for _ in range(2):
        f = 0.0
        df = 0.0
        for s_ in range(_J, 0, -1):
            f = f * delta * _INV[s_] + kap[s_]
        for s_ in range(_J, 1, -1):
            df = df * delta * _INV[s_ - 1] + kap[s_]
        delta -= f / df
    # value shift sum_{s>=1} kap[s] delta^s / s! and the cumulants at the saddle
    shift = 0.0
    for s_ in range(_J, 0, -1):
        shift = (shift + kap[s_]) * delta * _INV[s_]
    kp = buf[2 * (_J + 1) :]
    for rr in range(2, _J + 1):
        v = 0.0
        for s_ in range(_J - rr, -1, -1):
            v = v * delta * _INV[s_ + 1] + kap[rr + s_]
        kp[rr] = v
    k2 = kp[2]
    ik2 = 1.0 / k2
    isd = math.sqrt(ik2)
    l3 = kp[3] * ik2 * isd
    l4 = kp[4] * ik2 * ik2
    l5 = kp[5] * ik2 * ik2 * isd
    l6 = kp[6] * ik2 * ik2 * ik2
    l7 = kp[7] * ik2 * ik2 * ik2 * isd
    l8 = kp[8] * ik2 * ik2 * ik2 * ik2
    l9 = kp[9] * ik2 * ik2 * ik2 * ik2 * isd
    l10 = kp[10] * ik2 * ik2 * ik2 * ik2 * ik2
    l32 = l3 * l3
    c1 = l4 / 8.0 - 5.0 / 24.0 * l32
    c2 = (-l6 / 48.0 + 35.0 / 384.0 * l4 * l4 + 7.0 / 48.0 * l3 * l5 - 35.0 / 64.0 * l32 * l4
          + 385.0 / 1152.0 * l32 * l32)
    c3 = (l8 / 384.0 - 21.0 / 640.0 * l5 * l5 - 7.0 / 128.0 * l4 * l6
          + 385.0 / 3072.0 * l4 * l4 * l4 - l3 * l7 / 32.0 + 77.0 / 128.0 * l3 * l4 * l5
          + 77.0 / 384.0 * l32 * l6
          - 5005.0 / 3072.0 * l32 * l4 * l4 - 1001.0 / 1152.0 * l32 * l3 * l5
          + 25025.0 / 9216.0 * l32 * l32 * l4 - 85085.0 / 82944.0 * l32 * l32 * l32)
    c4 = (-1.0 / 3840.0 * l10 + 77.0 / 7680.0 * l6 * l6 + 11.0 / 640.0 * l5 * l7
          + 11.0 / 1024.0 * l4 * l8 - 1001.0 / 5120.0 * l4 * l5 * l5
          - 1001.0 / 6144.0 * l4 * l4 * l6 + 25025.0 / 98304.0 * l4 * l4 * l4 * l4
          + 11.0 / 2304.0 * l3 * l9 - 1001.0 / 3840.0 * l3 * l5 * l6 - 143.0 / 768.0 * l3 * l4 * l7
          + 5005.0 / 2048.0 * l3 * l4 * l4 * l5 - 143.0 / 3072.0 * l32 * l8
          + 1001.0 / 1024.0 * l32 * l5 * l5 + 5005.0 / 3072.0 * l32 * l4 * l6
          - 425425.0 / 73728.0 * l32 * l4 * l4 * l4 + 715.0 / 2304.0 * l32 * l3 * l7
          - 85085.0 / 9216.0 * l32 * l3 * l4 * l5 - 85085.0 / 55296.0 * l32 * l32 * l6
          + 8083075.0 / 442368.0 * l32 * l32 * l4 * l4 + 323323.0 / 55296.0 * l32 * l32 * l3 * l5
          - 11316305.0 / 663552.0 * l32 * l32 * l32 * l4
          + 37182145.0 / 7962624.0 * l32 * l32 * l32 * l32)
    # sum_{k=0}^{n-1} log(a + k) - t log a = (n - t) log a + sum_{k=1}^{n-1} log1p(k / a), at theta,
    # moved to the saddle by the Taylor shift
    main = m * theta + lam + shift
    return main - 0.5 * (_LOG_2PI + math.log(k2)) + math.log1p(c1 + c2 + c3 + c4)


@njit(cache=True, nogil=True)
def _log_stirling_large(n: int, t: int) -> float:
    """``log S(n, t)`` without a table, for ``n >= 64`` (used for ``n > N_EXACT``)."""
    if t <= 0 or t > n:
        return -np.inf
    if t - 1 <= T_EDGE:
        return _log_stirling_small_t(n, t)
    if n - t <= T_EDGE:
        return _log_stirling_small_m(n, n - t)
    return _log_stirling_saddle(n, t)


# --------------------------------------------------------------------------------------------
# public kernel


@njit(cache=True, nogil=True)
def log_stirling(n: int, t: int, kernel_args) -> float:
    """``log S(n, t)``; ``kernel_args`` is ``table.kernel_args``.

    Returns ``-inf`` where ``S(n, t) = 0`` (``t > n``, ``t < 0``, or ``t = 0 < n``), and ``NaN``
    when ``n`` is negative or exceeds the table's ``n_max`` (a programming error: call
    ``table.ensure(n)`` first and pass the *current* ``table.kernel_args``).
    """
    flat = kernel_args[0]
    meta = kernel_args[1]
    if n < 0 or n > meta[0]:
        return np.nan
    if t < 0 or t > n:
        return -np.inf
    if n <= meta[1]:
        return flat[n * (n + 1) // 2 + t]
    return _log_stirling_large(n, t)


@njit(cache=True, nogil=True)
def _log_stirling_many(n: np.ndarray, t: np.ndarray, kernel_args) -> np.ndarray:
    out = np.empty(n.size)
    for i in range(n.size):
        out[i] = log_stirling(n[i], t[i], kernel_args)
    return out


@njit(cache=True, nogil=True)
def _log_stirling_large_many(n: np.ndarray, t: np.ndarray) -> np.ndarray:
    out = np.empty(n.size)
    for i in range(n.size):
        out[i] = _log_stirling_large(n[i], t[i])
    return out


class LogStirlingTable:
    """Growable table of log S(n, t), shared by all trees of a model.

    ``table.ensure(n)`` makes every ``n' <= n`` evaluable; values never change when the table
    grows.  Only rows ``n <= N_EXACT`` are stored (at most 16.8 MB); larger ``n`` are evaluated on
    the fly, so the storage is bounded whatever ``n_max`` is.  ``table.kernel_args`` is a tuple of
    numpy arrays for :func:`log_stirling`; it is replaced when the table grows, so fetch it again
    after every :meth:`ensure`.
    """

    def __init__(self, n_max: int = 0) -> None:
        self._flat = np.zeros(1)
        self._rows = 0  # rows 0.._rows are filled
        self._n_max = 0
        self._meta = np.zeros(2, dtype=np.int64)
        self.ensure(n_max)

    def ensure(self, n_max: int) -> None:
        """Grow so that any ``n <= n_max`` can be evaluated."""
        n_max = int(n_max)
        if n_max < 0:
            raise ValueError("n_max must be >= 0")
        if n_max <= self._n_max:
            return
        rows = min(n_max, N_EXACT)
        if rows > self._rows:
            need = (rows + 1) * (rows + 2) // 2
            if need > self._flat.size:
                cap_rows = min(max(rows, 2 * self._rows), N_EXACT)
                new = np.empty((cap_rows + 1) * (cap_rows + 2) // 2)
                used = (self._rows + 1) * (self._rows + 2) // 2
                new[:used] = self._flat[:used]
                self._flat = new
            _fill_rows(self._flat, self._rows + 1, rows)
            self._rows = rows
        self._n_max = n_max
        self._meta = np.array([self._n_max, self._rows], dtype=np.int64)

    @property
    def n_max(self) -> int:
        return self._n_max

    @property
    def kernel_args(self) -> tuple[np.ndarray, ...]:
        return (self._flat, self._meta)

    @property
    def nbytes(self) -> int:
        return int(self._flat.nbytes + self._meta.nbytes)

    def __call__(self, n, t):
        """``log S(n, t)``, vectorised over (broadcast) arrays; grows the table to ``max(n)``."""
        n_arr, t_arr = np.broadcast_arrays(np.asarray(n, dtype=np.int64),
                                           np.asarray(t, dtype=np.int64))
        if n_arr.size and int(n_arr.max()) > self._n_max:
            self.ensure(int(n_arr.max()))
        out = _log_stirling_many(np.array(n_arr, dtype=np.int64).ravel(),
                                 np.array(t_arr, dtype=np.int64).ravel(), self.kernel_args)
        if n_arr.ndim == 0:
            return float(out[0])
        return out.reshape(n_arr.shape)


def log_stirling_large(n, t):
    """The table-free formulas (used for ``n > N_EXACT``) at any ``n >= 64``; for testing."""
    n_arr, t_arr = np.broadcast_arrays(np.asarray(n, dtype=np.int64), np.asarray(t, dtype=np.int64))
    out = _log_stirling_large_many(np.array(n_arr, dtype=np.int64).ravel(),
                                   np.array(t_arr, dtype=np.int64).ravel())
    return float(out[0]) if n_arr.ndim == 0 else out.reshape(n_arr.shape)


def log_stirling_reference(n: int, t: int, dps: int = 50) -> float:
    """High-precision ``log S(n, t)`` with mpmath (for validation; needs the ``mpmath`` package).

    Evaluates the Cauchy integral ``S = (1/2 pi i) oint Gamma(x + n) / Gamma(x) x^(-t-1) dx`` on the
    circle through the saddle point ``a`` (root of ``a (psi(a + n) - psi(a)) = t``) by quadrature
    at ``dps`` digits.  Independent of the expansions used by :func:`log_stirling`.
    """
    import mpmath as mp

    n = int(n)
    t = int(t)
    if t < 0 or t > n:
        return -math.inf
    if n == 0:
        return 0.0
    if t == 0:
        return -math.inf
    if t == n:
        return 0.0
    with mp.workdps(dps):
        if t == 1:
            return float(mp.loggamma(n))

        def mean(th):
            a = mp.exp(th)
            return a * (mp.digamma(a + n) - mp.digamma(a)) - t

        # bracket in theta = log a
        lo, hi = mp.mpf(-60), mp.mpf(60)
        for _ in range(400):
            mid = (lo + hi) / 2
            if mean(mid) > 0:
                hi = mid
            else:
                lo = mid
            if hi - lo < mp.mpf(10) ** (-12):
                break
        theta = mp.findroot(mean, (lo + hi) / 2, tol=mp.mpf(10) ** (-(dps - 10)))
        a = mp.exp(theta)
        k2 = a * (mp.digamma(a + n) - mp.digamma(a)) + a * a * (
            mp.polygamma(1, a + n) - mp.polygamma(1, a))
        phi0 = mp.loggamma(a + n) - mp.loggamma(a)

        def integrand(th):
            x = a * mp.expj(th)
            return mp.re(mp.exp(mp.loggamma(x + n) - mp.loggamma(x) - phi0 - 1j * t * th))

        sd = mp.sqrt(k2)
        cut = min(mp.pi, 40 / sd)
        pts = [0] + [cut * f for f in (0.125, 0.25, 0.5, 1)]
        val = mp.quad(integrand, pts) / mp.pi
        return float(phi0 - t * theta + mp.log(val))
