"""Atomic file writing: nothing half-written is ever left under a final name.

Every writer here writes to a temporary name in the destination's own directory, flushes and fsyncs it,
then ``os.replace``s it into place (atomic on POSIX). Directories are built under a temporary name and
renamed into place once complete. Permissions follow the umask like any ordinary write (``0o666 & ~umask``
for files, ``0o777 & ~umask`` for folders), not the private modes of ``tempfile``.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (temp file + fsync + rename), with the umask's permissions."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def to_jsonable(x: Any) -> Any:
    """Plain-JSON form of nested results: tensors/arrays -> lists, numpy scalars -> Python numbers,
    tuples -> lists, non-finite floats -> ``None`` (strict JSON has no NaN), typed results
    (:mod:`mechrecall.typed`) -> their JSON."""
    if hasattr(type(x), "to_json") and hasattr(type(x), "model_dump"):  # a typed Entry / Results / marker
        return x.to_json()
    if isinstance(x, dict):
        return {str(k): to_jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [to_jsonable(v) for v in x]
    if hasattr(x, "tolist") and callable(x.tolist):  # torch.Tensor, np.ndarray, np.generic
        return to_jsonable(x.tolist())
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, Path):
        return str(x)
    if x is None or isinstance(x, (bool, int, str)):
        return x
    raise TypeError(f"cannot write {type(x).__name__} to JSON: {x!r}")


def atomic_write_json(path: str | os.PathLike, obj: Any) -> Path:
    return atomic_write_text(path, json.dumps(to_jsonable(obj), indent=2, allow_nan=False) + "\n")


@contextmanager
def atomic_directory(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary sibling directory; on success it is renamed to ``path``.

    ``path`` must not exist yet (an existing directory is never overwritten). On an exception the
    temporary directory is removed and ``path`` is untouched.
    """
    path = Path(path)
    if path.exists():
        raise FileExistsError(f"{path} already exists; refusing to overwrite it")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"))
    try:
        tmp.chmod(0o777 & ~_umask())
        yield tmp
        os.rename(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


@contextmanager
def file_lock(path: str | os.PathLike) -> Iterator[None]:
    """Hold an exclusive advisory lock (``fcntl.flock``) on ``path`` (created if missing) for the block: processes
    that write the same file take turns."""
    import fcntl

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
