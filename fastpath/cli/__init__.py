"""The ``hdpbn`` command line (:func:`main`): one module per subcommand family."""

from ._main import build_parser, main

__all__ = ["build_parser", "main"]
