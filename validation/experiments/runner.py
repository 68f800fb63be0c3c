"""Run classifiers x datasets x folds, one cached cell at a time, in parallel processes.

A *cell* is one (dataset, classifier, split): fit on the split's training rows, predict its test
rows, record every score of :data:`fastpath.evaluation.METRICS` (0-1 loss, the paper's RMSE,
Brier score, log loss, RMSE of the true class), fit and predict seconds, and what the model
chose (m, n*, k*). Each finished cell is written at once to its own JSON file, and its test
rows' class probabilities and true classes beside it (``.proba.npz``: a future score is
computed from them by ``rescore``, without refitting)::

    <cache>/<protocol>/<dataset>-<sha1 of the file>/<classifier>[-it<iterations>]/<split>.json
    <cache>/<protocol>/<dataset>-<sha1 of the file>/<classifier>[-it<iterations>]/<split>.proba.npz

so an interrupted run resumes where it stopped, a second run computes nothing, and adding a
classifier or a dataset computes only the new cells. Changing the protocol (folds, repeats,
seed), the data file, the column typing or the HDP iterations changes the path, never reusing a
stale cell. A cell cached before the Brier score was recorded holds the RMSE of the true class
under ``rmse``: it is upgraded where that equals the paper's RMSE (two classes) or where its
probabilities are stored, and recomputed otherwise (:func:`upgrade_record`).

Protocols (:class:`CrossValidation`, :class:`LearningCurve`) give the splits. The default is the
paper's: stratified 2-fold cross-validation repeated 5 times
(:func:`fastpath.evaluation.stratified_folds`), the *same* folds for every classifier (they
depend on the class column and the seed only). Discretisation is fitted inside each training
fold: every model's ``fit`` learns its own encoder from the training rows.

Parallelism: cells run in worker processes (``jobs``, default 2). Every model is fitted
single-threaded in its process (numba threads = 1, HDP ``n_jobs = 1``, ``n_jobs = 1`` for the
forest and XGBoost), so that ``jobs`` processes use ``jobs`` cores and the fit/predict seconds
of different classifiers are comparable.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import os
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fastpath.evaluation import METRICS, score, stratified_folds
from fastpath.io import dataset_path, list_datasets, read_table
from fastpath.utils import Progress, atomic_write, write_text

from .classifiers import ClassifierSpec, fitted_details, make_classifier, parse_classifier
from .timing import StageClock

__all__ = [
    "CrossValidation",
    "DatasetRef",
    "LearningCurve",
    "RunSettings",
    "bundled_datasets",
    "collect_cache",
    "discover_datasets",
    "load_dataset",
    "rescore_cache",
    "run_cells",
]

DATA_SUFFIXES = (".csv.gz", ".csv", ".arff", ".arff.gz")
#: what a folder scan picks up (a plain .csv, e.g. a MANIFEST.csv, only when named explicitly)
FOLDER_SUFFIXES = (".csv.gz", ".arff", ".arff.gz")
#: leading columns of the results table (then what models report: m, n_selected, ...)
RESULT_COLUMNS = (
    "dataset", "classifier", "split", "repeat", "fold", "size", "n_train", "n_test",
    "n_classes", *METRICS, "fit_seconds", "predict_seconds",
    "estimation_seconds",
    "iterations", "seed", "protocol", "data_digest",
)


# ====================================================================== datasets
@dataclass(frozen=True)
class DatasetRef:
    """A data file: name (file name without its suffixes), path and content digest."""

    name: str
    path: str
    digest: str
    size: int
    #: number of numeric attributes its folder's MANIFEST.csv declares (None: no manifest)
    declared_numeric: int | None = None

    @property
    def tag(self) -> str:
        return f"{self.name}-{self.digest}"


def _digest(path: Path) -> str:
    h = hashlib.sha1()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:10]


def _dataset_name(path: Path) -> str:
    name = path.name
    for suf in sorted(DATA_SUFFIXES, key=len, reverse=True):
        if name.lower().endswith(suf):
            return name[: -len(suf)]
    return path.stem


def _declared_numeric(path: Path) -> int | None:
    """``numeric_attributes`` of the file's row in a MANIFEST.csv next to it, if any."""
    manifest = path.parent / "MANIFEST.csv"
    if not manifest.is_file():
        return None
    try:
        table = pd.read_csv(manifest, usecols=["slug", "numeric_attributes"])
    except (ValueError, pd.errors.ParserError):
        return None
    row = table[table["slug"] == _dataset_name(path)]
    return int(row["numeric_attributes"].iloc[0]) if len(row) else None


