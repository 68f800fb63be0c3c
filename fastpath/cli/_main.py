"""The ``hdpbn`` command line: one entry point, one subcommand per job.

``hdpbn fit``       learn a classifier from a table and save it;
``hdpbn predict``   predicted class and class probabilities for a table (``--interval``: and
                    their credible intervals);
``hdpbn explain``   each attribute's exact contribution to every row's log-posterior;
``hdpbn evaluate``  repeated stratified cross-validation (0-1 loss, RMSE, Brier, log loss, seconds);
``hdpbn estimate``  HDP estimates of one conditional table (child-first convention);
``hdpbn diagnose``  convergence of a saved HDP model's samplers (worst trees first);
``hdpbn experiments`` the paper's experiments over a folder of datasets;
``hdpbn demo``      the README's demo: structures x estimation methods on a bundled dataset.

Run ``hdpbn SUBCOMMAND --help`` for the options of each.

Every error of the user's (a bad value or option, a file that cannot be read or written, an
optional extra that is not installed) is one line ``hdpbn COMMAND: error: ...`` on standard error
with exit status 2 (no traceback); any other exception is a bug in hdpbn and propagates with its
traceback. Output paths are checked before the work starts; warnings are one line
``hdpbn COMMAND: warning: ...``; a closed pipe on standard output (``hdpbn predict ... | head``)
ends the command quietly with exit status 141 (128 + SIGPIPE, as a shell reports it).
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import os
import re
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..version import __version__

# `hdpbn --help` and `hdpbn predict --help` import none of numpy, pandas, numba and
# scikit-learn (importing them is most of a command's start-up): each function imports what it
# runs on, and a command's help texts what they quote (the sampler presets, the classifiers'
# defaults) when that command's options are added; Python keeps a module once imported, so
# the imports after the first cost a dictionary look-up.
if TYPE_CHECKING:
    import pandas as pd


class _ClassifierDefaults(Mapping):
    """The defaults of a classifier's parameters, read from its signature on first use."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._defaults: dict[str, Any] | None = None

    def _read(self) -> dict[str, Any]:
        if self._defaults is None:
            from .. import classifier

            cls = getattr(classifier, self.name)
            self._defaults = {n: p.default
                              for n, p in inspect.signature(cls).parameters.items()}
        return self._defaults

    def __getitem__(self, name: str) -> Any:
        return self._read()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._read())

    def __len__(self) -> int:
        return len(self._read())


# A flag left out means what the Python parameter left out means: the flags' defaults are read
# from the classifiers' signatures, not written again here.
_BNC = _ClassifierDefaults("BayesNetClassifier")
_ESKDB = _ClassifierDefaults("ESKDBClassifier")
#: ``--seed``'s default: a command is reproducible when run again, where the Python default
#: (``random_state=None``) draws a fresh seed, as scikit-learn does
CLI_SEED = 0


# ---------------------------------------------------------------------- helpers
def _read(path: str, sep: str | None = None) -> pd.DataFrame:
    from ..io._tables import read_table

    return read_table(path, sep=sep).frame


def _tokens(text: str | None) -> list[str] | None:
    """A comma-separated option (``--na-values``, ``--exclude``) as a list (None if absent)."""
    if text is None:
        return None
    return [t.strip() for t in text.split(",") if t.strip()]


def _read_labelled(path: str, target: str | None,
                   na_values: Sequence[str] | None = None,
                   sep: str | None = None, keep_stray_tokens: bool = True) -> pd.DataFrame:
    """The table at ``path`` with its target column (the last one by default) read as labels,
    never by the numeric 95 % rule (a class ``U`` among classes ``1``..``5`` is a class);
    ``na_values`` are missing; ``sep``: a CSV's separator; ``keep_stray_tokens``: a numeric
    column's stray tokens stay strings, for a model that keeps them (fit), or are missing
    values said once in a warning (evaluate, whose folds' models are not kept)."""
    from ..io._tables import read_table

    if target is not None and target not in read_table(path, nrows=0, sep=sep).frame.columns:
        return _read(path, sep)  # _split_target names the missing column
    # a numeric column's stray tokens stay strings: the model learns them as missing (so
    # its predictions read them silently, as a model fitted in Python on read_csv's frame)
    frame = read_table(path, nominal_columns=[-1 if target is None else target],
                       na_values=na_values, keep_stray_tokens=keep_stray_tokens,
                       sep=sep).frame
    if frame.shape[0] == 0:
        raise ValueError(f"{path} has no data rows (only a header?)")
    return frame


def _data_path(data: str) -> str:
    """DATA of fit and evaluate: a file, or, when no such file exists, a bundled dataset's name
    (``car``, ``credit-a``, ...: its bundled ``.csv.gz``, class column last)."""
    from ..io._datasets import dataset_path, list_datasets

    if not Path(data).exists() and data in list_datasets():
        return str(dataset_path(data))
    return data


def _bundled_names() -> list[str]:
    """The bundled datasets' names, as fastpath.io.list_datasets lists them (tested), for the
    help texts: without importing pandas."""
    files = resources.files("fastpath") / "data"
    return sorted(f.name.removesuffix(".csv.gz") for f in files.iterdir()
                  if f.name.endswith(".csv.gz"))


_COMMANDS = ("fit", "predict", "explain", "evaluate", "estimate", "diagnose", "experiments",
             "demo")
#: each command's line in ``hdpbn --help`` where its module is not imported
_SUMMARIES = {"estimate": "HDP estimates of one conditional table (child-first convention)",
              "diagnose": "convergence of a saved HDP model's samplers (worst trees first)"}

#: ``hdpbn predict``'s rows per chunk (fastpath.scale.DEFAULT_CHUNKSIZE, tested)
PREDICT_CHUNKSIZE = 100_000

_BUNDLED_HELP = "or the name of a bundled dataset ({}) when no such file exists"
_SEP_HELP = ("the field separator of a CSV file, e.g. ';' or 'tab' (default: ',', a tab for "
             ".tsv)")


def _separator(text: str) -> str:
    """``--sep``: one character; ``tab`` (or ``\\t``) for a tab."""
    sep = "\t" if text.lower() in ("tab", "\\t") else text
    if len(sep) != 1 or sep in "\"\r\n":
        raise argparse.ArgumentTypeError(f"one character (or 'tab'), not a quote or a line "
                                         f"break, got {text!r}")
    return sep


