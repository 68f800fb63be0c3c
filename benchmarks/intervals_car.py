"""The credible intervals' cost on car (kDB-2, default sampler): the fit with and without the
draws (the same probabilities), the model file's size, the draws' bytes, and
``predict_proba_draws`` against ``predict_proba`` on the 1,728 rows (docs/performance.md,
"Credible intervals").

    python benchmarks/intervals_car.py
"""

from __future__ import annotations

import os
import tempfile
import time
import warnings

import numpy as np

from fastpath import BayesNetClassifier
from fastpath.io import load_dataset


def main() -> None:
    X, y = load_dataset("car")
    fits = {}
    for draws in (False, True):
        clf = BayesNetClassifier(structure="kdb", k=2, random_state=0)
        if draws:
            clf.set_params(sampler=clf.hdp_options().replace(record_draws=True))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf.fit(X, y)
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "m.npz")
            clf.save(path)
            fits[draws] = (clf, os.path.getsize(path))
    plain, kept = fits[False][0], fits[True][0]
    print("same proba", np.array_equal(plain.predict_proba(X), kept.predict_proba(X)))
    print("file bytes", fits[False][1], fits[True][1])
    tables = sum(t.nbytes for t in kept.members_[0].probability_tables)
    print("draws bytes", sum(r.draws.nbytes for r in kept.hdp_results_), "tables bytes", tables)
    kept.predict_proba_draws(X.head(5))  # compiled before it is timed
    t0 = time.perf_counter()
    kept.predict_proba(X)
    proba_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    sampled = kept.predict_proba_draws(X)
    draws_s = time.perf_counter() - t0
    print("rows", len(X), "draws", sampled.shape[0], "predict_proba s", round(proba_s, 4),
          "predict_proba_draws s", round(draws_s, 3))


if __name__ == "__main__":
    main()
