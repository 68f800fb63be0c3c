"""The credible intervals' cost on car (kDB-2, default sampler): fit with and without the
draws (the same probabilities), the model file's size, the draws' bytes, and
``predict_proba_draws`` against ``predict_proba`` on the 1,728 rows (docs/performance.md,
"Credible intervals").

    python benchmarks/intervals_car.py
"""

import os
import tempfile
import time
import warnings

import numpy as np

from fastpath import BayesNetClassifier
from fastpath.io import load_dataset

X, y = load_dataset("car")
warnings.simplefilter("ignore")
res = {}
for draws in (False, True):
    clf = BayesNetClassifier(structure="kdb", k=2, random_state=0)
    if draws:
        clf.set_params(sampler=clf.hdp_options().replace(record_draws=True))
    t = time.perf_counter(); clf.fit(X, y); fit = time.perf_counter() - t
    with tempfile.TemporaryDirectory() as d:
        clf.save(os.path.join(d, "m.npz")); size = os.path.getsize(os.path.join(d, "m.npz"))
    res[draws] = (clf, fit, size)
a, b = res[False][0], res[True][0]
print("same proba", np.array_equal(a.predict_proba(X), b.predict_proba(X)))
print("fit s", res[False][1], res[True][1], "file bytes", res[False][2], res[True][2])
print("draws bytes", sum(r.draws.nbytes for r in b.hdp_results_), "tables bytes", sum(t.nbytes for t in b.members_[0].probability_tables))
b.predict_proba_draws(X.head(5))
t = time.perf_counter(); b.predict_proba(X); p = time.perf_counter() - t
t = time.perf_counter(); d = b.predict_proba_draws(X); q = time.perf_counter() - t
print("rows", len(X), "draws", d.shape[0], "predict_proba s", p, "predict_proba_draws s", q)
