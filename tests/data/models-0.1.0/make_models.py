"""Model files of the format of hdpbn 0.1.0 (model-file version 4), with their predictions.

Run with the code of the commit that README.md names: ``python make_models.py OUT_DIR``.
"""

import dataclasses
import sys

import numpy as np

from fastpath import BayesNetClassifier, ESKDBClassifier, HDPOptions, load_dataset
from fastpath.estimate import HLSOptions

out = sys.argv[1]
X, y = load_dataset("credit-a")
X, y = X.iloc[::3].reset_index(drop=True), np.asarray(y)[::3]
cases = {
    # the default sampler, two chains and a traced node, traces dropped after the fit
    "kdb-hdp": BayesNetClassifier("kdb", 2, sampler=HDPOptions(
        min_iter=60, max_iter=400, burn_in=20, mcse_tolerance=0.02, n_chains=2,
        trace_nodes=(0,), keep_traces=False), random_state=0),
    # the paper's sampler, a fixed length with posterior draws (saved for credible intervals)
    "skdb-hdp-paper": BayesNetClassifier("skdb", 2, sampler=HDPOptions.preset(
        "paper", n_iter=150, concentration_every=1, tying="same-parent", alpha0=3.0,
        record_draws=(0,)), random_state=1),
    # m-estimates chosen on the holdout, a dict of class weights
    "tan-m": BayesNetClassifier("tan", estimation="m", m="holdout",
                                class_weight={"+": 2.0}, random_state=0),
    # the ensemble's defaults (the preset by name, discriminative weights, mixed cut points)
    "eskdb-hdp": ESKDBClassifier(3, 2, random_state=0),
    # an estimation method's options object (saved as the method's name and its fields), members
    # of another ordered structure learner, the generative members
    "eskdb-hls": ESKDBClassifier(3, 2, HLSOptions(C=0.5), structure="kdb",
                                 discriminative=None, random_state=2),
}
for name, clf in cases.items():
    clf.fit(X, y)
    clf.save(f"{out}/{name}.npz")
    np.save(f"{out}/{name}-proba.npy", clf.predict_proba(X))
    np.save(f"{out}/{name}-log-proba.npy", clf.predict_log_proba(X))
    print(name, dataclasses.asdict(clf.hdp_options()) if "hdp" in name else "")
