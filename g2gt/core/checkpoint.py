"""Training folders: atomic checkpoints, safe loading, one run per folder, clean resume.

A training folder (``--out``) holds ``last.pt`` (resumable), ``best.pt``, ``log.jsonl`` and task files.
This module keeps it consistent:

* :func:`save_atomic` writes ``.NAME.tmpPID`` and renames it over ``NAME``, so a reader never sees half
  a checkpoint; :func:`remove_stale_temporaries` deletes what a killed writer left behind;
* :func:`load_checkpoint` loads with ``weights_only=True`` (no pickled code) and fails with one line;
* :class:`TrainingFolderLock` lets one process at a time train in a folder (``OUT/.lock`` names the
  holder's pid and host); a lock left by a dead process is taken over with a message;
* :func:`truncate_log` drops ``log.jsonl`` lines written after the checkpoint a run resumes from, so no
  step is logged twice;
* with ``TrainConfig.keep_last = K`` the folder also keeps the weights of its last ``K`` saves as
  ``step-NNNNNNN.pt`` (:func:`snapshot_path`, :func:`snapshots`, :func:`prune_snapshots`), for checkpoint
  averaging (:mod:`g2gt.core.average`).
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import time
from pathlib import Path
from typing import Any, ClassVar

from ..errors import Error

_log = logging.getLogger("g2gt")

__all__ = ["CheckpointError", "TrainingFolderLocked", "CHECKPOINT_KINDS", "checkpoint_kind", "expect_kind", "TrainingFolderLock", "save_atomic", "load_checkpoint",
           "resolve_checkpoint", "remove_stale_temporaries", "truncate_log", "LOCK_NAME", "snapshot_path",
           "snapshots", "prune_snapshots"]

LOCK_NAME = ".lock"
_TMP = re.compile(r"^\..+\.tmp\d+$")
_SNAPSHOT = re.compile(r"^step-(\d+)\.pt$")


class CheckpointError(Error):
    """A file that is not a readable g2gt checkpoint (empty, truncated, not torch, ...), or one of another kind
    than the one asked for (a segmenter where a parser is expected)."""


class TrainingFolderLocked(Error, RuntimeError):
    """Another live process is training in this folder."""


# ---------------------------------------------------------------------------- checkpoint kinds
#: every kind of g2gt checkpoint -> how a message names it (``ck["task"]["kind"]``; one noun per stage)
CHECKPOINT_KINDS = {
    "parser": "a parser (g2gt train parser)",
    "segmenter": "a segmenter, the tokenizer and sentence splitter (g2gt train segmenter)",
    "enhancer": "an enhancer, the enhanced-UD stage (g2gt train enhancer)",
    "seq2seq": "a translation model (g2gt train seq2seq)",
    "mwt_expander": "a multiword-token expander (trained inside g2gt train segmenter)",
    "coref": "a coreference stage (g2gt train coref)",
    "lemmatizer": "a character lemmatizer (g2gt train lemmatizer)",
}


def checkpoint_kind(ck: dict) -> str | None:
    """The kind of a loaded checkpoint: ``ck["task"]["kind"]`` (or a top-level ``ck["kind"]``), else None."""
    task = ck.get("task") if isinstance(ck.get("task"), dict) else {}
    kind = task.get("kind") or ck.get("kind")
    return kind if isinstance(kind, str) else None


def expect_kind(ck: dict, path: str | os.PathLike, kind: str) -> None:
    """Raise :class:`CheckpointError` naming ``path`` and what it holds unless ``ck`` is a ``kind`` checkpoint
    (:func:`checkpoint_kind`)."""
    found = checkpoint_kind(ck)
    if found == kind:
        return
    what = (CHECKPOINT_KINDS.get(found, f"a {found!r} model") if found else
            "no kind this version knows (no kind recorded and not recognised)")
    article = "an" if kind[0] in "aeiou" else "a"
    raise CheckpointError(f"{path}: not {article} {kind} checkpoint: it holds {what}; expected "
                          f"{CHECKPOINT_KINDS.get(kind, kind)} (a model folder holds one file per stage: "
                          "segmenter.pt, parser.pt, enhancer.pt, coref.pt)")


# ---------------------------------------------------------------------------- checkpoints
def save_atomic(obj: Any, path: str | os.PathLike) -> None:
    """``torch.save`` to ``.NAME.tmpPID`` in the same folder, fsync, then rename over ``path``."""
    import torch

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def load_checkpoint(path: str | os.PathLike, map_location: Any = "cpu") -> dict:
    """Load a checkpoint file with ``weights_only=True``.

    ``map_location`` may be ``"auto"`` (:func:`g2gt.core.runtime.resolve_device`). Raises ``FileNotFoundError``
    (no such file), :class:`g2gt.core.runtime.DeviceError` (a ``RuntimeError``: ``map_location`` is not a
    device, or a CUDA device this machine lacks) or :class:`CheckpointError` (a folder, an empty / truncated /
    foreign file).
    """
    import torch

    from .runtime import DeviceError, resolve_device

    if isinstance(map_location, (str, torch.device)):
        try:
            map_location = resolve_device(map_location)  # "auto" read here
        except DeviceError as e:
            raise DeviceError(f"cannot load {path}: {e}") from None
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"checkpoint not found: {path}")
    if path.is_dir():
        raise CheckpointError(f"{path}: is a folder, expected a checkpoint file (or use resolve_checkpoint)")
    if path.stat().st_size == 0:
        raise CheckpointError(f"{path}: not a readable g2gt checkpoint (the file is empty); give a model's name, a "
                              "model or training folder, or a .pt file that g2gt wrote")
    try:
        state = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as e:
        raise CheckpointError(f"{path}: not a readable g2gt checkpoint ({_load_failure(path, e)}); give a model's "
                              "name, a model or training folder, or a .pt file that g2gt wrote") from e
    if not isinstance(state, dict):
        raise CheckpointError(f"{path}: not a g2gt checkpoint (holds a {type(state).__name__}, expected a dict)")
    return state


def _load_failure(path: Path, e: Exception) -> str:
    """Why ``torch.load`` failed, in words that never suggest loading a file unsafely."""
    import zipfile

    if not zipfile.is_zipfile(path):
        return "not a torch checkpoint: not the zip archive torch.save writes"
    if "weights_only" in str(e) or "Unsupported global" in str(e):
        return "it holds objects other than tensors and plain values, which g2gt never loads"
    return "truncated or damaged" if isinstance(e, (EOFError, RuntimeError)) else type(e).__name__


def resolve_checkpoint(path: str | os.PathLike, names: tuple[str, ...] = ("best.pt", "last.pt")) -> Path:
    """A checkpoint file, or a training folder -> its first existing ``names`` (``best.pt``, else ``last.pt``)."""
    p = Path(path)
    if not p.is_dir():
        if not p.exists():
            raise FileNotFoundError(f"{p}: no such checkpoint file or training folder")
        return p
    for name in names:
        if (p / name).exists():
            return p / name
    raise FileNotFoundError(f"{p}: no {' or '.join(names)} in this folder (is it a training --out folder?)")


def remove_stale_temporaries(folder: str | os.PathLike) -> list[Path]:
    """Delete ``.NAME.tmpPID`` files that :func:`save_atomic` left when its process was killed mid-write.
    Call it only while holding the folder's lock (no live writer then). Returns the removed paths."""
    folder = Path(folder)
    removed = []
    if folder.is_dir():
        for p in sorted(folder.iterdir()):
            if _TMP.match(p.name) and p.is_file():
                p.unlink()
                removed.append(p)
    return removed


