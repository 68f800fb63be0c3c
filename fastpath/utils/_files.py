"""Files the library writes survive a crash: each is written whole or not at all.

Every regular file (a model, predictions, estimates, experiment results) is written to a
temporary file in the target's folder, flushed and synced to disk, then renamed over the target
(``os.replace``: atomic on POSIX and Windows within one file system). A process killed while
writing, or a full disk, leaves the previous file as it was (and at worst a hidden temporary
``.<name>.<random>.tmp`` beside it, removed whenever the failure raises in Python).

The path is treated as a Unix tool treats it (``cp``, ``>`` in a shell): a symbolic link is
written through (its target is the file replaced, the link stays); a named pipe, a character
device (``/dev/null``, a terminal) or a socket is written into directly, streamed, never
replaced; a folder is refused. A new file gets the mode an ordinary ``open(path, "w")`` gives
(``0o666`` less the umask), a replaced one keeps its mode (and, where the process may set it,
its owner). An error names the path given, never the temporary.
"""

from __future__ import annotations

import bz2
import contextlib
import errno
import gzip
import lzma
import os
import stat
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

#: errors of a write itself (no file named): reported against the path given
_WRITE_ERRNOS = frozenset(getattr(errno, name) for name in ("ENOSPC", "EDQUOT", "EFBIG", "EIO")
                          if hasattr(errno, name))


def _named(exc: OSError, path: str | os.PathLike, temporary: str | None) -> OSError:
    """``exc`` naming ``path`` where it named the temporary (or no file, for a write's own
    error); the same class (``PermissionError`` stays one)."""
    if exc.filename is None or (temporary is not None and exc.filename == temporary):
        if exc.errno is not None and exc.strerror:
            return type(exc)(exc.errno, exc.strerror, os.fspath(path))
    return exc


def _open_new(folder: Path, name: str) -> tuple[int, str]:
    """A new hidden file ``.<name>.<random>.tmp`` in ``folder``, created with mode 0o666 less
    the umask (what ``open(path, "w")`` gives), opened for writing."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        tmp = str(folder / f".{name}.{os.urandom(4).hex()}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(folder / f".{name}.tmp"))


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "wb", *,
                 encoding: str | None = None, newline: str | None = None) -> Iterator[IO[Any]]:
    """Open ``path`` for writing, whole or not at all.

    A regular file (or a new one) is written to a temporary file beside it; on a clean exit the
    temporary (flushed and fsynced) replaces it, on an exception it is removed and ``path`` is
    left untouched. A symbolic link is followed (its target is replaced; a dangling link's
    target is created). A named pipe, character device or socket is opened and written into
    directly (nothing to replace). A folder raises ``IsADirectoryError``.

    Parameters
    ----------
    path : str or os.PathLike
        The file to write.
    mode : {"wb", "w"}
        Binary, or text with ``encoding`` and ``newline`` as for :func:`open`.
    encoding, newline : str, optional
        Of a text ``mode``.

    Yields
    ------
    file object
        The stream to write to.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"mode must be 'w' or 'wb', got {mode!r}")
    text = dict(encoding=encoding, newline=newline) if mode == "w" else {}
    given = os.fspath(path)
    target = Path(os.path.realpath(given))  # through every symbolic link, as open() goes
    try:
        existing: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        existing = None
    except OSError as exc:
        raise _named(exc, given, None) from None
    if existing is not None and stat.S_ISDIR(existing.st_mode):
        raise IsADirectoryError(errno.EISDIR, "is a folder, not a file: give a file name", given)
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        # a pipe, a device, a socket: written into as it is (streamed), never replaced
        try:
            fh = open(target, mode, **text)
        except OSError as exc:
            raise _named(exc, given, str(target)) from None
        with fh:
            yield fh
        return
    folder = target.parent
    try:
        fd, tmp = _open_new(folder, target.name)
    except OSError as exc:  # the temporary's name is one of ours: the path given instead
        raise _named(exc, given, exc.filename) from None
    try:
        try:
            if existing is not None:  # a replaced file keeps its mode and, where allowed, owner
                if hasattr(os, "fchmod"):
                    os.fchmod(fd, stat.S_IMODE(existing.st_mode))
                if hasattr(os, "fchown") and (existing.st_uid != os.geteuid()
                                              or existing.st_gid != os.getegid()):
                    with contextlib.suppress(OSError):
                        os.fchown(fd, existing.st_uid, existing.st_gid)
            fh = os.fdopen(fd, mode, **text)
        except BaseException:
            os.close(fd)
            raise
        try:
            try:
                yield fh
            except OSError as exc:  # a full disk while writing: the path given, not the temporary
                if exc.filename is None and exc.errno not in _WRITE_ERRNOS:
                    raise
                raise _named(exc, given, tmp) from None
            try:
                fh.flush()
                os.fsync(fh.fileno())
                fh.close()
            except OSError as exc:
                raise _named(exc, given, tmp) from None
        finally:
            if not fh.closed:
                # an error path: closing flushes the bytes still buffered, which fail again
                # (a file-size limit, a full disk); that second error would replace the first,
                # which names the file, so it is dropped (the file descriptor is closed anyway)
                with contextlib.suppress(OSError, ValueError):
                    fh.close()
        try:
            os.replace(tmp, target)
        except OSError as exc:
            raise _named(exc, given, tmp) from None
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