def _split_target(frame: pd.DataFrame, target: str | None) -> tuple[pd.DataFrame, pd.Series]:
    if frame.shape[1] < 2:
        raise ValueError("the table needs at least one attribute column and the target column")
    if target is None:
        target = str(frame.columns[-1])
    if target not in frame.columns:
        raise ValueError(
            f"target column {target!r} is not in the data; columns are {list(frame.columns)}"
        )
    return frame.drop(columns=target), frame[target]


#: ``hdpbn fit``'s model: the ensemble, the product whose accuracy the README states (the
#: single classifier is one flag away, ``--structure kdb``); ``evaluate`` keeps the single
#: classifier, ten fits of which take seconds where ten ensembles take minutes
FIT_STRUCTURE = "eskdb"


def _add_model_options(p: argparse.ArgumentParser, structure: str | None = None) -> None:
    """The model's flags; ``structure``: ``--structure``'s default (the single classifier's
    when None)."""
    from ..estimate._hls_options import HLS_C
    from ..estimate.hdp._options import (
        DEFAULT_ENSEMBLE_SAMPLER,
        DEFAULT_SAMPLER,
        PAPER_CONCENTRATION_EVERY,
        PAPER_ITERATIONS,
        SAMPLER_PRESETS,
        HDPOptions,
    )
    from ..pipeline._registry import ESTIMATORS, STRUCTURES
    from ._estimate import (
        add_adaptive_length_options,
        add_burn_in_option,
        parse_iterations,
    )

    structure = _BNC["structure"] if structure is None else structure
    other = ("; --structure eskdb: the ensemble hdpbn fit gives" if structure != "eskdb" else
             f"; --structure {_BNC['structure']}: a single classifier, faster")
    g = p.add_argument_group("model")
    g.add_argument("--structure", default=structure,
                   choices=[*STRUCTURES, "eskdb"],
                   help="naive Bayes, tree-augmented naive Bayes, kDB-k, selective kDB, or an "
                   "ensemble of selective kDB members (ESKDB) "
                   f"(default: {structure}{other})")
    g.add_argument("--k", type=int, default=None,
                   help="max attribute parents for kdb, skdb and eskdb "
                   f"(default: {_BNC['k']}; eskdb: {_ESKDB['k']})")
    g.add_argument("--n-estimators", type=int, default=_ESKDB["n_estimators"], metavar="E",
                   help=f"eskdb: members of the ensemble (default: {_ESKDB['n_estimators']})")
    g.add_argument("--discretization", default=_ESKDB["discretization"],
                   choices=("stochastic", "mixed", "random", "mdl"),
                   help="eskdb: how the members cut numeric columns: each its own stochastic "
                   "MDL, half of them at random resolution (mixed), all at random resolution, "
                   f"or all at Weka's MDL cut points (default: {_ESKDB['discretization']})")
    g.add_argument("--discriminative", default=None,
                   choices=("none", "attribute", "attribute_class"),
                   help="weights on the tables' log-probabilities fitted to the conditional "
                   "log loss, one per attribute or per attribute and class; none: the "
                   "generative model (default: the classifier's, "
                   f"{_ESKDB['discriminative'] or 'none'} for eskdb, "
                   f"{_BNC['discriminative'] or 'none'} otherwise)")
    g.add_argument("--estimation", default=_BNC["estimation"], choices=[*ESTIMATORS],
                   help="HDP estimates (the paper's method), m-estimates with back-off, "
                   "hierarchical gradient smoothing (hgs) or hierarchical linear smoothing "
                   f"(hls) (default: {_BNC['estimation']})")
    g.add_argument("--hls-c", type=float, default=HLS_C, metavar="C",
                   help="--estimation hls: inverse strength of the L2 penalty of each table's "
                   f"logistic regression (default: {HLS_C:g}, the authors')")
    g.add_argument("--m", default=_BNC["m"],
                   help="m-estimate mass; 'auto' chooses it by leave-one-out RMSE among 0.05, "
                   "0.2, 1, 5, 20; 'holdout' by the paper's rule, RMSE on a holdout of N/10 "
                   f"rows among 0, 0.05, 0.2, 1, 5, 20 (default: {_BNC['m']})")
    g.add_argument("--m-backoff", default=_BNC["m_backoff"], choices=["path", "value"],
                   help="when an m-estimate backs off: 'path', a context never seen uses its "
                   "deepest seen ancestor; 'value', the paper's literal rule, a value whose "
                   "joint count with the context is zero uses the deepest ancestor where it "
                   f"is non-zero, rows not renormalised (default: {_BNC['m_backoff']})")
    g.add_argument("--sep", default=None, metavar="CHAR", type=_separator,
                   help=_SEP_HELP)
    g.add_argument("--categorical", default=None,
                   help="comma-separated columns to treat as nominal even if numeric")
    g.add_argument("--na-values", default=None, metavar="TOKENS",
                   help="comma-separated tokens that mean a missing value in every column "
                   "(e.g. '?,n/a,-'); the model keeps them, so predictions read them as "
                   "missing too (default: only an empty field is missing)")
    g.add_argument("--numeric-errors", default="coerce", choices=["coerce", "raise"],
                   help="a value that is not a number in a numeric column: read as missing "
                   "with a warning naming the column and the tokens (coerce), or an error "
                   "(raise) (default: coerce)")
    g.add_argument("--class-weight", default=None, metavar="balanced|CLASS:W[,CLASS:W...]",
                   help="weigh the classes' prior at prediction: 'balanced' (each class as "
                   "if equally frequent) or weights per class, e.g. 'yes:10' (default: none)")
    g.add_argument("--exclude", default="auto", metavar="auto|none|COLUMNS",
                   help="columns left out of the model: 'auto', identifiers (nominal columns "
                   "of nearly all distinct values) and dates; 'none'; or a comma-separated "
                   "list of columns (default: auto)")
    h = p.add_argument_group("HDP sampler (--estimation hdp)")
    h.add_argument("--sampler", default=None,
                   choices=[*SAMPLER_PRESETS],
                   help="adaptive: exact overrelaxed moves, each tree sampled until the "
                   "Monte-Carlo error of what the training rows read is at most "
                   f"--mcse-tolerance ({HDPOptions.min_iter} to {HDPOptions.max_iter} "
                   "iterations); adaptive-plain: the same rule, "
                   "the paper's plain moves (faster, less precise); ensemble (the ensemble's "
                   "default): the paper's moves, the concentrations every iteration, chains of at "
                   "least 60 iterations; strict: "
                   "overrelaxed, every probability within the tolerance and the concentrations "
                   "past R-hat and ESS checks (slow); paper: "
                   f"the paper's sampler, {PAPER_ITERATIONS} plain Gibbs iterations. The flags "
                   "below override "
                   f"it (default: {DEFAULT_SAMPLER}; eskdb: {DEFAULT_ENSEMBLE_SAMPLER})")
    h.add_argument("--iterations", type=parse_iterations, default=None,
                   help="Gibbs iterations, or 'auto' (default: the sampler's)")
    add_adaptive_length_options(h)
    add_burn_in_option(h)
    h.add_argument("--tying", default=HDPOptions.tying,
                   choices=["level", "same-parent", "single", "none"],
                   help=f"concentration tying (default: {HDPOptions.tying})")
    h.add_argument("--chains", type=int, default=HDPOptions.n_chains,
                   help=f"independent chains (default: {HDPOptions.n_chains})")
    h.add_argument("--concentration-every", type=int, default=None, metavar="N",
                   help="re-sample the concentrations every N-th iteration (default: the "
                   "sampler's, 1 for the overrelaxed ones, adaptive and strict, "
                   f"{PAPER_CONCENTRATION_EVERY} for paper and adaptive-plain, the reference's "
                   "schedule)")
    h.add_argument("--overrelax", action="store_const", const=True, default=None,
                   help="overrelaxed table-count and concentration updates (still exact; "
                   "faster mixing; not the reference's sampler; default: the sampler's, on "
                   "for adaptive and strict)")
    h.add_argument("--keep-draws", action="store_true",
                   help="keep the tables' posterior draws in the model (the sampler's "
                   "record_draws), so that 'hdpbn predict --interval' can give credible "
                   "intervals; the model file grows by up to 200 tables per tree")
    h.add_argument("--thin", type=int, default=None, metavar="K",
                   help="keep the sampler's state every K-th iteration: the posterior draws "
                   "of --keep-draws after burn-in, and the traces 'hdpbn diagnose' reads "
                   f"(the sampler's thin; default: {HDPOptions.thin}); a smaller K keeps more, "
                   "closer draws of the same chain, which it does not change")
    p.add_argument("--seed", type=int, default=CLI_SEED,
                   help=f"random seed (default: {CLI_SEED})")
    p.add_argument("--threads", type=int, default=None,
                   help="threads of every stage: the HDP sampler, numba's kernels, the "
                   "library's pools, not BLAS, which no stage calls (default: all cores; -1: "
                   "all cores, -2: all but one); results do not depend on it")


