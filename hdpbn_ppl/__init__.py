"""hdpbn_ppl: the hierarchical Dirichlet model of a context tree in NumPyro -- the ground truth.

* :mod:`hdpbn_ppl.model`    -- the model as the paper writes it (section 4.1);
* :mod:`hdpbn_ppl.reparam`  -- the exact transformations NUTS runs on (collapsed leaves, split
  Dirichlets), as NumPyro handlers;
* :mod:`hdpbn_ppl.infer`    -- NUTS, posterior means and MCSEs in fastpath's layout, ArviZ
  DataTree, diagnostics;
* :mod:`hdpbn_ppl.worked_example` -- the paper's worked example by deterministic integration;
* :mod:`hdpbn_ppl.suite`    -- the validation suite: named trees drawn from the model and taken
  from the bundled datasets;
* ``python -m hdpbn_ppl``   -- command line.

The model runs in double precision: deep, sparse trees put never-observed categories at
probabilities near 1e-40, which single precision flushes to zero. Importing the package changes
neither JAX's configuration nor the environment: :func:`~hdpbn_ppl.infer.fit` switches double
precision on for its own run only, and code that traces the model itself does so inside
:func:`~hdpbn_ppl.model.double_precision` (or enables ``jax_enable_x64`` for its whole
program).
"""

__all__ = ["double_precision", "fit"]  # noqa: F822 - defined lazily by __getattr__


def __getattr__(name):
    # lazy, so that ``import hdpbn_ppl`` (and its NumPy-only suite) does not start JAX, and
    # ``python -m hdpbn_ppl`` can still configure XLA's devices before JAX starts
    if name == "fit":
        from .infer import fit

        return fit
    if name == "double_precision":
        from .model import double_precision

        return double_precision
    raise AttributeError(name)