def read_log(path: str | os.PathLike) -> list[dict]:
    """The entries of a training folder's JSON-lines ``log.jsonl`` (all runs, resumed ones included); lines
    that are not a JSON object (a line torn by a kill) are skipped. ``[]`` when there is no log."""
    path = Path(path)
    if not path.is_file():
        return []
    entries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(entry, dict):
            entries.append(entry)
    return entries


def truncate_log(path: str | os.PathLike, step: int) -> int:
    """Keep the lines of a JSON-lines log whose ``"step"`` is ``<= step`` (and drop a torn last line).

    A run resumed from the checkpoint of update ``step`` re-does the updates after it, so their old log lines
    must go. Rewrites the file atomically; returns the number of lines dropped.
    """
    path = Path(path)
    if not path.exists():
        return 0
    keep, dropped = [], 0
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            dropped += 1  # a line torn by a kill
            continue
        if isinstance(entry, dict) and entry.get("step", 0) > step:
            dropped += 1
        else:
            keep.append(line)
    if dropped:
        tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
        tmp.write_text("".join(line + "\n" for line in keep), encoding="utf-8")
        os.replace(tmp, path)
    return dropped


# ---------------------------------------------------------------------------- step snapshots
def snapshot_path(folder: str | os.PathLike, step: int) -> Path:
    """``folder/step-NNNNNNN.pt``: the weights saved at update ``step`` (``TrainConfig.keep_last``)."""
    return Path(folder) / f"step-{step:07d}.pt"


