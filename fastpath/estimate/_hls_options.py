"""Options of hierarchical linear smoothing (:mod:`._hls`), in a module of their own so that
the command line's help texts read them without importing the solver (numba, scipy)."""

from __future__ import annotations

from dataclasses import dataclass

from ..utils._validation import check_float

#: the authors' penalty (:class:`HLSOptions`' default)
HLS_C: float = 1.0


@dataclass(frozen=True)
class HLSOptions:
    """Options of hierarchical linear smoothing: what a classifier's ``estimation`` takes in
    place of ``"hls"`` (``estimation=HLSOptions(C=0.5)``; ``"hls"`` is ``HLSOptions()``).

    Attributes
    ----------
    C : float
        The inverse strength of the L2 penalty of every table's regression (scikit-learn's
        convention: ``C`` times the log loss of the training rows plus half the squared norm of
        the node coefficients; the intercept is not penalised). 1 is the authors' setting.
    """

    C: float = HLS_C

    def __post_init__(self) -> None:
        object.__setattr__(self, "C", check_float("C", self.C, positive=True))
