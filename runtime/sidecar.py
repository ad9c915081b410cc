"""Sidecar weights: a model whose weights live in a file next to it (``model.weights``)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from .errors import ModelFormatError
from .metadata import Sidecar


def read_sidecar(sidecar: Sidecar, model_path: str | os.PathLike[str] | None,
                 weights: str | os.PathLike[str] | bytes | None = None) -> bytes:
    """The weight bytes, from ``weights`` (a path or bytes) or else from the file the
    metadata names in the model's directory, checked against its size and SHA-256.

    Raises:
        ModelFormatError: no file can be found, or its size or hash differ from the metadata.
    """
    if isinstance(weights, (bytes, bytearray)):
        data, where = bytes(weights), "the weights given"
    else:
        if weights is not None:
            path = Path(weights)
        elif model_path is not None:
            path = Path(model_path).parent / sidecar.file
        else:
            raise ModelFormatError(f"the model keeps its weights in a sidecar file "
                                   f"{sidecar.file!r}; load it from its path or pass weights=")
        if not path.is_file():
            raise ModelFormatError(f"sidecar weights file {str(path)!r} does not exist")
        return _checked(_read(path, sidecar), repr(str(path)), sidecar)
    return _checked(data, where, sidecar)


def _size_error(where: str, size: int, sidecar: Sidecar) -> ModelFormatError:
    return ModelFormatError(f"sidecar weights {where} have {size} bytes; the model expects "
                            f"{sidecar.bytes}")


def _read(path: Path, sidecar: Sidecar) -> bytes:
    """The file's bytes, its size checked before reading: at most what the metadata says."""
    size = path.stat().st_size
    if size != sidecar.bytes:
        raise _size_error(repr(str(path)), size, sidecar)
    with path.open("rb") as file:
        return file.read(sidecar.bytes)


def _checked(data: bytes, where: str, sidecar: Sidecar) -> bytes:
    if len(data) != sidecar.bytes:
        raise _size_error(where, len(data), sidecar)
    if hashlib.sha256(data).hexdigest() != sidecar.sha256:
        raise ModelFormatError(f"sidecar weights {where} do not match the model (SHA-256 "
                               "differs): they belong to another export")
    return data
