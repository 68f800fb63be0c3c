"""A compiled L-BFGS minimiser with simple bounds, for the many small problems of HGS and HLS.

An ensemble fits hundreds of context trees, each a smooth problem of a few to a few hundred
parameters solved in about a hundred iterations; the Python of scipy's L-BFGS-B costs many
times the arithmetic per iteration there. This is the same method compiled with
numba, called once per tree.

Method
------
L-BFGS (Nocedal & Wright, *Numerical Optimization*, 2nd ed., Algorithms 7.4-7.5; memory ``m``
pairs ``(s, y)``, initial scaling ``s.y / y.y``) restricted to the *free* variables: a variable
at a bound whose gradient points out of the box is held there for the iteration (its component
of the direction is 0), as in projected quasi-Newton methods (Bertsekas 1982). The step is
backtracked along the projected path ``P(x + t d)`` (``P`` clips to the box) from ``t = 1``
until the Armijo condition ``f(P(x + t d)) <= f(x) + 1e-4 g.(P(x + t d) - x)`` holds, the next
``t`` the minimum of the quadratic through ``f(x)``, the slope and the rejected value, kept in
``[0.1 t, 0.5 t]``. An accepted step whose end still descends steeply (the Wolfe curvature
condition fails, as where ``f`` is not convex and no pair can be stored) is doubled while
``f`` keeps the Armijo decrease and falls. Near the optimum the decrease falls below
rounding: a step that keeps ``f`` within ``1e-14 |f|`` and shrinks the slope along it to at
most 0.9 of the first is accepted too (Hager & Zhang's approximate Wolfe conditions). A pair
with ``s.y`` not positive (a flat or concave direction) is not stored. The first step is
steepest descent of length at most 1.

Stops when every component of the projected gradient (0 for a variable held at its bound) is
at most ``gtol``; or, when ``ftol > 0``, when an iteration decreases ``f`` by at most
``ftol * max(|f|, |f_new|, 1)`` (a stall, scipy's rule); or after ``max_iter`` iterations; or
when the line search finds no decrease above rounding.

The objective is a jitted function ``fg(x, *args) -> (f, gradient)``; a problem's arguments
travel as a tuple. :func:`lbfgs_minimizer` compiles the method for one objective, which it calls
as a global of its own copy of :func:`_minimize`: numba types a function passed as an
*argument* by its dispatcher object, so a minimiser taking the objective as an argument could
not be cached (numba refuses a compiled function that holds a function value: "dynamic
globals"), compiled again in every process and, cached, grew its cache
index by an entry per process until saving an entry whose dispatcher was gone raised
``ReferenceError``.
"""

from __future__ import annotations

import hashlib
import inspect
import types
from collections.abc import Callable
from pathlib import Path

import numpy as np
from numba import njit

__all__ = ["lbfgs_minimizer"]

#: the Armijo condition's sufficient-decrease constant
ARMIJO = 1e-4
#: the relative change of f that rounding can hide, and the slope's shrinkage that a step must
#: show when f's decrease is below it (Hager & Zhang's approximate Wolfe conditions, 2005)
ROUNDING = 1e-14
CURVATURE = 0.9
#: the most doublings of an accepted step (where f is not convex)
MAX_EXPANSIONS = 30


@njit(cache=True, nogil=True)
def _dot(a, b):
    total = 0.0
    for i in range(a.shape[0]):
        total += a[i] * b[i]
    return total


@njit(cache=True, nogil=True)
def _held(x, g, lower, upper):
    """The variables at a bound whose gradient points out of the box (1) or not (0)."""
    n = x.shape[0]
    held = np.zeros(n, dtype=np.bool_)
    for i in range(n):
        held[i] = (x[i] <= lower[i] and g[i] > 0.0) or (x[i] >= upper[i] and g[i] < 0.0)
    return held


#: the objective a copy of :func:`_minimize` calls (set in each copy's globals by
#: :func:`lbfgs_minimizer`; this module's own :func:`_minimize` is never compiled)
OBJECTIVE = None


def lbfgs_minimizer(objective: Callable, name: str, *, cache: bool = True) -> Callable:
    """The method of the module docstring compiled for ``objective``.

    Parameters
    ----------
    objective : numba dispatcher
        ``objective(x, *args) -> (f, gradient)``.
    name : str
        Names the copy (``_minimize_<name>_<digest>``): numba's cache tells copies apart by
        name, so every objective of the library needs its own. The digest is of this file and
        the objective's: numba's cache is invalidated by a change of this file only, so an
        edit of the objective's module must rename the copy (the objective's own callees are
        expected in its module).
    cache : bool
        Cache the compilation on disk (tests of ad-hoc objectives pass False).

    Returns
    -------
    callable
        ``minimize(x0, args, lower, upper, max_iter, gtol, ftol, memory)`` ->
        ``(x, f, iterations)``: ``f(x, *args)`` minimised over ``lower <= x <= upper`` from
        ``x0`` (clipped into the box); ``ftol`` 0 turns the stall rule off; ``memory`` pairs.
    """
    template = _minimize
    digest = hashlib.sha256()
    for fn in (template, getattr(objective, "py_func", objective)):
        digest.update(Path(inspect.getfile(fn)).read_bytes())
    qualname = f"_minimize_{name}_{digest.hexdigest()[:12]}"
    bound = dict(template.__globals__, OBJECTIVE=objective)
    copy = types.FunctionType(template.__code__, bound, qualname, template.__defaults__,
                              template.__closure__)
    copy.__qualname__ = qualname
    copy.__module__ = template.__module__
    copy.__doc__ = template.__doc__
    return njit(cache=cache, nogil=True)(copy)