def discover_datasets(paths: Iterable[str | os.PathLike]) -> list[DatasetRef]:
    """Data files in the given folders (``*.csv.gz``, ``*.arff[.gz]``), or files (also ``.csv``).

    Sorted by file size (small first: the first results arrive early). Names must be unique.
    """
    files: list[Path] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            found = sorted(
                f for f in p.iterdir()
                if f.is_file() and any(f.name.lower().endswith(s) for s in FOLDER_SUFFIXES)
            )
            if not found:
                raise ValueError(f"no data files ({', '.join(FOLDER_SUFFIXES)}) in {str(p)!r}")
            files.extend(found)
        elif p.is_file():
            files.append(p)
        else:
            raise FileNotFoundError(f"no such file or folder: {str(p)!r}")
    refs = [
        DatasetRef(_dataset_name(f), str(f.resolve()), _digest(f), f.stat().st_size,
                   _declared_numeric(f))
        for f in files
    ]
    names = [r.name for r in refs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"several data files have the same name: {dup}")
    return sorted(refs, key=lambda r: (r.size, r.name))


def bundled_datasets() -> list[DatasetRef]:
    """The datasets shipped with :mod:`fastpath.io._datasets`."""
    return discover_datasets([Path(str(dataset_path(n))) for n in list_datasets()])


TYPINGS = ("file", "manifest", "int<=N")


def _check_typing(typing: str) -> str:
    if typing in ("file", "manifest"):
        return typing
    if typing.startswith("int<=") and typing[5:].isdigit() and int(typing[5:]) > 0:
        return typing
    raise ValueError(f"typing must be 'file', 'manifest' or 'int<=N' (N > 0), got {typing!r}")


def _integer_columns(X: pd.DataFrame) -> list[tuple[int, int, str]]:
    """(distinct values, position, name) of the numeric columns holding only integers."""
    out = []
    for pos, c in enumerate(X.columns):
        col = X[c]
        if not pd.api.types.is_numeric_dtype(col.dtype):
            continue
        vals = col.dropna().to_numpy(dtype=float)
        if np.all(vals == np.round(vals)):
            out.append((int(np.unique(vals).size), pos, c))
    return out


def load_dataset(ref: DatasetRef, typing: str = "file") -> tuple[pd.DataFrame, np.ndarray]:
    """Attributes and class labels (as strings) of a data file; the class is the last column.

    Rows whose class is missing are dropped (they cannot be scored).

    ``typing`` says which columns are nominal. ``"file"``: as :func:`fastpath.io.read_table`
    reads them (a CSV column of numbers is numeric, hence MDL-discretised, even when it holds
    integer codes of categories). ``"manifest"``: when the folder's MANIFEST.csv declares fewer
    numeric attributes than the file has numeric columns (integer-coded categories, as in PMLB
    files), the integer-valued columns with the fewest distinct values (ties: the first) are
    read as nominal until the counts agree. ``"int<=N"``: every integer-valued column with at
    most N distinct values is nominal.
    """
    typing = _check_typing(typing)
    frame = read_table(ref.path, nominal_columns=[-1]).frame
    if frame.shape[1] < 2:
        raise ValueError(f"{ref.path}: needs attribute columns and a class column")
    target = frame.columns[-1]
    y = frame[target]
    keep = ~y.isna().to_numpy()
    X = frame.drop(columns=target).loc[keep].reset_index(drop=True)
    y = y[keep]
    if pd.api.types.is_numeric_dtype(y.dtype):
        y_num = y.to_numpy(dtype=float)
        labels = np.array(
            [str(int(v)) if float(v).is_integer() else repr(float(v)) for v in y_num], dtype=object
        )
    else:
        labels = y.astype(str).to_numpy(dtype=object)
    candidates = _integer_columns(X)
    if typing == "manifest":
        n_numeric = sum(pd.api.types.is_numeric_dtype(X[c].dtype) for c in X.columns)
        excess = 0 if ref.declared_numeric is None else n_numeric - ref.declared_numeric
        nominal = [c for _, _, c in sorted(candidates)[: max(excess, 0)]]
    elif typing.startswith("int<="):
        limit = int(typing[5:])
        nominal = [c for n, _, c in candidates if n <= limit]
    else:
        nominal = []
    for c in nominal:
        X[c] = pd.Categorical(X[c].map(lambda v: None if pd.isna(v) else str(int(v))))
    return X, labels