# the classifier's parameters that a flag of this command line sets, with the flag's message
_FLAG_ERRORS = {
    "random_state": "--seed must be a non-negative integer, got {seed}",
    "n_jobs": "--threads must be a non-zero integer (-1: all cores), got {threads}",
}
# the options whose messages name the Python parameter (the sampler's), and their flags
# (HLSOptions' "C" is renamed below: a plain word substitution would reach other words)
_FLAG_NAMES = {"n_iter": "--iterations", "min_iter": "--min-iter", "max_iter": "--max-iter",
               "mcse_tolerance": "--mcse-tolerance", "burn_in": "--burn-in",
               "class_weight": "--class-weight", "thin": "--thin"}


def _make_model(args: argparse.Namespace, frame: pd.DataFrame | None = None, *,
                verbose: int = 0):
    import pandas as pd

    from ..classifier._ensemble import ESKDBClassifier
    from ..classifier._estimator import BayesNetClassifier
    from ..estimate._hls_options import HLS_C, HLSOptions
    from ..estimate.hdp._options import HDPOptions
    from ..pipeline._config import hdp_options

    m: Any = args.m
    if m not in ("auto", "holdout"):
        try:
            m = float(m)
        except ValueError:
            raise ValueError(f"--m must be 'auto', 'holdout' or a number, got {args.m!r}") from None
    categorical: Any = "auto"
    if args.categorical:
        names = [c.strip() for c in args.categorical.split(",") if c.strip()]
        if frame is not None:
            unknown = [c for c in names if c not in frame.columns]
            if unknown:
                raise ValueError(f"--categorical names columns not in the data: {unknown}")
            from ..io._column_types import stray_tokens

            # the text columns, less those numeric by the 95 % rule (kept as the file's
            # strings so that the model learns their stray tokens)
            categorical = [c for c in frame.columns if c in names or (
                not pd.api.types.is_numeric_dtype(frame[c].dtype)
                and stray_tokens(frame[c]) is None)]
    exclude: Any = args.exclude
    if exclude.strip().lower() == "none":
        exclude = None
    elif exclude.strip() != "auto":
        exclude = _tokens(exclude)
    common: dict[str, Any] = dict(
        class_weight=_class_weight(args.class_weight),
        m=m,
        m_backoff=args.m_backoff,
        categorical_features=categorical,
        na_values=_tokens(args.na_values),
        numeric_errors=args.numeric_errors,
        exclude_features=exclude,
        n_jobs=args.threads,
        random_state=args.seed,
        verbose=verbose,
    )
    cls: Any = ESKDBClassifier if args.structure == "eskdb" else BayesNetClassifier
    # the sampler flags given on the command line override the preset (each classifier's own
    # when --sampler is left out); those left out are not passed at all
    flags = {name: value for name, value in (
        ("n_iter", args.iterations), ("concentration_every", args.concentration_every),
        ("overrelax", args.overrelax), ("min_iter", args.min_iter),
        ("max_iter", args.max_iter), ("mcse_tolerance", args.mcse_tolerance),
        ("burn_in", args.burn_in), ("tying", args.tying), ("n_chains", args.chains))
        if value is not None}
    preset = args.sampler if args.sampler is not None else (
        (_ESKDB if args.structure == "eskdb" else _BNC)["sampler"])
    try:  # every parameter is checked here, before any work
        if args.structure == "eskdb":
            own: dict[str, Any] = dict(
                n_estimators=args.n_estimators, k=_ESKDB["k"] if args.k is None else args.k,
                discretization=args.discretization)
        else:
            own = dict(structure=args.structure, k=_BNC["k"] if args.k is None else args.k)
        # the preset with the flags' options, its name when they change nothing (an ensemble
        # samples its members with the tolerance of their average either way:
        # HDPOptions.for_members)
        sampler: Any = HDPOptions.preset(preset, **flags)
        if sampler == HDPOptions.preset(preset):
            sampler = preset
        # what the chains keep (--keep-draws, --thin): the same chains, more of their states
        kept = {name: value for name, value in (
            ("record_draws", getattr(args, "keep_draws", False) or None),
            ("thin", getattr(args, "thin", None))) if value is not None}
        if kept:
            sampler = hdp_options({"sampler": sampler}).replace(**kept)
        # --hls-c: the penalty of --estimation hls (the authors' is plain "hls")
        estimation: Any = args.estimation
        if estimation == "hls" and args.hls_c != HLS_C:
            estimation = HLSOptions(C=args.hls_c)
        if args.discriminative is not None:
            own["discriminative"] = (None if args.discriminative == "none"
                                     else args.discriminative)
        model = cls(**own, **common, estimation=estimation, sampler=sampler)
        model.fit_config()
    except ValueError as exc:  # name the command-line flag, not the Python parameter
        msg = str(exc)
        for param, flag_msg in _FLAG_ERRORS.items():
            if msg.startswith(param + " "):
                msg = flag_msg.format(seed=args.seed, threads=args.threads)
                break
        for param, flag in _FLAG_NAMES.items():
            msg = re.sub(rf"\b{param}\b", flag, msg)
        if msg.startswith("C must"):  # HLSOptions' penalty
            msg = "--hls-c" + msg[1:]
        raise ValueError(msg) from None
    return model


