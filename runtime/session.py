"""Model sessions: load a ``.wasm`` model, then numpy in, numpy out."""

from __future__ import annotations

import os
import threading
import warnings
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import wasmtime

import wasm_kernels
from wasi_intrinsics.kernels import provider as host_kernels
from wasi_intrinsics.wasi import MODULE as WASI_MODULE
from wasi_intrinsics.wasi import WasiConfig, WasiState, preview1
from wasm_kernels.wasm import Limits as WasmLimits
from wasm_kernels.wasm import MemoryType

from . import metadata as md
from .compartment import Compartment, Limits, parse_size
from .errors import LimitExceeded, ModelFormatError, Trap
from .linker import RegistryResolver, Resolved, instance_exports

KERNEL_CHOICES = ("auto", "host") + wasm_kernels.ISAS
PAGE = 65536


def _read_model(model: str | os.PathLike[str] | bytes) -> bytes:
    if isinstance(model, (bytes, bytearray, memoryview)):
        return bytes(model)
    if isinstance(model, (str, os.PathLike)):
        path = Path(model)
        if not path.is_file():
            raise FileNotFoundError(f"model file {str(path)!r} does not exist")
        return path.read_bytes()
    raise TypeError(f"expected a path or bytes for the model, got {type(model).__name__}")