def snapshots(folder: str | os.PathLike) -> list[tuple[int, Path]]:
    """The ``(step, path)`` of every step snapshot in ``folder``, oldest first."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in folder.iterdir() if (m := _SNAPSHOT.match(p.name)) and p.is_file()]
    return sorted(found)


def prune_snapshots(folder: str | os.PathLike, keep: int, after: int | None = None) -> list[Path]:
    """Delete step snapshots of updates later than ``after`` (a run resumed from that update writes them
    again), then all but the newest ``keep`` (0 = none kept). Returns the removed paths."""
    found = snapshots(folder)
    doomed = [p for s, p in found if after is not None and s > after]
    kept = [p for s, p in found if p not in doomed]
    doomed += kept[: max(len(kept) - keep, 0)]
    for p in doomed:
        p.unlink(missing_ok=True)
    return doomed


# ---------------------------------------------------------------------------- folder lock
def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    except OSError:
        return False
    return True


def _describe(holder: dict) -> str:
    since = holder.get("started")
    when = time.strftime(" since %Y-%m-%d %H:%M:%S", time.localtime(since)) if isinstance(since, (int, float)) else ""
    return f"pid {holder.get('pid', '?')} on host {holder.get('host', '?')}{when}"


class TrainingFolderLock:
    """Exclusive use of a training folder by one process: ``with TrainingFolderLock(out): ...``.

    ``OUT/.lock`` holds ``{"pid", "host", "started"}`` of the holder. On POSIX the file is also held with
    ``fcntl.flock``, which the OS releases when the process dies (even by SIGKILL): a lock file whose flock is
    free is stale and is taken over, with a message on stderr naming the dead holder. Without ``fcntl`` the
    holder's pid is checked instead (on the same host). A second process gets :class:`TrainingFolderLocked`
    naming the holder. The lock is re-entrant within one process (nested ``with`` blocks share it) and is
    released (file removed) when the outermost block exits.
    """

    _held: ClassVar[dict[str, list]] = {}  # resolved folder -> [fd or None, depth]

    def __init__(self, folder: str | os.PathLike) -> None:
        self.folder = Path(folder)
        self.path = self.folder / LOCK_NAME

    def _key(self) -> str:
        return str(self.folder.resolve())

    def acquire(self) -> TrainingFolderLock:
        key = self._key()
        if key in self._held:
            self._held[key][1] += 1
            return self
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = self._acquire_flock() if _has_flock() else self._acquire_exclusive()
        self._held[key] = [fd, 1]
        return self

    def release(self) -> None:
        key = self._key()
        entry = self._held.get(key)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] > 0:
            return
        del self._held[key]
        fd = entry[0]
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass
        if fd is not None:
            os.close(fd)  # releases the flock

    def __enter__(self) -> TrainingFolderLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()

    # ---- implementation
    def _me(self) -> str:
        return json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "started": time.time()})

    def _read(self) -> dict:
        try:
            d = json.loads(self.path.read_text(encoding="utf-8") or "{}")
            return d if isinstance(d, dict) else {}
        except (OSError, ValueError):
            return {}

    def _locked_error(self, holder: dict) -> TrainingFolderLocked:
        return TrainingFolderLocked(
            f"{self.folder} is in use by another training run ({_describe(holder)}; lock file {self.path}). "
            "Wait for it to finish, stop it, or train into another --out folder.")

    def _stale_message(self, holder: dict) -> None:
        if holder.get("pid") not in (None, os.getpid()):
            _log.warning("taking over the stale lock of %s left by %s, which is no longer running", self.folder,
                         _describe(holder))

    def _acquire_flock(self) -> int:
        import fcntl

        for _ in range(10):
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                raise self._locked_error(self._read()) from None
            try:  # the holder may have removed the file between our open and flock: lock the file in place
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if not same:
                os.close(fd)
                continue
            self._stale_message(self._read())
            os.ftruncate(fd, 0)
            os.write(fd, self._me().encode())
            os.fsync(fd)
            return fd
        raise TrainingFolderLocked(f"{self.path}: could not lock the folder (it keeps changing)")

    def _acquire_exclusive(self) -> None:
        for _ in range(10):
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                holder = self._read()
                pid = holder.get("pid")
                if holder.get("host") == socket.gethostname() and isinstance(pid, int) and not _pid_alive(pid):
                    self._stale_message(holder)
                    self.path.unlink(missing_ok=True)
                    continue
                raise self._locked_error(holder) from None
            with os.fdopen(fd, "w") as f:
                f.write(self._me())
            return
        raise TrainingFolderLocked(f"{self.path}: could not lock the folder (it keeps changing)")


def main_process_lock(folder: str | os.PathLike):
    """``folder``'s :class:`TrainingFolderLock` in the main process of a run (``RANK`` unset or 0: a single
    process, or rank 0 under torchrun), a no-op context in the other ranks (the Trainer checks them)."""
    import contextlib

    return TrainingFolderLock(folder) if os.environ.get("RANK", "0") == "0" else contextlib.nullcontext()


def holds_training_folder(fn):
    """Decorator for ``train_*(..., out_dir, ...)`` functions: the whole call (reading ``last.pt`` to resume,
    writing ``config.json``, training) holds ``out_dir``'s lock, so a second run on the same folder stops
    before it touches anything (:class:`TrainingFolderLocked`)."""
    import functools
    import inspect

    sig = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with main_process_lock(sig.bind_partial(*args, **kwargs).arguments["out_dir"]):
            return fn(*args, **kwargs)

    return wrapper


def _has_flock() -> bool:
    try:
        import fcntl  # noqa: F401
    except ImportError:  # pragma: no cover - Windows
        return False
    return True