def _class_weight(text: str | None) -> Any:
    """``--class-weight``: None, ``"balanced"``, or ``CLASS:WEIGHT`` pairs as a dict (the
    class as the file writes it)."""
    if text is None or text.strip().lower() in ("", "none"):
        return None
    if text.strip() == "balanced":
        return "balanced"
    weights: dict[str, float] = {}
    for item in _tokens(text) or ():
        label, sep, weight = item.rpartition(":")
        try:
            if not sep or not label:
                raise ValueError
            weights[label] = float(weight)
        except ValueError:
            raise ValueError(f"--class-weight must be 'balanced' or CLASS:WEIGHT pairs "
                             f"(e.g. 'yes:10,no:1'), got {item!r}") from None
    return weights


def _say_if_compiling(command: str) -> None:
    """One line on standard error when numba's kernels will compile now (a cold cache: after an
    install or an upgrade), the minute a first command otherwise spends in silence."""
    from ..pipeline._config import kernels_cold

    if kernels_cold():
        print(f"hdpbn {command}: compiling the numba kernels, once after an install or upgrade "
              "(a minute or two; later runs load them from numba's cache)", file=sys.stderr,
              flush=True)


def _rows_and_attributes(n_rows: int, model: Any) -> str:
    """``"N rows x K attributes"``, K the columns the model codes (as the fit's ``coding``
    stage line counts them), and the columns left out, named."""
    excluded = list(model.excluded_features_ or ())
    text = f"{n_rows} rows x {model.n_features_in_ - len(excluded)} attributes"
    if excluded:
        shown = ", ".join(excluded[:5]) + (f" and {len(excluded) - 5} more"
                                            if len(excluded) > 5 else "")
        text += f" ({len(excluded)} of {model.n_features_in_} columns left out: {shown})"
    return text


# ---------------------------------------------------------------------- subcommands
def _cmd_fit(args: argparse.Namespace) -> int:
    from ..io._tables import decompression_error
    from ..utils._files import refuse_overwriting_inputs
    from ..utils._warn import recording

    t0 = time.perf_counter()
    data = _data_path(args.data)
    refuse_overwriting_inputs(args.model, [data], option="--model")
    _make_model(args).fit_config()  # a bad option is refused before the data is read
    # stage lines and the sampler's bar on a terminal (not when piped, not with --quiet)
    verbose = int(not args.quiet and sys.stderr.isatty())
    if not args.quiet and not verbose:  # a verbose fit's first stage line says it
        _say_if_compiling("fit")
    if args.chunksize is not None:
        # out of core: the file is read in chunks, in a few passes (fastpath.scale._passes)
        if args.chunksize < 1:
            raise ValueError(f"--chunksize must be a positive number of rows, got {args.chunksize}")
        model = _make_model(args, verbose=verbose)
        if args.categorical:
            # streamed columns are typed by the first chunk; the names make these nominal
            model.set_params(categorical_features=[
                c.strip() for c in args.categorical.split(",") if c.strip()
            ])
        try:
            model.fit(data, args.target, chunksize=args.chunksize, sep=args.sep)
        except Exception as exc:  # the streamed reader's decompression errors name the file
            err = decompression_error(data, exc)
            if err is None:
                raise
            raise err from exc
        what = f"{args.data} (streamed in chunks of {args.chunksize} rows)"
    else:
        with recording() as read_warnings:  # what reading the file warned about (stray tokens)
            frame = _read_labelled(data, args.target, _tokens(args.na_values), args.sep)
        X, y = _split_target(frame, args.target)
        model = _make_model(args, X, verbose=verbose)
        model.fit(X, y)
        # the model keeps what reading and fitting warned about (hdpbn diagnose shows it)
        model.fit_warnings_ = tuple(dict.fromkeys([*read_warnings, *model.fit_warnings_]))
        what = _rows_and_attributes(len(X), model)
    seconds = time.perf_counter() - t0
    model.set_params(verbose=0)  # the saved model is quiet when refitted
    model.save(args.model)
    if not args.quiet:
        print(f"fitted {model!r} on {what} in {seconds:.2f} s; saved to {args.model}",
              file=sys.stderr)
    return 0


def _streamed_inputs(args: argparse.Namespace) -> tuple[Any, list[str], Any]:
    """What ``predict`` and ``explain`` read before streaming: the data (a path, or ``"-"``
    for standard input), the ``--keep`` columns and the model, every argument checked first
    (``--out`` may not overwrite an input; ``--chunksize`` positive)."""
    from ..classifier._loading import load_classifier
    from ..utils._files import refuse_overwriting_inputs

    data = args.data if args.data == "-" else _data_path(args.data)
    refuse_overwriting_inputs(args.out, [data, args.model])
    if args.chunksize is not None and args.chunksize < 1:
        raise ValueError(f"--chunksize must be a positive number of rows, got {args.chunksize}")
    keep = list(dict.fromkeys(c.strip() for given in args.keep or () for c in given.split(",")
                              if c.strip()))
    return data, keep, load_classifier(args.model)


