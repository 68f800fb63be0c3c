"""``rf-weka``: Weka's RandomForest on the MDL-discretised attributes as *nominal* attributes.

The paper's random forest is Weka's (100 trees, ``int(log2(n_attributes) + 1)`` attributes tried
per split, no minimum leaf size) run on the discretised data. Weka's trees split a nominal
attribute multi-way, one branch per value, which neither scikit-learn forest of
:mod:`validation.experiments.classifiers` does (ordinal codes, one-hot indicators). This module
runs the real thing: the same :class:`~fastpath.encode.TableEncoder` codes as the other baselines,
written as ARFF files with every attribute nominal, given to ``weka.classifiers.trees.RandomForest``
through the ``java`` command line, and the class distributions read back from its
``-p 0 -distribution`` output.

Installation
------------
``make weka`` (or ``apt-get install -y weka`` as root): Debian's ``weka`` package puts the jar at
``/usr/share/java/weka.jar`` and pulls in a Java runtime. Set ``HDPBN_WEKA_JAR`` to use another
jar. :func:`weka_available` says why the bridge cannot run; the tests and the runner skip
``rf-weka`` with that reason.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fastpath.encode import TableEncoder
from fastpath.io import write_arff

__all__ = [
    "DEFAULT_WEKA_JAR", "WEKA_JAR_ENV", "WekaForest", "java_seed", "weka_available", "weka_version",
]

#: where Debian's ``weka`` package installs the jar (a link to ``weka-<version>.jar``)
DEFAULT_WEKA_JAR = "/usr/share/java/weka.jar"
#: environment variable naming another jar
WEKA_JAR_ENV = "HDPBN_WEKA_JAR"
#: how to get Weka when it is missing (quoted in every "not available" message)
INSTALL_HINT = (
    f"install it with `make weka` (apt-get install -y weka) or point {WEKA_JAR_ENV} at a weka.jar"
)
#: the classifier and the paper's settings: 100 trees (given explicitly: Weka versions differ
#: in their default), ``-K 0`` = int(log2(#predictors) + 1) attributes per split; Weka's
#: RandomTree has no depth limit by default and a minimum of one instance per leaf
WEKA_FOREST = "weka.classifiers.trees.RandomForest"
N_TREES = 100
#: seconds a Weka run may take before it is stopped (a large dataset's 100 unpruned trees take
#: seconds to minutes; an hour means something is stuck)
TIMEOUT_S = 3600


def weka_jar() -> Path:
    """The jar the bridge uses: ``$HDPBN_WEKA_JAR``, else Debian's ``/usr/share/java/weka.jar``."""
    return Path(os.environ.get(WEKA_JAR_ENV) or DEFAULT_WEKA_JAR)


