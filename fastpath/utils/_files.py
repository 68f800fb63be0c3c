"""Files the library writes survive a crash: each is written whole or not at all.

Every file (a model, predictions, estimates, experiment results) is written to a temporary
file in the target's folder, flushed and synced to disk, then renamed over the target
(``os.replace``: atomic on POSIX and Windows within one file system). A process killed while
writing, or a full disk, leaves the previous file as it was (and at worst a hidden temporary
``.<name>.<random>.tmp`` beside it, removed whenever the failure raises in Python).
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import lzma
import os
import tempfile
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "wb", *,
                 encoding: str | None = None, newline: str | None = None) -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path`` for writing; on a clean exit it replaces
    ``path`` (flushed and fsynced first), on an exception it is removed and ``path`` is left
    untouched.

    ``mode`` is ``"wb"`` or ``"w"`` (text, with ``encoding`` and ``newline`` as for
    :func:`open`).
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"mode must be 'w' or 'wb', got {mode!r}")
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, mode, encoding=encoding if mode == "w" else None,
                       newline=newline if mode == "w" else None) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _sync_folder(folder)


def _sync_folder(folder: Path) -> None:
    """Make the rename itself durable (POSIX); best effort where a folder cannot be opened."""
    if os.name != "posix":
        return
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_text(path: str | os.PathLike, text: str, *, encoding: str = "utf-8") -> None:
    """``Path(path).write_text(text)``, atomically (:func:`atomic_write`)."""
    with atomic_write(path, "w", encoding=encoding) as fh:
        fh.write(text)


#: the compression pandas infers from a path's suffix (``to_csv(path)``), for a file handle
_COMPRESSION = {".gz": "gzip", ".bz2": "bz2", ".zip": "zip", ".xz": "xz", ".zst": "zstd"}


def write_csv(frame: Any, path: str | os.PathLike, **to_csv: Any) -> None:
    """``frame.to_csv(path, **to_csv)`` (pandas), atomically (:func:`atomic_write`),
    compressed as the path's suffix says (``.gz``, ``.bz2``, ``.zip``, ``.xz``, ``.zst``)."""
    to_csv.setdefault("compression", _COMPRESSION.get(Path(path).suffix.lower()))
    with atomic_write(path, "wb") as fh:
        frame.to_csv(fh, **to_csv)


@contextlib.contextmanager
def compressed_writer(fh: IO[bytes], path: str | os.PathLike) -> Iterator[IO[bytes]]:
    """A binary stream into ``fh`` compressed as ``path``'s suffix says (``.gz``, ``.bz2``,
    ``.xz``, ``.zip``, ``.zst``; else ``fh`` itself), for a file written piece by piece (what
    :func:`write_csv` writes whole); closed on exit, ``fh`` left open."""
    kind = _COMPRESSION.get(Path(path).suffix.lower())
    name = Path(path).name
    if kind is None:
        yield fh
        return
    if kind == "gzip":
        writer: Any = gzip.GzipFile(filename=name.removesuffix(Path(path).suffix),
                                    fileobj=fh, mode="wb", mtime=0)
    elif kind == "bz2":
        writer = bz2.BZ2File(fh, "wb")
    elif kind == "xz":
        writer = lzma.LZMAFile(fh, "wb")
    elif kind == "zstd":
        # an optional package, as for pandas' own Zstandard writer
        try:
            import zstandard
        except ImportError:
            raise ImportError(f"writing {Path(path).name!r} (Zstandard) needs the zstandard "
                              "package: pip install zstandard, or write another suffix") from None

        writer = zstandard.ZstdCompressor().stream_writer(fh, closefd=False)
    else:
        archive = zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_DEFLATED)
        try:  # one member named as the file less .zip, as pandas writes it
            with archive.open(name.removesuffix(Path(path).suffix), "w",
                              force_zip64=True) as member:
                yield member
        finally:
            archive.close()
        return
    try:
        yield writer
    finally:
        writer.close()


def save_figure(figure: Any, path: str | os.PathLike, **savefig: Any) -> None:
    """``figure.savefig(path, **savefig)`` (matplotlib), atomically (:func:`atomic_write`);
    the format is the path's suffix unless ``format`` is given."""
    savefig.setdefault("format", Path(path).suffix.lstrip(".") or None)
    with atomic_write(path, "wb") as fh:
        figure.savefig(fh, **savefig)


def refuse_overwriting_inputs(out: str | os.PathLike | None,
                              inputs: Sequence[str | os.PathLike | None], *,
                              option: str = "--out") -> None:
    """Raise ``ValueError`` when the output path names one of the input files (the same file,
    whatever the spelling of its path): writing it would destroy the data being read."""
    if out is None or str(out) == "-":
        return
    target = Path(out)
    if not target.exists():
        return
    for given in inputs:
        if given is None or str(given) == "-":
            continue
        source = Path(given)
        with contextlib.suppress(OSError):
            if source.exists() and os.path.samefile(source, target):
                raise ValueError(f"{option} {str(out)!r} is the input file {str(given)!r}: "
                                 "writing it would overwrite the data being read; choose "
                                 "another path")
