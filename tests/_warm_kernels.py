"""Compile numba's kernels into its on-disk cache before the test workers start.

``python tests/_warm_kernels.py PART``: part 0 runs the HDP sampler's paths (a single
classifier's default sampler, the ensemble's preset, the paper's, kept draws; HGS), part 1 the
rest (encoding numeric columns, structure scores, selective kDB, m-estimates, the streamed driver,
prediction, explanations, the discriminative layer; HLS; codes of more than 255 values).
``tests/conftest.py`` runs both at once when pytest-xdist starts its workers: each kernel is
then compiled once, by one of two processes, instead of by every worker that first needs it (a
cold suite spent about a third of its CPU compiling the same kernels twice).
"""

from __future__ import annotations

import sys
import warnings

import numpy as np


def _sampler_paths() -> None:
    from fastpath import BayesNetClassifier, ESKDBClassifier
    from fastpath.estimate.hdp._options import HDPOptions
    from fastpath.io import load_dataset

    X, y = load_dataset("car")
    X, y = X.iloc[:400], np.asarray(y)[:400]
    single = BayesNetClassifier(k=2, random_state=0).fit(X, y)
    single.predict_proba(X)
    BayesNetClassifier(k=1, random_state=0,
                       sampler=HDPOptions.preset("paper", n_iter=20)).fit(X, y)
    kept = BayesNetClassifier(k=1, random_state=0)
    kept.set_params(sampler=kept.hdp_options().replace(record_draws=True)).fit(X, y)
    kept.predict_interval(X.iloc[:20])
    ESKDBClassifier(n_estimators=2, k=2, random_state=0).fit(X, y).predict_proba(X)
    # HGS's compiled L-BFGS (the runner's and the estimators' tests fit it)
    BayesNetClassifier(k=1, estimation="hgs", random_state=0).fit(X, y)


def _other_paths() -> None:
    from fastpath import BayesNetClassifier, ESKDBClassifier
    from fastpath.io import load_dataset

    X, y = load_dataset("credit-a")
    y = np.asarray(y)
    ensemble = ESKDBClassifier(n_estimators=2, k=2, estimation="m", random_state=0,
                               discriminative="attribute_class").fit(X, y)
    ensemble.predict_proba(X)
    ensemble.explain(X.iloc[:20])
    for structure in ("nb", "tan", "skdb"):
        BayesNetClassifier(structure, 2, estimation="m", random_state=0).fit(X, y)
    frame = X.assign(target=y)
    streamed = BayesNetClassifier("kdb", 1, estimation="m", random_state=0).fit(
        lambda: (frame.iloc[i:i + 300] for i in range(0, len(frame), 300)), "target")
    streamed.predict_proba(X)
    # HLS's compiled L-BFGS; codes of more than 255 values (a wider integer type)
    BayesNetClassifier("kdb", 1, estimation="hls", random_state=0).fit(X, y)
    wide = X.assign(many=np.arange(len(X)) % 300).astype({"many": "category"})
    BayesNetClassifier("kdb", 1, estimation="m", random_state=0).fit(wide, y).predict_proba(wide)


if __name__ == "__main__":
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (_sampler_paths if sys.argv[1:] == ["0"] else _other_paths)()
