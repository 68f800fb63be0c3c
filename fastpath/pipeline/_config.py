"""What a fit is asked to do: the estimator's parameters, checked once, as one record."""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..counts import _counting
from ..encode._encoder import TableEncoder
from ..estimate._discriminative import GRANULARITIES
from ..estimate._mestimate import M_BACKOFFS
from ..estimate.hdp._options import (
    DEFAULT_SAMPLER,
    SAMPLER_PRESETS,
    HDPOptions,
    check_preset,
)
from ..io._column_types import check_exclude_features, check_na_values, check_numeric_errors
from ..predict import _inference
from ..structure._selective import auto_selection_rows
from ..utils._numba_cache import module_kernels, none_cached
from ..utils._progress import FitLog
from ..utils._validation import as_generator, check_int, n_threads
from ._registry import ESTIMATORS, estimator_of, structure_learner

#: the names ``m`` accepts for a rule that chooses it, and the rule each names
M_RULES: dict[str, str] = {"auto": "loo", "holdout": "holdout"}
#: how the members cut numeric columns: Weka's MDL cut points; each member its own draw of the
#: stochastic MDL; each at random resolution; or the two draws mixed (even members stochastic
#: MDL, odd members random resolution: :meth:`FitConfig.member_discretizations`)
DISCRETIZATIONS: tuple[str, ...] = ("mdl", "stochastic", "random", "mixed")


def check_sampler(sampler: Any) -> str | HDPOptions:
    """``sampler`` when it is a preset's name or an :class:`HDPOptions`; ``ValueError``
    otherwise."""
    if isinstance(sampler, HDPOptions):
        return sampler
    if isinstance(sampler, str):
        return check_preset(sampler)  # ValueError naming the presets
    raise ValueError(f"sampler must be one of {tuple(SAMPLER_PRESETS)} or an HDPOptions, got "
                     f"{sampler!r}")


def hdp_options(params: Mapping[str, Any]) -> HDPOptions:
    """The sampler options of the estimator parameters ``params`` (``ValueError`` naming a bad
    one): ``params["sampler"]`` when it is an :class:`HDPOptions`, else the options of the
    preset it names (:data:`~fastpath.estimate.hdp._options.SAMPLER_PRESETS`;
    :data:`~fastpath.estimate.hdp._options.DEFAULT_SAMPLER` when absent). A preset's name and
    its options are the same sampler everywhere: an ensemble scales either's tolerance to its
    members alike (:meth:`HDPOptions.for_members`)."""
    sampler = check_sampler(params.get("sampler", DEFAULT_SAMPLER))
    return sampler if isinstance(sampler, HDPOptions) else HDPOptions.preset(sampler)


def kernels_cold() -> bool:
    """Whether the kernels of a fit and a prediction will compile: numba's cache holds none of
    the counting and prediction kernels (after an install, an upgrade, or with a new
    ``NUMBA_CACHE_DIR``); the first fit says so (``verbose``), ``hdpbn`` always."""
    return none_cached([*module_kernels(vars(_counting)), *module_kernels(vars(_inference))])


def check_discriminative(discriminative: Any) -> str | None:
    """``discriminative`` (None or a granularity of
    :data:`~fastpath.estimate._discriminative.GRANULARITIES`), checked; ``ValueError`` naming
    the parameter."""
    if discriminative is not None and not (isinstance(discriminative, str)
                                           and discriminative in GRANULARITIES):
        raise ValueError(f"discriminative must be None or one of {GRANULARITIES}, got "
                         f"{discriminative!r}")
    return discriminative


