"""Path resolution confined to a directory fd: the capability check behind every ``path_*`` call.

A guest path is walked one component at a time with ``openat``-style calls relative to host
directory fds, never handed whole to the host. ``..`` pops our own stack of opened
directories (so it cannot climb above the starting directory), symlinks are read and
expanded here (absolute targets are refused), and the final component is acted on with
``dir_fd=`` and without following links. Whatever the path says, the host only ever touches
entries below the preopen.
"""

from __future__ import annotations

import errno as os_errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from .errno import Errno, WasiError

MAX_SYMLINKS = 40  # Linux's limit: a longer chain is ELOOP


@dataclass(frozen=True)
class Resolved:
    """Where a path leads: entry ``name`` (one component, or ``"."`` for the directory
    itself) inside host directory fd ``parent``, valid until the ``resolve`` block exits."""

    parent: int
    name: str
    trailing_slash: bool


def _components(path: str) -> list[str]:
    return [c for c in path.split("/") if c]


def check_path(path: str) -> None:
    """Refuse what can never name an entry inside a directory fd.

    Raises:
        WasiError: ``ENOENT`` for an empty path, ``EINVAL`` for a NUL byte, ``ENOTCAPABLE``
            for an absolute path.
    """
    if not path:
        raise WasiError(Errno.ENOENT, "empty path")
    if "\0" in path:
        raise WasiError(Errno.EINVAL, f"path {path!r} contains NUL")
    if path.startswith("/"):
        raise WasiError(Errno.ENOTCAPABLE, f"absolute path {path!r} outside the sandbox")


def _readlink(name: str, parent: int) -> str | None:
    try:
        return os.readlink(name, dir_fd=parent)
    except OSError as error:
        if error.errno in (os_errno.EINVAL, os_errno.ENOENT):
            return None  # not a link, or nothing there yet
        raise


@contextmanager
def resolve(root: int, path: str, follow: bool) -> Iterator[Resolved]:
    """Resolve guest ``path`` below host directory fd ``root`` (which stays open).

    ``follow``: expand a symlink in the last component too (intermediate ones always are).
    A trailing slash requires an existing final entry to be a directory (not a link to one).

    Raises:
        WasiError: ``ENOTCAPABLE`` for a path or link that leaves ``root``, ``ELOOP`` for too
            many links, ``ENOTDIR`` for a trailing slash on a non-directory, and see
            ``check_path``; host ``OSError`` (``ENOENT``, ``ENOTDIR``) propagates.
    """
    check_path(path)
    trailing = path.endswith("/")
    pending = _components(path)
    stack = [root]
    name = "."
    links = 0
    try:
        while pending:
            part = pending.pop(0)
            last = not pending
            name = "."
            if part == ".":
                continue
            if part == "..":
                if len(stack) == 1:
                    raise WasiError(Errno.ENOTCAPABLE, f"path {path!r} leaves its directory")
                os.close(stack.pop())
                continue
            target = _readlink(part, stack[-1]) if not last or follow else None
            if target is not None:
                links += 1
                if links > MAX_SYMLINKS:
                    raise WasiError(Errno.ELOOP, f"too many symlinks in {path!r}")
                if target.startswith("/"):
                    raise WasiError(Errno.ENOTCAPABLE,
                                    f"symlink {part!r} in {path!r} points outside: {target!r}")
                trailing = trailing or (last and target.endswith("/"))
                pending = _components(target) + pending
                continue
            if last:
                name = part
                break
            stack.append(os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
                                 | os.O_CLOEXEC, dir_fd=stack[-1]))
        if trailing and name != ".":
            _require_directory(name, stack[-1])
        yield Resolved(stack[-1], name, trailing)
    finally:
        for fd in stack[1:]:
            os.close(fd)


def _require_directory(name: str, parent: int) -> None:
    try:
        mode = os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(mode):
        raise WasiError(Errno.ENOTDIR, f"{name!r} is not a directory but the path ends in '/'")