def _cmd_predict(args: argparse.Namespace) -> int:
    # streamed: the table is read and written a chunk at a time (memory follows --chunksize)
    import numpy as np
    import pandas as pd

    from ..scale._predict import EncodingError
    from ..utils._files import atomic_write, compressed_writer

    stdin = args.data == "-"
    data, keep, model = _streamed_inputs(args)
    if not args.quiet:
        _say_if_compiling("predict")
    outputs = ["prediction", *(f"p_{c}" for c in model.classes_)]
    interval = getattr(args, "interval", None)
    predict = None
    if interval is not None:
        from ..pipeline._intervals import members_proba_draws, model_draws
        from ..pipeline._members import members_proba

        if not 0 < interval < 1:
            raise ValueError(f"--interval must be a probability in (0, 1), got {interval}")
        draws = model_draws(model.members_, model.__dict__.get("posterior_draws_")
                            or model.__dict__.get("hdp_results_"), args.draws)
        quantiles = [(1 - interval) / 2, (1 + interval) / 2]
        outputs += [f"p_{c}_{end}" for c in model.classes_ for end in ("low", "high")]

        def predict(members, frame, shift, plan):  # the mean, then the draws' quantiles
            proba = members_proba(members, frame, shift, plan)
            sampled = members_proba_draws(members, draws, frame, shift, plan, seed=args.seed)
            return proba, np.quantile(sampled, quantiles, axis=0)

    clash = [c for c in keep if c in outputs]
    if clash:
        raise ValueError(f"--keep {clash[0]!r} is also the name of an output column; rename "
                         "the input column")
    source: Any = sys.stdin.buffer if stdin else data

    def write_all(write: Callable[[str], Any], encoding: str | None = None) -> None:
        chunks = model._predicted_chunks(source, args.chunksize, keep=keep, encoding=encoding,
                                         sep=args.sep, predict=predict)
        written = False
        for chunk, result in chunks:
            proba, ends = result if predict is not None else (result, None)
            out = chunk.kept.reset_index(drop=True)
            out["prediction"] = model.classes_[np.argmax(proba, axis=1)]
            for j, c in enumerate(model.classes_):
                out[f"p_{c}"] = proba[:, j]
            if ends is not None:
                for j, c in enumerate(model.classes_):
                    out[f"p_{c}_low"] = ends[0][:, j]
                    out[f"p_{c}_high"] = ends[1][:, j]
            write(out.to_csv(index=False, header=not written))
            written = True
        if not written:  # no rows in (a header-only table): a header-only table out
            write(pd.DataFrame(columns=[*keep, *outputs]).to_csv(index=False))

    if not args.out:
        write_all(sys.stdout.write)
        return 0
    with atomic_write(args.out, "wb") as fh:  # whole or not at all
        try:
            with compressed_writer(fh, args.out) as w:
                write_all(lambda text: w.write(text.encode("utf-8")))
        except EncodingError:  # not UTF-8 after all: again from the start, as Latin-1
            if not fh.seekable():  # a pipe, a device: what was written stays written
                raise
            fh.seek(0)
            fh.truncate()
            with compressed_writer(fh, args.out) as w:
                write_all(lambda text: w.write(text.encode("utf-8")), "latin-1")
    return 0


def _cmd_explain(args: argparse.Namespace) -> int:
    # streamed as predict is: a chunk of rows explained and written at a time
    import pandas as pd

    from ..pipeline._explain import members_explain
    from ..utils._files import atomic_write, compressed_writer

    stdin = args.data == "-"
    data, keep, model = _streamed_inputs(args)
    classes = model.classes_
    cls = None
    if args.cls is not None:
        matches = [c for c in classes if str(c) == args.cls]
        if not matches:
            raise ValueError(f"--class {args.cls!r} is not a class of the model "
                             f"({', '.join(map(str, classes))})")
        cls = matches[0]
    elif len(classes) != 2:
        raise ValueError(f"the model has {len(classes)} classes: name the one to explain with "
                         f"--class ({', '.join(map(str, classes))})")
    names = model._used_feature_names()

    def explained(members, frame, shift, plan):
        return members_explain(members, frame, classes, names, shift, plan)

    source: Any = sys.stdin.buffer if stdin else data

    def write_all(write: Callable[[str], Any]) -> None:
        written = False
        for chunk, explanation in model._predicted_chunks(source, args.chunksize, keep=keep,
                                                            sep=args.sep, predict=explained):
            parts = explanation.to_frame(cls)
            clash = [c for c in keep if c in parts.columns or c == "unknown"]
            if clash:
                raise ValueError(f"--keep {clash[0]!r} is also the name of an output column")
            unknown = explanation.unknown
            flagged = [";".join(n for n, u in zip(names, row, strict=True) if u)
                       for row in unknown]
            out = pd.concat([chunk.kept.reset_index(drop=True), parts], axis=1)
            out["unknown"] = flagged
            write(out.to_csv(index=False, header=not written, float_format="%.17g"))
            written = True
        if not written:
            head = ["prior", *names] + (["ensemble_gap", "log_odds"] if cls is None else
                                        ["log_normaliser", "ensemble_gap", "log_posterior"])
            write(pd.DataFrame(columns=[*keep, *head, "unknown"]).to_csv(index=False))

    if not args.out:
        write_all(sys.stdout.write)
        return 0
    with atomic_write(args.out, "wb") as fh, compressed_writer(fh, args.out) as w:
        write_all(lambda text: w.write(text.encode("utf-8")))
    return 0


def _cmd_evaluate(args: argparse.Namespace) -> int:
    from ..estimate._diagnostics import UnconvergedWarning
    from ..evaluation._cross_validation import cross_validate, summarise
    from ..utils._progress import Progress

    _make_model(args).fit_config()  # a bad option is refused before the data is read
    frame = _read_labelled(_data_path(args.data), args.target, _tokens(args.na_values),
                           args.sep, keep_stray_tokens=False)
    X, y = _split_target(frame, args.target)
    _make_model(args, X)  # validate options before the first fold
    _say_if_compiling("evaluate")
    progress = Progress("folds", enabled=None if not (args.quiet or args.json) else False,
                        unit="fold")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UnconvergedWarning)
        results = cross_validate(
            lambda: _make_model(args, X), X, y, n_folds=args.folds, n_repeats=args.repeats,
            seed=args.seed, progress=progress,
        )
    _warn_once_per_kind(caught, args.folds * args.repeats)
    summary = summarise(results)
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"{args.folds}-fold cross-validation x {args.repeats} on {args.data} "
              f"({len(X)} rows, {X.shape[1]} attributes)")
        for key, label in (("zero_one_loss", "0-1 loss"), ("rmse", "RMSE"),
                           ("brier", "Brier"), ("log_loss", "log loss")):
            print(f"  {label:9s} {summary[key]['mean']:.4f} (sd {summary[key]['sd']:.4f})")
        print(f"  fit       {summary['fit_seconds']:.3f} s per fold")
        print(f"  predict   {summary['predict_seconds']:.3f} s per fold")
    return 0


