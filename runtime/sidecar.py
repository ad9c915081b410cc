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
        data, where = path.read_bytes(), repr(str(path))
    if len(data) != sidecar.bytes:
        raise ModelFormatError(f"sidecar weights {where} have {len(data)} bytes; the model "
                               f"expects {sidecar.bytes}")
    if hashlib.sha256(data).hexdigest() != sidecar.sha256:
        raise ModelFormatError(f"sidecar weights {where} do not match the model (SHA-256 "
                               "differs): they belong to another export")
    return data