# ====================================================================== protocols
@dataclass(frozen=True)
class CrossValidation:
    """Stratified k-fold cross-validation repeated ``repeats`` times (paper: 2 x 5)."""

    folds: int = 2
    repeats: int = 5
    seed: int = 0

    @property
    def tag(self) -> str:
        return f"cv{self.folds}x{self.repeats}-seed{self.seed}"

    def splits(self, y_codes: np.ndarray) -> list[tuple[str, dict[str, int], np.ndarray,
                                                        np.ndarray]]:
        return [
            (f"r{r}-f{f}", {"repeat": r, "fold": f}, train, test)
            for r, f, train, test in stratified_folds(y_codes, self.folds, self.repeats, self.seed)
        ]


@dataclass(frozen=True)
class LearningCurve:
    """Training sets of growing size, one held-out test set per run (paper, Figure 6).

    Run ``r`` shuffles the rows (seed ``seed + r``), holds out ``test_fraction`` of them
    (stratified) as its test set, and trains on the first ``size`` rows of the shuffled rest
    for each size (sizes larger than the rest are replaced by the whole rest).
    """

    sizes: tuple[int, ...] = (100, 200, 500, 1000, 2000, 5000, 10000, 20000)
    runs: int = 10
    test_fraction: float = 1 / 3
    seed: int = 0

    @property
    def tag(self) -> str:
        sizes = "-".join(str(s) for s in self.sizes)
        return f"lc{self.runs}-t{self.test_fraction:.3f}-seed{self.seed}-n{sizes}"

    def splits(self, y_codes: np.ndarray):
        out = []
        n = y_codes.size
        for r in range(self.runs):
            rng = np.random.default_rng(self.seed + r)
            test_mask = np.zeros(n, dtype=bool)
            for c in np.unique(y_codes):
                rows = rng.permutation(np.flatnonzero(y_codes == c))
                test_mask[rows[: round(rows.size * self.test_fraction)]] = True
            test = np.flatnonzero(test_mask)
            rest = rng.permutation(np.flatnonzero(~test_mask))
            sizes = sorted({min(s, rest.size) for s in self.sizes})
            for s in sizes:
                out.append((f"r{r}-n{s}", {"repeat": r, "size": s}, np.sort(rest[:s]), test))
        return out


# ====================================================================== settings and cells
@dataclass(frozen=True)
class RunSettings:
    """What, besides the split, determines a cell's result."""

    iterations: int = 5000
    typing: str = "file"  # see load_dataset

    def __post_init__(self) -> None:
        _check_typing(self.typing)

    def typing_tag(self) -> str:
        if self.typing == "file":
            return ""
        return "-manifest" if self.typing == "manifest" else f"-int{self.typing[5:]}"


@dataclass(frozen=True)
class Cell:
    dataset: DatasetRef
    classifier: str
    split: str

    def path(self, cache: Path, protocol, settings: RunSettings) -> Path:
        spec = parse_classifier(self.classifier)
        return (
            cache / (protocol.tag + settings.typing_tag()) / self.dataset.tag
            / spec.cache_tag(settings.iterations) / f"{self.split}.json"
        )


def proba_path(cell_path: Path) -> Path:
    """Where a cell's test probabilities lie, beside its JSON record."""
    return cell_path.with_name(cell_path.name[: -len(".json")] + ".proba.npz")


def _write_proba(path: Path, proba: np.ndarray, y_codes: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path, "wb") as fh:
        np.savez(fh, proba=proba, y=y_codes)


def _read_proba(path: Path) -> tuple[np.ndarray, np.ndarray] | None:
    if not path.is_file():
        return None
    try:
        with np.load(path) as data:
            return np.asarray(data["proba"]), np.asarray(data["y"])
    except (OSError, ValueError, KeyError):
        return None  # a damaged file counts as absent