def _cli_text(message: Any) -> Any:
    """A warning's text with the command line's flags: an :class:`UnconvergedWarning` of a fit
    advises ``--max-iter`` where Python would say ``max_iter``."""
    from ..estimate._diagnostics import PYTHON_NAMES, UnconvergedWarning
    from ._estimate import CLI_NAMES

    diagnostics = getattr(message, "diagnostics", None)
    if (isinstance(message, UnconvergedWarning) and diagnostics is not None
            and message.names is PYTHON_NAMES):  # a command's own text is left as it is
        return diagnostics.warning_message(CLI_NAMES) or message
    return message


def _warn_once_per_kind(caught: list[warnings.WarningMessage], n_fits: int,
                        what: str = "folds") -> None:
    """Re-emit the warnings of many fits: the HDP convergence warnings as one line (how many
    fits, the first fit's message), any other warning once."""
    from ..estimate._diagnostics import UnconvergedWarning
    from ..utils._warn import warn

    unconverged = [w for w in caught if issubclass(w.category, UnconvergedWarning)]
    if unconverged:
        warn(
            f"in {len(unconverged)} of {n_fits} {what} {_cli_text(unconverged[0].message)} "
            "(the first such fit)",
            UnconvergedWarning)
    seen = set()
    for w in caught:
        if issubclass(w.category, UnconvergedWarning) or str(w.message) in seen:
            continue
        seen.add(str(w.message))
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def _cmd_demo(args: argparse.Namespace) -> int:
    from ..classifier._ensemble import ESKDBClassifier
    from ..classifier._estimator import BayesNetClassifier
    from ..estimate._diagnostics import UnconvergedWarning
    from ..estimate.hdp._options import DEFAULT_SAMPLER, HDPOptions
    from ..evaluation._cross_validation import cross_validate, summarise
    from ..io._datasets import load_dataset

    X, y = load_dataset(args.dataset)
    estimations = ["m", "hdp"]
    configs = [("nb", 0), ("tan", 1), ("kdb", 1), ("kdb", 2), ("eskdb", 5)]
    print(f"hdpbn demo: {args.dataset} ({len(X)} rows, {X.shape[1]} attributes, "
          f"{y.nunique()} classes), {args.folds}-fold cross-validation x {args.repeats}, "
          f"seed {args.seed}")
    # the default sampler, or its preset with --iterations
    sampler: Any = DEFAULT_SAMPLER if args.iterations is None else (
        HDPOptions.preset(DEFAULT_SAMPLER, n_iter=args.iterations))
    if "hdp" in estimations:
        opt = BayesNetClassifier(estimation="hdp", sampler=sampler).hdp_options()
        if opt.adaptive:
            print(f"HDP: the {DEFAULT_SAMPLER} sampler ({opt.min_iter} to {opt.max_iter} Gibbs "
                  "iterations per tree, until the Monte-Carlo error of what the rows read is "
                  f"<= {opt.mcse_tolerance}), level tying")
        else:
            print(f"HDP: {opt.n_iter} Gibbs iterations, level tying")
    # the numba kernels compile on first use (then load from numba's cache): do it before any
    # fit is timed, and say so, instead of a silent pause inside the first row's "fit s"
    print("compiling the numba kernels on first use (cached afterwards) ...", end=" ", flush=True)
    t0 = time.perf_counter()
    rows = slice(None, None, max(1, len(X) // 200))  # ~200 rows spread over the classes
    with warnings.catch_warnings():  # 20 iterations compile the kernels; they certify nothing
        warnings.simplefilter("ignore", UnconvergedWarning)
        for est in estimations:
            BayesNetClassifier(structure="kdb", k=2, estimation=est,
                               sampler=HDPOptions.preset(DEFAULT_SAMPLER, n_iter=20),
                               random_state=args.seed).fit(X.iloc[rows], y.iloc[rows])
        # the ensemble's kernels, numeric columns' included (credit-a has numbers and missing
        # values), so that a first ESKDBClassifier fit after the demo loads them from the cache
        X_num, y_num = load_dataset("credit-a")
        ESKDBClassifier(n_estimators=2, random_state=args.seed).fit(
            X_num.iloc[::3], y_num.iloc[::3]).predict_proba(X_num.iloc[:50])
    print(f"{time.perf_counter() - t0:.1f} s")
    print()
    header = (f"{'structure':<10} {'estimation':<10} {'0-1 loss':>14} {'RMSE':>14} "
              f"{'fit s/fold':>10}")
    print(header)
    print("-" * len(header))
    caught: list[warnings.WarningMessage] = []
    for structure, k in configs:
        name = f"kdb-{k}" if structure == "kdb" else structure
        for est in estimations:
            def make(structure=structure, k=k, est=est):
                if structure == "eskdb":  # the library's default model, its own sampler
                    return ESKDBClassifier(estimation=est, random_state=args.seed)
                return BayesNetClassifier(structure=structure, k=k, estimation=est,
                                          sampler=sampler, random_state=args.seed)

            with warnings.catch_warnings(record=True) as fold_warnings:
                warnings.simplefilter("always", UnconvergedWarning)
                s = summarise(cross_validate(make, X, y, n_folds=args.folds,
                                             n_repeats=args.repeats, seed=args.seed))
            caught.extend(fold_warnings)
            print(f"{name:<10} {est:<10} "
                  f"{s['zero_one_loss']['mean']:>7.4f}±{s['zero_one_loss']['sd']:.4f} "
                  f"{s['rmse']['mean']:>7.4f}±{s['rmse']['sd']:.4f} {s['fit_seconds']:>10.2f}",
                  flush=True)
    print("\n(mean ± sd over folds; lower is better; fit s/fold: mean seconds per fold)")
    # the fits' warnings after the table, not inside it: one line for the convergence ones
    n_hdp_fits = len(configs) * args.folds * args.repeats
    _warn_once_per_kind(caught, n_hdp_fits, what="HDP fits")
    return 0


def _cmd_experiments(args: argparse.Namespace) -> int:
    try:  # validation is a sibling package that imports fastpath: imported here, on use
        from validation.experiments.cli import main as experiments_main
    except ImportError as exc:  # pragma: no cover - the validation package ships with hdpbn
        raise ImportError(f"the experiment runner is not installed: {exc}") from None
    return int(experiments_main(args.rest, prog="hdpbn experiments") or 0)


# ---------------------------------------------------------------------- parser
def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser: every command with its options, or, given ``command``,
    that command's options only (the others listed by their one-line help), so that parsing a
    command imports only what its help texts quote (``""``: no command's, for ``hdpbn
    --help``; main passes the command it is given)."""

    def wanted(name: str) -> bool:
        return command is None or name == command

    parser = argparse.ArgumentParser(
        prog="hdpbn",
        description="Bayesian network classifiers with hierarchical Dirichlet process estimates "
        "(Petitjean, Buntine, Webb & Zaidi, Machine Learning 2018).",
    )
    parser.add_argument("--version", action="version", version=f"hdpbn {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("fit", help="learn a classifier from a table and save it",
                       description="Learn the discretisation, structure and probability tables "
                       "from DATA (CSV, CSV.gz, Parquet or ARFF, or a bundled dataset's name) "
                       "and save the model.")
    if wanted("fit"):
        p.add_argument("data", metavar="DATA",
                       help="training table, " + _BUNDLED_HELP.format(", ".join(_bundled_names())))
        p.add_argument("--target", default=None, help="class column (default: the last column)")
        p.add_argument("--model", required=True, help="where to save the model (.npz)")
        p.add_argument("--chunksize", type=int, default=None,
                       help="fit out of core, reading DATA (CSV/CSV.gz/Parquet) in chunks of this "
                       "many rows; memory does not grow with the file")
        _add_model_options(p, structure=FIT_STRUCTURE)
        p.add_argument("--quiet", action="store_true", help="print nothing but errors")
        p.set_defaults(func=_cmd_fit)

    p = sub.add_parser("predict", help="predict classes and probabilities for a table",
                       description="Write one row per input row: the columns named by --keep, "
                       "the predicted class and one probability column p_<class> per class. "
                       "DATA is read and written a chunk of rows at a time, so memory does not "
                       "grow with the table.")
    if wanted("predict"):
        p.add_argument("data", metavar="DATA",
                       help="table to classify (CSV, CSV.gz, Parquet or ARFF; columns the model "
                       "does not use are ignored), '-' for CSV on standard input, "
                       + _BUNDLED_HELP.format(", ".join(_bundled_names())))
        p.add_argument("--model", required=True, help="a model saved by 'hdpbn fit'")
        p.add_argument("--out", default=None, help="output CSV, compressed as its suffix says "
                       "(.gz, ...) (default: standard output)")
        p.add_argument("--keep", action="append", metavar="COL[,COL...]",
                       help="copy these input columns (e.g. an id) to the output, before the "
                       "predictions, as the input writes them")
        p.add_argument("--chunksize", type=int, default=None, metavar="ROWS",
                       help=f"rows read and predicted at a time (default: {PREDICT_CHUNKSIZE:,})")
        p.add_argument("--sep", default=None, metavar="CHAR", type=_separator, help=_SEP_HELP)
        p.add_argument("--interval", type=float, default=None, metavar="LEVEL",
                       help="also write each probability's equal-tailed credible interval of "
                       "this probability (e.g. 0.9), p_<class>_low and p_<class>_high, from "
                       "the posterior draws of the tables the model keeps (a fit with the "
                       "sampler's record_draws=True)")
        p.add_argument("--draws", type=int, default=None, metavar="N",
                       help="posterior draws an interval uses (default: all the model keeps)")
        p.add_argument("--seed", type=int, default=0,
                       help="seed of the intervals' draws of unseen paths (default: 0)")
        p.add_argument("--quiet", action="store_true", help="print nothing but errors")
        p.set_defaults(func=_cmd_predict)

    p = sub.add_parser("explain", help="each attribute's exact contribution to every row's "
                       "log-posterior",
                       description="Write one row per input row: the columns named by --keep, "
                       "then the exact terms of log P(y | x) (a Bayesian network classifier's "
                       "log-posterior is a sum): the class prior, one column per attribute, "
                       "and the rest. Two classes: the log-odds of the second class against "
                       "the first (prior + attributes + ensemble_gap = log_odds); more: "
                       "--class's log-posterior (prior + attributes - log_normaliser + "
                       "ensemble_gap = log_posterior). An ensemble's terms are its members' "
                       "mean, and ensemble_gap what their disagreement adds (0 for one "
                       "model). 'unknown' lists the attributes whose value the model does "
                       "not know (their term is 0). Read and written a chunk at a time.")
    if wanted("explain"):
        p.add_argument("data", metavar="DATA",
                       help="table to explain (CSV, CSV.gz, Parquet or ARFF), '-' for CSV on "
                       "standard input, " + _BUNDLED_HELP.format(", ".join(_bundled_names())))
        p.add_argument("--model", required=True, help="a model saved by 'hdpbn fit'")
        p.add_argument("--out", default=None, help="output CSV, compressed as its suffix says "
                       "(default: standard output)")
        p.add_argument("--class", dest="cls", default=None, metavar="CLASS",
                       help="the class whose log-posterior is explained (needed for more than "
                       "two classes)")
        p.add_argument("--keep", action="append", metavar="COL[,COL...]",
                       help="copy these input columns (e.g. an id) to the output first")
        p.add_argument("--chunksize", type=int, default=None, metavar="ROWS",
                       help=f"rows read and explained at a time (default: "
                       f"{PREDICT_CHUNKSIZE:,})")
        p.add_argument("--sep", default=None, metavar="CHAR", type=_separator, help=_SEP_HELP)
        p.set_defaults(func=_cmd_explain)

    p = sub.add_parser("evaluate", help="repeated stratified cross-validation",
                       description="Cross-validate a classifier on DATA: discretisation and "
                       "structure are learned inside each training fold. Prints 0-1 loss, the "
                       "paper's RMSE (sqrt of the mean over rows and classes of (P(c) - [c = "
                       "y])^2), the Brier score and log loss, mean and sd over folds, and "
                       "fit/predict seconds per fold.")
    if wanted("evaluate"):
        p.add_argument("data", metavar="DATA",
                       help="table with the class column, "
                       + _BUNDLED_HELP.format(", ".join(_bundled_names())))
        p.add_argument("--target", default=None, help="class column (default: the last column)")
        p.add_argument("--folds", type=int, default=2, help="folds per repeat (default: 2)")
        p.add_argument("--repeats", type=int, default=5, help="repeats (default: 5)")
        p.add_argument("--json", action="store_true", help="print one JSON object")
        _add_model_options(p)
        p.add_argument("--quiet", action="store_true", help="no progress display")
        p.set_defaults(func=_cmd_evaluate)

    # their modules quote the sampler's defaults in their help: imported for them only
    if wanted("estimate"):
        from ._estimate import add_estimate_parser

        add_estimate_parser(sub)
    else:
        sub.add_parser("estimate", help=_SUMMARIES["estimate"])
    if wanted("diagnose"):
        from ._diagnose import add_diagnose_parser

        add_diagnose_parser(sub)
    else:
        sub.add_parser("diagnose", help=_SUMMARIES["diagnose"])

    p = sub.add_parser("experiments", help="the paper's experiments on a folder of datasets",
                       description="Cross-validated comparison of BNCs (m and HDP estimates), "
                       "random forest and XGBoost over a folder of datasets, with win/draw/loss "
                       "tables and sign tests; the same as 'python -m validation.experiments'. "
                       "Run 'hdpbn experiments --help' for its options.", add_help=False)
    p.add_argument("rest", nargs=argparse.REMAINDER, help="options of the experiment runner")
    p.set_defaults(func=_cmd_experiments)

    p = sub.add_parser("demo",
                       help="compare structures and estimation methods on a bundled dataset",
                       description="Cross-validated comparison of NB, TAN, kDB-1, kDB-2 and the "
                       "ESKDB ensemble (the library's default model) with m-estimates and HDP "
                       "estimates on a small bundled UCI dataset.")
    if wanted("demo"):
        from ..estimate.hdp._options import HDPOptions
        from ._estimate import parse_iterations

        p.add_argument("--dataset", default="car", help="bundled dataset (default: car)")
        p.add_argument("--folds", type=int, default=2)
        p.add_argument("--repeats", type=int, default=5)
        p.add_argument("--iterations", type=parse_iterations, default=None,
                       help="HDP iterations, or 'auto' (default: the adaptive sampler's, "
                       f"{HDPOptions.min_iter} to {HDPOptions.max_iter} per tree)")
        p.add_argument("--seed", type=int, default=CLI_SEED)
        p.set_defaults(func=_cmd_demo)

    return parser


# the output file of each command: (attribute of the parsed arguments, flag)
_OUTPUTS = {"fit": ("model", "--model"), "predict": ("out", "--out"),
            "explain": ("out", "--out"), "estimate": ("out", "--out")}
# the errors that are the user's, shown as one line with exit status 2: a bad value (the
# library's own input errors, StreamError and the ARFF reader's, are ValueErrors naming the
# chunk, row, column or parameter), a file that cannot be read or written, an optional extra
# that is not installed. Anything else (TypeError, KeyError, AttributeError, ...) is a bug in
# hdpbn: it propagates with its traceback instead of passing for a usage error.
_USER_ERRORS = (ValueError, OSError, ImportError)


def _check_output(path: str, flag: str) -> None:
    """An output file can be written (before any work): a pipe or device is writable, or the
    folder of the file (through its symbolic links) exists and is writable."""
    p = Path(path)
    if p.is_dir():
        raise ValueError(f"{flag} {path!r} is a folder; give a file name")
    if p.exists() and not p.is_file():  # a pipe, a device: written into as it is
        if not os.access(p, os.W_OK):
            raise ValueError(f"{flag} {path!r} is not writable")
        return
    p = Path(os.path.realpath(p))  # a symbolic link is written through: its target's folder
    folder = p.parent
    if not folder.exists():
        raise ValueError(f"{flag} {path!r}: the folder {str(folder)!r} does not exist")
    if not folder.is_dir():
        raise ValueError(f"{flag} {path!r}: {str(folder)!r} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise ValueError(f"{flag} {path!r} is not writable")


def _describe(exc: BaseException) -> str:
    """The one-line message of an error (an ``OSError``: the file and the reason)."""
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        return f"{exc.filename!r}: {exc.strerror}"
    return str(exc)


@contextlib.contextmanager
def _one_line_warnings(command: str, quiet: bool = False) -> Iterator[None]:
    """Show warnings as ``hdpbn COMMAND: warning: MESSAGE`` (no source line) while a command
    runs, or none when ``quiet`` (``fit --quiet``: the model keeps them, ``hdpbn diagnose``
    shows them; ``predict --quiet``); the previous ``warnings.showwarning`` is restored
    after."""
    saved = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        if quiet:
            return
        message = _cli_text(message)
        try:
            print(f"hdpbn {command}: warning: {message}",
                  file=sys.stderr if file is None else file)
        except (OSError, ValueError, AttributeError):  # no usable stream: drop it, as Python
            pass

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = saved


def _silence_stdout() -> None:
    """Point standard output at the null device after a broken pipe, so that the flush at exit
    does not fail again ("Exception ignored ... BrokenPipeError")."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a file (e.g. captured): nothing to do
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def _run(command: str, work: Callable[[], Any], quiet: bool = False) -> int:
    with _one_line_warnings(command, quiet):
        try:
            status = int(work() or 0)
            sys.stdout.flush()  # a closed pipe shows here, not at exit
            return status
        except BrokenPipeError:  # the reader went away (hdpbn predict ... | head): end quietly
            _silence_stdout()
            return 141
        except KeyboardInterrupt:
            # Ctrl-C: one line and 128 + SIGINT, as Unix tools end; the files being written
            # were removed on the way out (atomic_write), the old ones left as they were
            with contextlib.suppress(OSError, ValueError):
                print(f"hdpbn {command}: interrupted", file=sys.stderr)
            return 130
        except _USER_ERRORS as exc:
            print(f"hdpbn {command}: error: {_describe(exc)}", file=sys.stderr)
            return 2


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["experiments"]:
        # the runner has its own parser (and --help): hand it every remaining argument
        def experiments() -> int:
            return _cmd_experiments(argparse.Namespace(rest=argv[1:]))

        return _run("experiments", experiments)
    # only the command's own options (and what their help quotes) are built
    parser = build_parser(argv[0] if argv[:1] and argv[0] in _COMMANDS else "")
    args = parser.parse_args(argv)

    def work() -> Any:
        if args.command in _OUTPUTS:
            attr, flag = _OUTPUTS[args.command]
            if getattr(args, attr, None) is not None:
                _check_output(getattr(args, attr), flag)
        return args.func(args)

    # fit --quiet and predict --quiet print nothing but errors (a fit's warnings are kept in
    # the model, for diagnose); evaluate's --quiet only hides its progress display
    return _run(args.command, work, quiet=args.command in ("fit", "predict")
                and bool(getattr(args, "quiet", False)))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
