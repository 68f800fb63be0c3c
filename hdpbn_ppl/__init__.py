"""hdpbn_ppl: the hierarchical Dirichlet model of a context tree in NumPyro -- the ground truth.

* :mod:`hdpbn_ppl.model`    -- the model as the paper writes it (section 4.1);
* :mod:`hdpbn_ppl.reparam`  -- the exact transformations NUTS runs on (collapsed leaves, split
  Dirichlets), as NumPyro handlers;
* :mod:`hdpbn_ppl.infer`    -- NUTS, posterior means and MCSEs in fastpath's layout, ArviZ
  DataTree, diagnostics;
* :mod:`hdpbn_ppl.worked_example` -- the paper's worked example by deterministic integration;
* :mod:`hdpbn_ppl.testing`  -- trees drawn from the model (the acceptance suite);
* ``python -m hdpbn_ppl``   -- command line.

Importing the package switches JAX to double precision: deep, sparse trees put never-observed
categories at probabilities near 1e-40, which single precision flushes to zero.
"""

import os

# Read by JAX when it starts; the modules that use JAX also set it explicitly (jax may already be
# running). Not importing JAX here lets ``python -m hdpbn_ppl`` configure XLA's devices first.
os.environ.setdefault("JAX_ENABLE_X64", "true")

__all__ = ["fit"]


def __getattr__(name):
    if name == "fit":
        from .infer import fit

        return fit
    raise AttributeError(name)