def upgrade_record(record: dict[str, Any], stored: Path) -> dict[str, Any] | None:
    """A cached record with every score of :data:`METRICS`, or None when it needs a refit.

    Records written before the Brier score was recorded (no ``brier`` key) hold the RMSE of the
    true class under ``rmse``. With the cell's stored probabilities (the file ``stored``, read
    only for such a record) every score is recomputed;
    without them a two-class cell is upgraded exactly (there the paper's RMSE equals the true
    class's, and the Brier score is twice its square); a cell of more classes cannot be.
    """
    if all(k in record for k in METRICS):
        return record
    out = dict(record)
    probabilities = _read_proba(stored)
    if probabilities is not None:
        out.update(score(probabilities[1], probabilities[0]))
        return out
    if record.get("n_classes") == 2 and "rmse" in record:
        out["rmse_true_class"] = record["rmse"]
        out["brier"] = 2.0 * record["rmse"] ** 2
        return out
    return None


# per-process caches: the last datasets loaded and their splits
_LOADED: dict[tuple, tuple[pd.DataFrame, np.ndarray, np.ndarray, np.ndarray]] = {}
_SPLITS: dict[tuple, dict[str, tuple[dict[str, int], np.ndarray, np.ndarray]]] = {}


def _load(ref: DatasetRef, settings: RunSettings):
    key = (ref.path, ref.digest, settings.typing)
    if key not in _LOADED:
        if len(_LOADED) >= 2:
            _LOADED.pop(next(iter(_LOADED)))
        X, labels = load_dataset(ref, settings.typing)
        classes, y_codes = np.unique(labels.astype(str), return_inverse=True)
        _LOADED[key] = (X, labels, classes, y_codes.astype(np.int64))
    return _LOADED[key]


def _splits(ref: DatasetRef, settings: RunSettings, protocol):
    y_codes = _load(ref, settings)[3]
    key = (ref.path, ref.digest, settings.typing, protocol)
    if key not in _SPLITS:
        if len(_SPLITS) >= 2:
            _SPLITS.pop(next(iter(_SPLITS)))
        _SPLITS[key] = {k: (meta, tr, te) for k, meta, tr, te in protocol.splits(y_codes)}
    return _SPLITS[key]


def _model_seed(protocol, split: str) -> int:
    # the same seed for every classifier of a split; different splits differ
    digest = hashlib.sha1(f"{protocol.tag}/{split}".encode()).hexdigest()
    return int(digest[:8], 16)


#: the functions of the estimation stage, as the in-memory drivers look them up: choosing m
#: (m-estimates) and estimating the trees' tables (m, HDP, HGS, HLS). Timed for every
#: estimator alike (``estimation_seconds``; the ``hdp_seconds`` that HDP fits report count the
#: sampler only), so that m, HDP, HGS and HLS compare on one stage.
ESTIMATION_STAGE = {"estimation": (("fastpath.pipeline._memory", "choose_m_from_codes"),
                                   ("fastpath.pipeline._members", "estimate_tables"))}


def compute_cell(cell: Cell, protocol, settings: RunSettings) -> dict[str, Any]:
    """Fit and score one cell (no caching)."""
    X, labels, classes, y_codes = _load(cell.dataset, settings)
    meta, train, test = _splits(cell.dataset, settings, protocol)[cell.split]
    spec: ClassifierSpec = parse_classifier(cell.classifier)
    seed = _model_seed(protocol, cell.split)
    model = make_classifier(spec, iterations=settings.iterations, seed=seed, n_jobs=1)
    X_train, X_test = X.iloc[train], X.iloc[test]
    with warnings.catch_warnings(record=True) as caught:
        # kept in the record (e.g. "an identifier?" columns), not printed once per cell
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        with StageClock(ESTIMATION_STAGE) as clock:
            model.fit(X_train, labels[train])
        t1 = time.perf_counter()
        proba_model = np.asarray(model.predict_proba(X_test), dtype=np.float64)
        t2 = time.perf_counter()
    messages = sorted({f"{w.category.__name__}: {w.message}" for w in caught})
    # align the model's classes (those of its training rows) with the dataset's classes
    proba = np.zeros((test.size, classes.size))
    cols = np.searchsorted(classes, np.asarray(model.classes_).astype(str))
    proba[:, cols] = proba_model
    yt = y_codes[test]
    return {
        "dataset": cell.dataset.name,
        "classifier": cell.classifier,
        "split": cell.split,
        **meta,
        "n_train": int(train.size),
        "n_test": int(test.size),
        "n_classes": int(classes.size),
        **score(yt, proba),
        # the test rows' probabilities (every class of the dataset) and true classes: written
        # beside the record, not into it
        "_proba": proba,
        "_y": yt,
        "fit_seconds": t1 - t0,
        "predict_seconds": t2 - t1,
        # the Bayesian network classifiers' estimation stage (None for the baselines)
        "estimation_seconds": (clock.seconds["estimation"] if spec.estimation is not None
                               else None),
        "iterations": settings.iterations if spec.estimation == "hdp" else None,
        "seed": seed,
        "details": fitted_details(model),
        "warnings": messages[:5],
        "protocol": protocol.tag,
        "data_digest": cell.dataset.digest,
    }


