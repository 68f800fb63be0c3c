"""The paper's experiments, reproducible by one command: ``python -m validation.experiments``.

:mod:`.classifiers` names the classifiers (structure x estimation method, random forest, XGBoost);
:mod:`.runner` runs datasets x classifiers x folds as cached cells in parallel processes;
:mod:`.reporting` counts wins/draws/losses with the sign test and writes the paper's Tables 2-3;
:mod:`.plots` draws the figures; :mod:`.cli` is the command line (:func:`main`).
"""

from .cli import main

__all__ = ["main"]