class Session:
    """A loaded model in its own sandboxed compartment. ``run`` is safe to call from several
    threads (calls are serialised); use ``close()`` or ``with`` to release it."""

    def __init__(self, wasm: bytes, limits: Limits, kernels: str = "auto"):
        if kernels not in KERNEL_CHOICES:
            raise ValueError(f"unknown kernels {kernels!r}; available: {list(KERNEL_CHOICES)}")
        self._lock = threading.Lock()
        self.compartment = Compartment(limits)
        module, info = self.compartment.compile(wasm)
        self.metadata = md.parse(info.custom(md.SECTION))
        if self.metadata.abi_module != wasm_kernels.abi.MODULE:
            raise ModelFormatError(
                f"the model imports kernels from {self.metadata.abi_module!r}, but this "
                f"runtime provides {wasm_kernels.abi.MODULE!r}; re-export the model")
        store = self.compartment.store
        declared = next((i.type for i in info.imports
                         if (i.module, i.name) == ("env", "memory")
                         and isinstance(i.type, MemoryType)), None)
        if declared is None:
            raise ModelFormatError("the model does not import its memory as 'env.memory'")
        pages = max(declared.limits.min, -(-self.metadata.memory_bytes // PAGE))
        if pages * PAGE > limits.max_memory:
            raise LimitExceeded("memory", f"the model needs {pages * PAGE} bytes of memory, "
                                f"over the limit of {limits.max_memory} bytes")
        memory_type = MemoryType(WasmLimits(pages))
        self._memory = wasmtime.Memory(store, wasmtime.MemoryType(wasmtime.Limits(pages, None)))
        self._stderr = WasiConfig().stderr
        registry = RegistryResolver()
        registry.register("env", {"memory": Resolved(self._memory, memory_type)})
        registry.register(WASI_MODULE, preview1().instantiate(
            store, WasiState(WasiConfig(stderr=self._stderr))))
        registry.register(wasm_kernels.abi.MODULE, self._kernels(kernels, registry))
        instance = self.compartment.instantiate(module, info, registry)
        exports = instance.exports(store)
        if self.metadata.entry not in exports:
            raise ModelFormatError(f"the model has no {self.metadata.entry!r} export")
        self._entry = exports[self.metadata.entry]
        self._closed = False

    def _kernels(self, choice: str, registry: RegistryResolver) -> Any:
        store = self.compartment.store
        if choice == "host":
            return host_kernels().instantiate(store, memory=self._memory)
        isa = "relaxed" if choice == "auto" else choice
        module, info = self.compartment.compile(wasm_kernels.build(isa))
        instance = self.compartment.instantiate(module, info, registry)
        return instance_exports(store, instance, info)

    @property
    def inputs(self) -> tuple[md.TensorInfo, ...]:
        """Input names, dtypes and shapes (symbolic dims by name)."""
        return self.metadata.inputs

    @property
    def outputs(self) -> tuple[md.TensorInfo, ...]:
        """Output names, dtypes and shapes (symbolic dims by name)."""
        return self.metadata.outputs

    def _view(self) -> np.ndarray:
        store = self.compartment.store
        return np.ctypeslib.as_array(self._memory.data_ptr(store),
                                     shape=(self._memory.data_len(store),))

    def _bind(self, inputs: Mapping[str, Any] | np.ndarray) -> tuple[dict[str, np.ndarray],
                                                                     dict[str, int]]:
        if isinstance(inputs, np.ndarray):
            if len(self.inputs) != 1:
                raise TypeError(f"the model has {len(self.inputs)} inputs "
                                f"{[t.name for t in self.inputs]}; pass a dict")
            inputs = {self.inputs[0].name: inputs}
        if not isinstance(inputs, Mapping):
            raise TypeError(f"expected a dict of ndarrays or one ndarray, "
                            f"got {type(inputs).__name__}")
        expected = [t.name for t in self.inputs]
        missing = [n for n in expected if n not in inputs]
        extra = [n for n in inputs if n not in expected]
        if missing or extra:
            raise ValueError(f"inputs do not match the model: missing {missing}, unexpected "
                             f"{extra}; expected {expected}")
        arrays: dict[str, np.ndarray] = {}
        dims: dict[str, int] = {}
        ranges = {d.name: d for d in self.metadata.dims}
        for info in self.inputs:
            array = inputs[info.name]
            if not isinstance(array, np.ndarray):
                raise TypeError(f"input {info.name!r}: expected an ndarray, "
                                f"got {type(array).__name__}")
            if array.dtype != info.dtype:
                if not np.can_cast(array.dtype, info.dtype, casting="same_kind"):
                    raise TypeError(f"input {info.name!r}: expected dtype {info.dtype}, got "
                                    f"{array.dtype} (no safe conversion)")
                warnings.warn(f"input {info.name!r}: converting {array.dtype} to {info.dtype}",
                              stacklevel=3)
            if array.ndim != len(info.shape):
                raise ValueError(f"input {info.name!r}: expected rank {len(info.shape)} "
                                 f"shape {list(info.shape)}, got shape {list(array.shape)}")
            for axis, (want, got) in enumerate(zip(info.shape, array.shape)):
                if isinstance(want, int):
                    if want != got:
                        raise ValueError(f"input {info.name!r}: axis {axis} must be {want}, "
                                         f"got {got} (shape {list(array.shape)})")
                    continue
                dim = ranges[want]
                if not dim.min <= got <= dim.max:
                    raise ValueError(f"input {info.name!r}: axis {axis} ({want!r}) is {got}, "
                                     f"outside the model's range [{dim.min}, {dim.max}]")
                if dims.setdefault(want, got) != got:
                    raise ValueError(f"input {info.name!r}: axis {axis} ({want!r}) is {got}, "
                                     f"but another input set {want!r} = {dims[want]}")
            arrays[info.name] = array
        unbound = [d.name for d in self.metadata.dims if d.name not in dims]
        if unbound:
            raise ModelFormatError(f"model metadata: dims {unbound} appear in no input shape")
        return arrays, dims

    def run(self, inputs: Mapping[str, Any] | np.ndarray) -> dict[str, np.ndarray]:
        """Run the model: ``{name: ndarray}`` (or one ndarray) in, ``{name: ndarray}`` out.

        Raises:
            TypeError: an input is not an ndarray, or its dtype cannot be converted safely.
            ValueError: missing or unexpected inputs, or a shape the model does not accept.
            Trap: the model trapped, or a limit (``LimitExceeded``) was hit.
        """
        arrays, dims = self._bind(inputs)
        with self._lock:
            if self._closed:
                raise RuntimeError("the session is closed")
            memory = self._view()
            for info in self.inputs:
                target = memory[info.offset:info.offset + info.nbytes(dims)]
                np.copyto(target.view(info.dtype).reshape(info.resolve(dims)),
                          arrays[info.name], casting="same_kind")
            args = [dims[d.name] for d in self.metadata.dims]
            status = self.compartment.call(self._entry, self.compartment.store, *args)
            if status != 0:
                message = self._stderr.getvalue().decode(errors="replace").strip()
                self._stderr.seek(0)
                self._stderr.truncate()
                raise Trap("rejected", f"the model rejected its inputs (status {status}): "
                           f"{message or 'no message'}")
            memory = self._view()
            return {info.name: memory[info.offset:info.offset + info.nbytes(dims)]
                    .view(info.dtype).reshape(info.resolve(dims)).copy()
                    for info in self.outputs}

    def close(self) -> None:
        """Release the compartment; further ``run`` calls raise."""
        with self._lock:
            self._closed = True

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def load(model: str | os.PathLike[str] | bytes, *, max_memory: int | str = Limits.max_memory,
         timeout: float | None = None, fuel: int | None = None,
         kernels: str = "auto") -> Session:
    """Load a ``.wasm`` model into a new sandboxed session.

    Args:
        model: a path to a ``.wasm`` file, or its bytes.
        max_memory: the memory cap, in bytes or as text such as ``"64MiB"``.
        timeout: wall-clock seconds allowed per ``run`` call (``None``: no limit).
        fuel: wasm instructions allowed per ``run`` call (``None``: no limit).
        kernels: ``"auto"`` (relaxed SIMD), ``"simd128"``, ``"scalar"``, or ``"host"`` (numpy).

    Raises:
        FileNotFoundError: the path does not exist.
        ModelFormatError: the bytes are not a valid wasmnn model.
        LinkError: the model imports something the runtime does not provide.
        LimitExceeded: the model needs more memory than ``max_memory``.
    """
    limits = Limits(max_memory=parse_size(max_memory), timeout=timeout, fuel=fuel)
    return Session(_read_model(model), limits, kernels)