def _write_json(path: Path, record: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # atomic: an interrupted write never leaves a half cell
    write_text(path, json.dumps(record, indent=1, sort_keys=True))


def _warm_up() -> None:
    """Compile (or load from numba's cache) every kernel once, before any cell is timed.

    Otherwise the first cell of each process would count JIT compilation as fit seconds.
    """
    rng = np.random.default_rng(0)
    X = pd.DataFrame({
        "a": rng.integers(0, 3, 80).astype(str),
        "b": rng.integers(0, 2, 80).astype(str),
        "c": rng.random(80),
    })
    y = rng.integers(0, 2, 80).astype(str)
    for name in ("kdb2-m", "skdb2-m", "kdb2-hdp", "kdb2-hgs", "kdb2-hls"):
        try:
            model = make_classifier(parse_classifier(name), iterations=20, n_jobs=1)
            with warnings.catch_warnings():  # 20 iterations compile; they certify nothing
                warnings.simplefilter("ignore")
                model.fit(X, y).predict_proba(X)
        except Exception:  # a missing optional part fails again, reported, in its own cell
            pass


def _worker_init() -> None:
    _warm_up()


def _run_one(cell: Cell, protocol, settings: RunSettings, cache: str) -> tuple[Cell, dict]:
    record = compute_cell(cell, protocol, settings)
    path = cell.path(Path(cache), protocol, settings)
    # the probabilities first: a record on disk always has its probabilities beside it
    _write_proba(proba_path(path), record.pop("_proba"), record.pop("_y"))
    _write_json(path, record)
    return cell, record


# ====================================================================== running
@dataclass
class RunReport:
    """What :func:`run_cells` did."""

    results: pd.DataFrame
    computed: int
    cached: int
    seconds: float
    failures: list[dict[str, str]] = field(default_factory=list)


def _record_frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    rows = []
    for rec in records:
        row = {k: v for k, v in rec.items() if k not in ("details", "warnings")}
        row["n_warnings"] = len(rec.get("warnings") or [])
        for k, v in (rec.get("details") or {}).items():
            row[k] = v
        rows.append(row)
    frame = pd.DataFrame(rows)
    # a fixed column order, whether a record came from the cache (sorted keys) or not
    first = [c for c in RESULT_COLUMNS if c in frame.columns]
    frame = frame[first + sorted(c for c in frame.columns if c not in RESULT_COLUMNS)]
    if not frame.empty:
        frame = frame.sort_values(["dataset", "classifier", "split"]).reset_index(drop=True)
    return frame


def collect_cache(cache: str | os.PathLike) -> pd.DataFrame:
    """Every cell cached under ``cache`` (all protocols, datasets, classifiers and iteration
    counts) as one results table, the columns of a run's ``results.csv``. Older cells are
    upgraded as :func:`upgrade_record` says; a multi-class one without stored probabilities
    keeps its score as ``rmse_true_class`` and has no paper's RMSE."""
    paths = sorted(Path(cache).glob("*/*/*/*.json"))
    if not paths:
        raise ValueError(f"no cached cells under {str(cache)!r}")
    records = []
    for p in paths:
        record = json.loads(p.read_text())
        upgraded = upgrade_record(record, proba_path(p))
        if upgraded is None:  # an older multi-class cell: its RMSE is the true class's
            record["rmse_true_class"] = record.pop("rmse")
            upgraded = record
        records.append(upgraded)
    return _record_frame(records)


def rescore_cache(cache: str | os.PathLike) -> tuple[int, int]:
    """Recompute every score of every cached cell that has its probabilities stored, and
    rewrite its record (atomically) where a score changed or was missing.

    Returns
    -------
    (rescored, without_probabilities)
        Cells whose record was rewritten, and cells left as they are because no probabilities
        were stored for them.
    """
    paths = sorted(Path(cache).glob("*/*/*/*.json"))
    if not paths:
        raise ValueError(f"no cached cells under {str(cache)!r}")
    rescored = missing = 0
    for p in paths:
        stored = _read_proba(proba_path(p))
        if stored is None:
            missing += 1
            continue
        record = json.loads(p.read_text())
        new = {**record, **score(stored[1], stored[0])}
        if new != record:
            _write_json(p, new)
            rescored += 1
    return rescored, missing


def run_cells(
    datasets: Sequence[DatasetRef],
    classifiers: Sequence[str],
    protocol,
    settings: RunSettings,
    cache: str | os.PathLike,
    *,
    jobs: int = 2,
    progress: bool | None = None,
    on_result: Callable[[dict[str, Any]], None] | None = None,
) -> RunReport:
    """Compute every missing cell of datasets x classifiers x splits; return all of them.

    ``jobs <= 1`` runs in this process (models still single-threaded). A cell that raises is
    reported in ``failures`` (dataset, classifier, split, error) and left uncached.
    ``progress``: show a progress bar of the cells on standard error (None: only on a terminal;
    :class:`fastpath.cli.progress.Progress`).
    """
    start = time.perf_counter()
    cache = Path(cache)
    specs = [parse_classifier(c) for c in classifiers]
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise ValueError(f"classifiers are listed more than once: {names}")
    cells: list[Cell] = []
    for ref in datasets:
        for split in _splits(ref, settings, protocol):
            cells.extend(Cell(ref, n, split) for n in names)
    records: list[dict[str, Any]] = []
    todo: list[Cell] = []
    for cell in cells:
        path = cell.path(cache, protocol, settings)
        if path.exists():
            try:
                record = upgrade_record(json.loads(path.read_text()), proba_path(path))
            except json.JSONDecodeError:
                record = None  # a damaged cell is recomputed
            if record is not None:  # None: an older multi-class cell, recomputed
                records.append(record)
                continue
        todo.append(cell)
    cached = len(records)
    bar = Progress("cells", enabled=progress, unit="cell")
    if cells:
        bar(cached, len(cells))
    failures: list[dict[str, str]] = []

    def done(cell: Cell, record: dict | None, error: BaseException | None) -> None:
        if record is not None:
            records.append(record)
            if on_result is not None:
                on_result(record)
        else:
            failures.append({"dataset": cell.dataset.name, "classifier": cell.classifier,
                             "split": cell.split, "error": f"{type(error).__name__}: {error}"})
        bar(len(records) + len(failures), len(cells), f"{cell.dataset.name} {cell.classifier}")

    if jobs <= 1:
        # every classifier is built with n_jobs=1, which governs its numba kernels too
        if todo:
            _warm_up()
        for cell in todo:
            try:
                _, record = _run_one(cell, protocol, settings, str(cache))
                done(cell, record, None)
            except Exception as exc:  # reported in failures; the run goes on
                done(cell, None, exc)
    elif todo:
        ctx = mp.get_context("spawn")  # no fork of a process that may hold numba threads
        with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx,
                                 initializer=_worker_init) as pool:
            # keep a bounded window of submitted cells, in order: datasets small to large
            pending: dict[Any, Cell] = {}
            queue = list(reversed(todo))
            window = 4 * jobs
            while queue or pending:
                while queue and len(pending) < window:
                    cell = queue.pop()
                    pending[pool.submit(_run_one, cell, protocol, settings, str(cache))] = cell
                finished, _ = wait(list(pending), return_when=FIRST_COMPLETED)
                for fut in finished:
                    cell = pending.pop(fut)
                    exc = fut.exception()
                    done(cell, None if exc else fut.result()[1], exc)
    bar.close()
    return RunReport(
        results=_record_frame(records),
        computed=len(records) - cached,
        cached=cached,
        seconds=time.perf_counter() - start,
        failures=failures,
    )


def settings_dict(protocol, settings: RunSettings) -> dict[str, Any]:
    return {"protocol": {"kind": type(protocol).__name__, **asdict(protocol)},
            "settings": asdict(settings)}