@dataclass(frozen=True)
class FitConfig:
    """The checked parameters of a fit, shared by every driver.

    Build it with :meth:`from_params` from an estimator's ``get_params()``; every bad value
    raises ``ValueError`` naming the parameter before any data is read. ``m_backoff`` (the
    m-estimates' back-off rule, :func:`fastpath.estimate.m_estimate_table`) defaults to
    ``"path"`` and ``verbose`` to 0 when ``params`` lacks them. ``estimation`` is the name of a
    registered estimation method (:data:`~fastpath.pipeline._registry.ESTIMATORS`); an
    ``estimation`` parameter that is an instance of a registered estimator's options class (an
    :class:`~fastpath.estimate.HLSOptions`) is kept as ``estimation_options`` (for a name, the
    class's defaults: :func:`~fastpath.pipeline._registry.estimator_of`). ``hdp`` is the
    sampler's options as the ``sampler`` parameter gives them (an estimation method with the
    sampler only; an ensemble's members sample with ``hdp.for_members(n_members)``).

    A fit learns ``n_members`` members (``n_estimators``; 1 for a single classifier) that
    differ in how they are drawn (:mod:`fastpath.pipeline._members`): member 0 orders the
    attributes by ``I(X; Y)``, the others by an order drawn in proportion to it, and unless
    ``discretization="mdl"`` each member draws its own cut points
    (:meth:`member_discretizations`). ``selection_rows`` (selective kDB): the leave-one-out
    scores of its candidates are taken on a sample of that many training rows when there are
    more (None: every row; ``"auto"``: :meth:`selection_sample`).
    """

    structure: str
    k: int
    estimation: str
    m: float | str
    categorical_features: Any
    hdp: HDPOptions | None
    n_jobs: Any
    random_state: Any
    m_backoff: str = "path"
    verbose: int = 0
    n_members: int = 1
    discretization: str = "mdl"
    selection_rows: int | str | None = None
    na_values: tuple[str, ...] = ()
    numeric_errors: str = "coerce"
    exclude_features: Any = "auto"
    estimation_options: Any = None
    discriminative: str | None = None

    def table_encoder(self, **kwargs: Any) -> TableEncoder:
        """An unfitted encoder with this fit's column rules (``kwargs``: its other options)."""
        return TableEncoder(self.categorical_features, na_values=self.na_values or None,
                            numeric_errors=self.numeric_errors, **kwargs)

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> FitConfig:
        structure, estimation, k, m = (params[n] for n in ("structure", "estimation", "k", "m"))
        structure_learner(structure)  # ValueError naming the registered ones
        spec, options = estimator_of(estimation)  # the same
        estimation = spec.name
        check_int("k", k, 0)
        if not (isinstance(m, str) and m in M_RULES):
            if isinstance(m, bool) or not isinstance(m, numbers.Real) or not (
                np.isfinite(m) and m >= 0
            ):
                raise ValueError(
                    f"m must be 'auto', 'holdout' or a non-negative number, got {m!r}"
                )
        m_backoff = params.get("m_backoff", cls.m_backoff)  # the field's default
        if not (isinstance(m_backoff, str) and m_backoff in M_BACKOFFS):
            raise ValueError(f"m_backoff must be one of {M_BACKOFFS}, got {m_backoff!r}")
        verbose = params.get("verbose", cls.verbose)
        if not isinstance(verbose, bool):
            check_int("verbose", verbose, 0)
        n_members = check_int("n_estimators", params.get("n_estimators", 1), 1)
        discretization = params.get("discretization", "mdl")
        if not (isinstance(discretization, str) and discretization in DISCRETIZATIONS):
            raise ValueError(f"discretization must be one of {DISCRETIZATIONS}, got "
                             f"{discretization!r}")
        selection_rows = params.get("selection_rows")
        if isinstance(selection_rows, str) and selection_rows != "auto":
            raise ValueError(f"selection_rows must be a positive integer, 'auto' or None, got "
                             f"{selection_rows!r}")
        if selection_rows is not None and selection_rows != "auto":
            selection_rows = check_int("selection_rows", selection_rows, 1)
        discriminative = check_discriminative(params.get("discriminative"))
        n_threads(params["n_jobs"])  # checks n_jobs
        seed = params["random_state"]
        if not isinstance(seed, np.random.Generator | np.random.RandomState):
            as_generator(seed)  # checks random_state without consuming a generator
        return cls(
            structure=structure,
            k=int(k),
            estimation=estimation,
            m=m,
            categorical_features=params["categorical_features"],
            hdp=hdp_options(params) if spec.sampler else None,
            n_jobs=params["n_jobs"],
            random_state=seed,
            m_backoff=m_backoff,
            verbose=int(verbose),
            n_members=n_members,
            discretization=discretization,
            selection_rows=selection_rows,
            na_values=check_na_values(params.get("na_values")),
            numeric_errors=check_numeric_errors(params.get("numeric_errors", "coerce")),
            exclude_features=check_exclude_features(params.get("exclude_features", "auto")),
            estimation_options=options,
            discriminative=discriminative,
        )

    def member_discretizations(self) -> list[str]:
        """Each member's discretisation (:class:`~fastpath.encode.TableEncoder`'s names):
        ``"mixed"`` alternates the stochastic MDL (even members, member 0 among them) and random
        resolution (odd members); the other names are every member's."""
        if self.discretization == "mixed":
            return ["stochastic" if e % 2 == 0 else "random" for e in range(self.n_members)]
        return [self.discretization] * self.n_members

    def log(self) -> FitLog:
        """The fit's stage lines and sampler bar on standard error (silent unless verbose)."""
        return FitLog(self.verbose, cold=kernels_cold)

    @property
    def chooses_m(self) -> bool:
        """Whether the estimation method reads an m (each member's own: m-estimates, or a
        registered estimator with ``chooses_m``), so that members' tables are estimated one by
        one."""
        return ESTIMATORS[self.estimation].chooses_m

    @property
    def m_rule(self) -> str | None:
        """How m is chosen with m-estimates: ``"loo"`` (``m="auto"``), ``"holdout"`` (the
        paper's, ``m="holdout"``), or None (a fixed m, or HDP estimates)."""
        if not self.chooses_m or not isinstance(self.m, str):
            return None
        return M_RULES[self.m]

    def selection_sample(self, n_classes: int) -> int | None:
        """The rows SkDB's selection scores at most (None: every row): ``selection_rows``, or
        :func:`~fastpath.structure._selective.auto_selection_rows` for ``"auto"``."""
        if self.selection_rows == "auto":
            return auto_selection_rows(n_classes)
        return self.selection_rows

    @property
    def n_threads(self) -> int:
        return n_threads(self.n_jobs)
