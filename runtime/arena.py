"""Where one instance's inputs and outputs live for the dims of a call.

A model with fixed shapes keeps them at the offsets its metadata gives. A model whose
memory follows its dims exports a ``layout`` function (see ``metadata``): called with the
dims, it grows memory to what they need and writes the tensors' addresses. It runs once per
instance and dims (memory never shrinks, so the answer stays valid), before the inputs are
written, so a call whose dims need more memory than the instance may have fails before it
runs, naming the dims and the bytes they need.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import metadata as md
from .compartment import Compartment
from .errors import LimitExceeded, ModelFormatError


class Addresses:
    """The byte address of every input and output of one instance, per dims."""

    def __init__(self, metadata: md.ModelMetadata, compartment: Compartment, exports: Any,
                 memory_view: Callable[[], np.ndarray]):
        """``memory_view`` gives the instance's memory as it is now.

        Raises:
            ModelFormatError: the metadata names a layout export the model lacks.
        """
        self._metadata = metadata
        self._compartment = compartment
        self._memory_view = memory_view
        self._layout = None
        if metadata.layout is not None:
            self._layout = exports.get(metadata.layout.entry)
            if self._layout is None:
                raise ModelFormatError(f"the model has no {metadata.layout.entry!r} export "
                                       "(its metadata names it as the layout function)")
        fixed = {t.name: t.offset for t in metadata.inputs + metadata.outputs}
        self._known: dict[tuple[int, ...], dict[str, int]] = {(): fixed}

    def __call__(self, dims: dict[str, int]) -> dict[str, int]:
        """The addresses for ``dims`` (memory may grow: views taken before are stale).

        Raises:
            LimitExceeded: the dims need more memory than this instance may have.
            ModelFormatError: the model placed a tensor outside its memory.
            Trap: the layout function trapped.
        """
        key = tuple(dims[d.name] for d in self._metadata.dims) if self._layout else ()
        known = self._known.get(key)
        if known is not None:
            return known
        assert self._layout is not None and self._metadata.layout is not None
        store = self._compartment.store
        status = self._compartment.call(self._layout, store, *key)
        memory = self._memory_view()
        need = int(memory[self._metadata.layout.need_at:][:4].view("<u4")[0])
        if status != 0:
            limit = self._compartment.shares.memory_bytes
            raise LimitExceeded("memory", f"the dims {dims} need {need} bytes of memory, over "
                                f"the limit of {limit} bytes (max_memory="
                                f"{self._compartment.limits.max_memory}); lower the dims or "
                                "raise max_memory")
        addresses = {}
        for tensor in self._metadata.inputs + self._metadata.outputs:
            address = tensor.offset
            if tensor.offset_at is not None:
                address = int(memory[tensor.offset_at:][:4].view("<u4")[0])
            if address + tensor.nbytes(dims) > len(memory):
                raise ModelFormatError(f"the model's layout puts tensor {tensor.name!r} at "
                                       f"[{address}, {address + tensor.nbytes(dims)}), outside "
                                       f"its {len(memory)} bytes of memory")
            addresses[tensor.name] = address
        self._known[key] = addresses
        return addresses