def _minimize(x0, args, lower, upper, max_iter, gtol, ftol, memory):
    """Minimise ``OBJECTIVE(x, *args)[0]`` over ``lower <= x <= upper`` from ``x0`` (clipped
    into the box) by the method of the module docstring; the minimiser, its value and the
    iterations taken."""
    n = x0.shape[0]
    x = np.minimum(np.maximum(x0, lower), upper)
    f, g = OBJECTIVE(x, *args)
    s_pairs = np.zeros((memory, n))
    y_pairs = np.zeros((memory, n))
    rho = np.zeros(memory)
    alpha = np.zeros(memory)
    n_pairs = 0
    newest = -1
    gamma = 1.0
    for iteration in range(max_iter):
        held = _held(x, g, lower, upper)
        largest = 0.0
        for i in range(n):
            if not held[i]:
                largest = max(largest, abs(g[i]))
        if largest <= gtol:
            return x, f, iteration
        # the two-loop recursion on the free variables: d = -H g
        q = g.copy()
        for i in range(n):
            if held[i]:
                q[i] = 0.0
        for i in range(n_pairs):
            j = (newest - i) % memory
            alpha[j] = rho[j] * _dot(s_pairs[j], q)
            q -= alpha[j] * y_pairs[j]
        if n_pairs == 0:  # steepest descent, of length 1 at most
            gamma = 1.0 / max(1.0, largest * np.sqrt(n))
        r = gamma * q
        for i in range(n_pairs - 1, -1, -1):
            j = (newest - i) % memory
            beta = rho[j] * _dot(y_pairs[j], r)
            r += (alpha[j] - beta) * s_pairs[j]
        d = -r
        for i in range(n):
            if held[i]:
                d[i] = 0.0
        if _dot(g, d) >= 0.0:  # not a descent direction (rounding): restart from the gradient
            n_pairs = 0
            gamma = 1.0 / max(1.0, largest * np.sqrt(n))
            d = -gamma * g
            for i in range(n):
                if held[i]:
                    d[i] = 0.0
        step = 1.0
        while True:
            x_new = np.minimum(np.maximum(x + step * d, lower), upper)
            change = _dot(g, x_new - x)  # the slope along the projected step, negative
            f_new, g_new = OBJECTIVE(x_new, *args)
            if f_new <= f + ARMIJO * change:
                break
            # near the optimum f's decrease falls below its rounding: then a step that leaves f
            # within rounding and shrinks the slope along it (approximate Wolfe) is progress
            if (f_new <= f + ROUNDING * abs(f)
                    and abs(_dot(g_new, x_new - x)) <= CURVATURE * abs(change)):
                break
            curvature = f_new - f - change
            trial = -change * step / (2.0 * curvature) if curvature > 0.0 else 0.5 * step
            step = min(max(trial, 0.1 * step), 0.5 * step)
            if step < 1e-16:  # no decrease left to find at this precision
                return x, f, iteration
        # where f curves down (it need not be convex) the accepted step may still descend
        # steeply at its end (the Wolfe curvature condition fails): double it while f keeps
        # the Armijo decrease, so that no pair (s, y) is needed to take long steps
        for _ in range(MAX_EXPANSIONS):
            if _dot(g_new, x_new - x) >= CURVATURE * change:
                break
            wider = np.minimum(np.maximum(x + 2.0 * step * d, lower), upper)
            if np.all(wider == x_new):
                break  # the box stops the step: it cannot grow
            wider_change = _dot(g, wider - x)
            f_wide, g_wide = OBJECTIVE(wider, *args)
            if not f_wide <= f + ARMIJO * wider_change or not f_wide < f_new:
                break
            step *= 2.0
            x_new, f_new, g_new, change = wider, f_wide, g_wide, wider_change
        s_vec = x_new - x
        y_vec = g_new - g
        sy = _dot(s_vec, y_vec)
        yy = _dot(y_vec, y_vec)
        if sy > 1e-12 * yy and sy > 0.0:
            newest = (newest + 1) % memory
            s_pairs[newest] = s_vec
            y_pairs[newest] = y_vec
            rho[newest] = 1.0 / sy
            n_pairs = min(n_pairs + 1, memory)
            gamma = sy / yy
        decrease = f - f_new
        f_old = f
        x = x_new
        f = f_new
        g = g_new
        if ftol > 0.0 and decrease <= ftol * max(abs(f_old), abs(f_new), 1.0):
            return x, f, iteration + 1
    return x, f, max_iter
