"""State dicts on disk: safetensors (the ``safetensors`` package's numpy API), ``.npz``, and
PyTorch checkpoints (when torch is installed). All load as ``{name: numpy.ndarray}``."""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["load_npz", "load_safetensors", "load_torch_state_dict", "save_npz",
           "save_safetensors"]

PathLike = str | os.PathLike[str]


def _arrays(state_dict: Mapping[str, Any]) -> dict[str, np.ndarray]:
    return {key: np.asarray(value, order="C") for key, value in state_dict.items()}


def save_safetensors(state_dict: Mapping[str, Any], path: PathLike,
                     metadata: dict[str, str] | None = None) -> None:
    """Write ``state_dict`` as a ``.safetensors`` file.

    Raises:
        ModuleNotFoundError: the ``safetensors`` package is not installed.
    """
    from safetensors.numpy import save_file

    save_file(_arrays(state_dict), os.fspath(path), metadata=metadata)


def load_safetensors(path: PathLike) -> OrderedDict[str, np.ndarray]:
    """Read a ``.safetensors`` file (for example a Hugging Face ``model.safetensors``).

    Raises:
        ModuleNotFoundError: the ``safetensors`` package is not installed.
        FileNotFoundError: no file at ``path``.
    """
    from safetensors.numpy import load_file

    if not os.path.isfile(path):
        raise FileNotFoundError(f"no safetensors file at {os.fspath(path)!r}")
    return OrderedDict(load_file(os.fspath(path)))


def save_npz(state_dict: Mapping[str, Any], path: PathLike) -> None:
    """Write ``state_dict`` as an uncompressed ``.npz`` archive keyed by parameter name.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "w.npz")
    >>> save_npz({"fc.weight": np.ones((2, 2), np.float32)}, path)
    >>> list(load_npz(path))
    ['fc.weight']
    """
    with open(path, "wb") as file:
        np.savez(file, **_arrays(state_dict))  # type: ignore[arg-type]


def load_npz(path: PathLike) -> OrderedDict[str, np.ndarray]:
    """Read an ``.npz`` archive written by ``save_npz`` (or ``numpy.savez``).

    Raises:
        FileNotFoundError: no file at ``path``.
    """
    with np.load(path, allow_pickle=False) as archive:
        return OrderedDict((key, archive[key]) for key in archive.files)


def load_torch_state_dict(path: PathLike) -> OrderedDict[str, np.ndarray]:
    """Read a PyTorch checkpoint saved with ``torch.save(model.state_dict(), path)``
    (tensors only, loaded with ``weights_only=True``); bfloat16 becomes float32.

    Raises:
        ModuleNotFoundError: torch is not installed (``pip install torch==2.13.0``).
        TypeError: the checkpoint is not a mapping of names to tensors.
    """
    import torch

    state = torch.load(os.fspath(path), map_location="cpu", weights_only=True)
    if not isinstance(state, Mapping):
        raise TypeError(f"expected a state dict (a mapping of names to tensors) in "
                        f"{os.fspath(path)!r}, got {type(state).__name__}")
    out: OrderedDict[str, np.ndarray] = OrderedDict()
    for key, value in state.items():
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"state dict entry {key!r} in {os.fspath(path)!r} is a "
                            f"{type(value).__name__}, expected a tensor")
        tensor = value.detach().cpu()
        out[key] = (tensor.float() if tensor.dtype == torch.bfloat16 else tensor).numpy()
    return out