@functools.lru_cache(maxsize=8)
def _probe(java: str, jar: str) -> tuple[str | None, str | None]:
    """``(reason, version)`` of one java/jar pair; cached so that a run probes once, keyed on
    the paths so that a changed ``HDPBN_WEKA_JAR`` is probed afresh."""
    try:
        done = subprocess.run(
            [java, "-cp", jar, "weka.core.Version"], capture_output=True, text=True, timeout=120
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"running {java} failed: {exc}", None
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = _tail(done.stderr or done.stdout)
        return f"{jar} does not run Weka with {java} (exit {done.returncode}): {tail}", None
    return None, lines[0].strip()


def weka_available() -> str | None:
    """``None`` when Java and Weka can run, else the reason they cannot, in one sentence.

    Checks that ``java`` is on ``PATH``, that the jar (:func:`weka_jar`) exists, and that
    ``java -cp <jar> weka.core.Version`` runs (once per java/jar pair).
    """
    java = shutil.which("java")
    if java is None:
        return f"Weka needs Java, and no `java` is on PATH; {INSTALL_HINT}"
    jar = weka_jar()
    if not jar.is_file():
        return f"Weka's jar {jar} does not exist; {INSTALL_HINT}"
    reason, _ = _probe(java, str(jar))
    return None if reason is None else f"{reason}; {INSTALL_HINT}"


def weka_version() -> str | None:
    """The version of the jar (e.g. ``"3.6.14"``), or ``None`` when Weka is not available."""
    java = shutil.which("java")
    jar = weka_jar()
    if java is None or not jar.is_file():
        return None
    return _probe(java, str(jar))[1]


def _tail(text: str, n_lines: int = 15) -> str:
    lines = [line for line in (text or "").strip().splitlines() if line.strip()]
    return "\n".join(lines[-n_lines:]) if lines else "(no output)"


def _diagnosis(stdout: str, stderr: str) -> str:
    """What to show when a run fails: Weka's exception lines first (Weka 3.6 prints them above
    a long usage text, which a plain tail would show instead), then the tail of stderr."""
    text = f"{stderr}\n{stdout}"
    errors = [line.strip() for line in text.splitlines()
              if "exception" in line.lower() or line.lower().startswith("error")]
    tail = _tail(stderr) if stderr.strip() else _tail(stdout)
    return "\n".join([*(line for line in errors[:5] if line not in tail), tail])


def _unique_labels(labels: list[str]) -> list[str]:
    """ARFF nominal values must be distinct: a label that repeats an earlier one (two nominal
    values with the same text, two intervals equal at 6 significant digits) gets ``#<code>``."""
    seen: set[str] = set()
    out = []
    for code, label in enumerate(labels):
        while label in seen:
            label = f"{label}#{code}"
        seen.add(label)
        out.append(label)
    return out


def java_seed(seed: int) -> int:
    """``seed`` as a non-negative Java ``int`` (Weka parses ``-S`` with ``Integer.parseInt``;
    the runner's seeds go up to 2**32 - 1): ``seed mod 2**31``, unchanged below 2**31."""
    return int(seed) % 2**31


class WekaForest:
    """Weka's RandomForest on the BNC encoder's codes as nominal attributes (``rf-weka``).

    ``fit`` learns the encoder (MDL cut points, nominal categories) on the training rows and
    keeps their codes; ``predict_proba`` writes the training and test codes as ARFF files and
    runs, in a temporary directory::

        java -cp <jar> weka.classifiers.trees.RandomForest -I 100 -K 0 -S <seed>
             -t train.arff -T test.arff -p 0 -distribution

    Weka trains and predicts in that one run (one JVM start instead of two, and no model file
    to keep), so the forest is built during ``predict_proba``: the runner's ``fit_seconds``
    hold only the encoding. The same seed gives the same forest on every call.

    Parameters
    ----------
    categorical_features : "auto", sequence of str or int, or boolean mask, default="auto"
        Which columns are nominal, as in :class:`~fastpath.encode.TableEncoder`.
    seed : int, default=0
        Weka's ``-S``: the seed of the bootstrap samples and of the attributes tried per split
        (a Java ``int``: taken modulo 2**31, :func:`java_seed`).
    n_jobs : int, default=1
        Accepted for the runner's interface; unused (Weka 3.6's forest is single-threaded).

    Attributes
    ----------
    classes_ : ndarray
        The class labels, sorted; the columns of :meth:`predict_proba`.
    encoder_ : TableEncoder
        The coding learnt on the training rows.

    Notes
    -----
    Every attribute is nominal with the labels of its codes as values (the MDL intervals, the
    nominal values, ``<missing>`` for a missing value seen in training), so Weka splits it one
    branch per value. A value unseen in training (code ``-1``) is written as Weka's missing
    value ``?``, which Weka's trees send down every branch with the branches' weights.
    Weka prints each probability with 3 decimals; rows are renormalised to sum to 1.
    """

    def __init__(self, *, categorical_features: Any = "auto", seed: int = 0,
                 n_jobs: int = 1) -> None:
        self.categorical_features = categorical_features
        self.seed = seed
        self.n_jobs = n_jobs

    @staticmethod
    def _require_weka() -> None:
        reason = weka_available()
        if reason is not None:
            raise RuntimeError(f"rf-weka cannot run: {reason}")

    def fit(self, X, y) -> WekaForest:
        """Learn the encoder on the training rows and keep their codes.

        Raises
        ------
        RuntimeError
            When Java or Weka is not available (the message says which and how to install).
        """
        # fail here, not after a fold's worth of work in predict_proba
        self._require_weka()
        self.classes_, y_codes = np.unique(np.asarray(y), return_inverse=True)
        self.encoder_ = TableEncoder(self.categorical_features).fit(
            X, y_codes, self.classes_.size
        )
        self.train_codes_ = self.encoder_.transform(X)
        self.train_y_ = np.asarray(y_codes, dtype=np.int64).reshape(-1)
        self.value_labels_ = [
            _unique_labels(coding.value_labels()) for coding in self.encoder_.codings_
        ]
        self.class_labels_ = _unique_labels([str(c) for c in self.classes_])
        return self

    def _frame(self, codes: np.ndarray, y_codes: np.ndarray) -> pd.DataFrame:
        """Codes as categoricals with every attribute's full list of values, so that the
        training and test files declare identical headers (Weka requires it); code ``-1``
        becomes a missing value (``?``). Attributes are named by position: names are
        irrelevant to Weka and the data's own may repeat or clash with ``class``."""
        columns = {
            f"a{j}": pd.Categorical.from_codes(codes[:, j], categories=labels)
            for j, labels in enumerate(self.value_labels_)
        }
        columns["class"] = pd.Categorical.from_codes(y_codes, categories=self.class_labels_)
        return pd.DataFrame(columns)

    def command(self, train: str | os.PathLike, test: str | os.PathLike) -> list[str]:
        """The ``java`` command line of one run (train and test ARFF paths given)."""
        java = shutil.which("java") or "java"
        return [
            java, "-cp", str(weka_jar()), WEKA_FOREST,
            "-I", str(N_TREES), "-K", "0", "-S", str(java_seed(self.seed)),
            "-t", os.fspath(train), "-T", os.fspath(test), "-p", "0", "-distribution",
        ]

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities of the rows of ``X``, shape ``(n, len(classes_))``, rows in the
        order of ``X``, columns in the order of ``classes_``.

        Raises
        ------
        RuntimeError
            When Java or Weka is not available, or when the Weka run fails (with the tail of
            its output).
        """
        self._require_weka()
        if not hasattr(self, "encoder_"):
            raise RuntimeError("this WekaForest is not fitted yet: call fit first")
        codes = self.encoder_.transform(X)
        n = codes.shape[0]
        if n == 0:
            return np.zeros((0, self.classes_.size))
        # the test file's class is missing (``?``): Weka needs the column, not its values
        test_y = np.full(n, -1, dtype=np.int64)
        with tempfile.TemporaryDirectory(prefix="hdpbn-weka-") as tmp:
            train_path = Path(tmp) / "train.arff"
            test_path = Path(tmp) / "test.arff"
            write_arff(self._frame(self.train_codes_, self.train_y_), train_path, "train")
            write_arff(self._frame(codes, test_y), test_path, "test")
            cmd = self.command(train_path, test_path)
            try:
                done = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp,
                                      timeout=TIMEOUT_S)
            except subprocess.TimeoutExpired:
                raise RuntimeError(
                    f"Weka's RandomForest ran past {TIMEOUT_S} s: {' '.join(cmd)}"
                ) from None
        if done.returncode != 0:
            raise RuntimeError(
                f"Weka's RandomForest failed (exit {done.returncode}): {' '.join(cmd)}\n"
                f"{_diagnosis(done.stdout, done.stderr)}"
            )
        # Weka 3.6 exits 0 on many errors (a bad file, an incompatible header) and prints the
        # exception and its usage text: the parser below then finds no rows and says so
        return parse_distribution(done.stdout, n, self.classes_.size,
                                  context=_diagnosis(done.stdout, done.stderr))


def parse_distribution(stdout: str, n_rows: int, n_classes: int, *,
                       context: str = "") -> np.ndarray:
    """The class distributions of Weka's ``-p 0 -distribution`` output, one row per test row.

    A prediction line reads ``inst# actual predicted [error] distribution``, e.g.
    ``     3        1:?       2:c2       0.087,*0.913``. The class labels may contain spaces,
    so only the first field (the 1-based instance number, which places the row) and the last
    (the comma-separated probabilities, ``*`` marking the predicted class) are read. Rows
    are renormalised, because Weka rounds every probability to 3 decimals.

    Raises
    ------
    RuntimeError
        When a row is missing, repeated or malformed (``context`` is appended to the message).
    """
    out = np.full((n_rows, n_classes), np.nan)
    seen = np.zeros(n_rows, dtype=bool)
    for line in stdout.splitlines():
        fields = line.split()
        if len(fields) < 4 or not fields[0].isdigit():
            continue  # the header, blank lines, Java's warnings
        index = int(fields[0]) - 1
        try:
            probs = [float(p.lstrip("*")) for p in fields[-1].split(",")]
        except ValueError:
            raise RuntimeError(f"unreadable Weka prediction line {line!r}\n{context}") from None
        if not 0 <= index < n_rows or seen[index] or len(probs) != n_classes:
            raise RuntimeError(
                f"unexpected Weka prediction line {line!r} ({n_rows} rows, {n_classes} classes "
                f"expected)\n{context}"
            )
        out[index] = probs
        seen[index] = True
    if not seen.all():
        raise RuntimeError(
            f"Weka printed predictions for {int(seen.sum())} of {n_rows} test rows\n{context}"
        )
    totals = out.sum(axis=1, keepdims=True)
    if not (np.isfinite(out).all() and (out >= 0).all() and (totals > 0).all()):
        raise RuntimeError(f"Weka printed invalid class distributions\n{context}")
    return out / totals
