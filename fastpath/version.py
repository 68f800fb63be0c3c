"""The version of hdpbn (one place: the package and the command line read it)."""

__version__ = "0.1.0.dev0"
