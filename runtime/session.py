"""Model sessions: load a ``.wasm`` model, then numpy in, numpy out, from any thread."""

from __future__ import annotations

import functools
import hashlib
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

import wasm_kernels
from wasm_kernels.wasm import FuncType, MemoryType, ModuleInfo, read_module

from . import cache, data_segments
from . import metadata as md
from .compartment import Compartment, ResourceLimits, parse_size
from .errors import LimitExceeded, ModelFormatError, Trap
from .merge import imported_kernels, threaded
from .pool import PAGE, Blueprint, Compiled, InstancePool, ModelInstance
from .run_plan import Planner
from .sidecar import read_sidecar
from .threads import (
    FEATURES,
    check_threads,
    compile_worker,
    opt_level,
    weights_bytes,
)

KERNEL_CHOICES = ("auto", "host") + wasm_kernels.ISA_NAMES
Inputs = Mapping[str, Any] | np.ndarray


def _read_model(model: str | os.PathLike[str] | bytes) -> bytes | Path:
    """The model's bytes, or its checked path (read by ``data_segments.split``)."""
    if isinstance(model, (bytes, bytearray, memoryview)):
        return bytes(model)
    if isinstance(model, (str, os.PathLike)):
        path = Path(model)
        if not path.is_file():
            raise FileNotFoundError(f"model file {str(path)!r} does not exist")
        return path
    raise TypeError(f"expected a path or bytes for the model, got {type(model).__name__}")


@functools.cache
def _kernel_wasm(isa: str, names: frozenset[str], own_memory: bool = False,
                 shared: bool = False) -> bytes:
    """The kernel module for ``isa`` with the kernels ``names`` only (defining the memory when
    ``own_memory``, importing a shared one when ``shared``), from the disk cache when this
    source already built it."""
    source = Path(wasm_kernels.__file__).parent
    subset = hashlib.sha256("\0".join(sorted(names)).encode()).hexdigest()[:16]
    suffix = "-memory" if own_memory else "-shared" if shared else ""
    return cache.generated_module(f"kernels-{isa}-{subset}{suffix}",
                                  cache.process_fingerprint(source),
                                  lambda: wasm_kernels.build(isa, names, own_memory, shared))


def compile_kernels(compartment: Compartment, isa: str, names: frozenset[str]
                    ) -> tuple[Compiled, ...]:
    """The kernel modules of ``isa`` holding the kernels ``names``: one per cranelift opt level
    they ask for (``wasm_kernels.opt_level``), each compiled at its level; the one at
    ``"none"`` defines the memory (see ``wasm_kernels.build``), the others import it (one
    thread; with several the kernels are merged into the model, ``runtime.merge``).

    Raises:
        ValueError: ``isa`` or a name is unknown.
    """
    groups = {level: frozenset(n for n in names if wasm_kernels.opt_level(n) == level)
              for level in wasm_kernels.OPT_LEVELS}
    return tuple(compartment.compile(_kernel_wasm(isa, group, level == "none"), level)
                 for level, group in groups.items() if group)


def _memory_pages(info_imports: Any, metadata: md.ModelMetadata, max_memory: int) -> int:
    declared = next((i.type for i in info_imports if (i.module, i.name) == ("env", "memory")
                     and isinstance(i.type, MemoryType)), None)
    if declared is None:
        raise ModelFormatError("the model does not import its memory as 'env.memory'")
    pages = max(declared.limits.min, -(-metadata.memory_bytes // PAGE))
    if pages * PAGE > max_memory:
        raise LimitExceeded("memory", f"the model needs {pages * PAGE} bytes of memory, "
                            f"over the limit of {max_memory} bytes")
    return pages


def _check_entry(info: ModuleInfo, metadata: md.ModelMetadata) -> None:
    """The entry point must be a function taking one ``i32`` per dim and returning ``i32``:
    a lying signature would otherwise fail inside wasmtime on the first run."""
    want = FuncType(("i32",) * len(metadata.dims), ("i32",))
    export = next((e for e in info.exports if e.name == metadata.entry), None)
    if export is None:
        raise ModelFormatError(f"the model has no {metadata.entry!r} export")
    if export.type != want:
        raise ModelFormatError(f"the model's {metadata.entry!r} export should be a function "
                               f"{want} (one i32 per dim {[d.name for d in metadata.dims]}), "
                               f"got {export.kind} {export.type}")


def bind(metadata: md.ModelMetadata, inputs: Inputs,
         stacklevel: int = 2) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """Check ``inputs`` against the model's inputs: the arrays by name, and each dim's value.

    A dtype that converts safely (``same_kind``, e.g. float64 to float32) is allowed with a
    warning naming the input; it is converted when copied into the model's memory.

    Raises:
        TypeError: not a dict or ndarray, an input is not an ndarray, or its dtype does not
            convert safely.
        ValueError: missing or unexpected inputs, or a shape the model does not accept.
    """
    expected = [t.name for t in metadata.inputs]
    if isinstance(inputs, np.ndarray):
        if len(expected) != 1:
            raise TypeError(f"the model has {len(expected)} inputs {expected}; pass a dict")
        inputs = {expected[0]: inputs}
    if not isinstance(inputs, Mapping):
        raise TypeError(f"expected a dict of ndarrays or one ndarray, "
                        f"got {type(inputs).__name__}")
    missing = [n for n in expected if n not in inputs]
    extra = [n for n in inputs if n not in expected]
    if missing or extra:
        raise ValueError(f"inputs do not match the model: missing {missing}, unexpected "
                         f"{extra}; expected {expected}")
    arrays: dict[str, np.ndarray] = {}
    dims: dict[str, int] = {}
    ranges = {d.name: d for d in metadata.dims}
    for info in metadata.inputs:
        array = inputs[info.name]
        if not isinstance(array, np.ndarray):
            raise TypeError(f"input {info.name!r}: expected an ndarray, "
                            f"got {type(array).__name__}")
        if array.dtype != info.dtype:
            if not np.can_cast(array.dtype, info.dtype, casting="same_kind"):
                raise TypeError(f"input {info.name!r}: expected dtype {info.dtype}, got "
                                f"{array.dtype} (no safe conversion)")
            warnings.warn(f"input {info.name!r}: converting {array.dtype} to {info.dtype}",
                          stacklevel=stacklevel + 1)
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
    unbound = [d.name for d in metadata.dims if d.name not in dims]
    if unbound:
        raise ModelFormatError(f"model metadata: dims {unbound} appear in no input shape")
    return arrays, dims


class Lease:
    """One instance of the model held by one thread until ``close()`` (or the end of its
    ``with`` block): successive ``run`` calls use the same instance, which makes zero-copy
    outputs (``copy=False``) possible. Not for sharing between threads."""

    def __init__(self, session: Session):
        self._session = session
        self._pool = session._pool
        self._instance: ModelInstance | None = None

    def run(self, inputs: Inputs, *, copy: bool = True) -> dict[str, np.ndarray]:
        """Run the model: ``{name: ndarray}`` (or one ndarray) in, ``{name: ndarray}`` out.

        Args:
            copy: ``False`` returns read-only views of the instance's linear memory instead
                of copies. A view stays safe to read for as long as you keep it (it keeps
                the instance's memory alive), but its values are only this run's until the
                next ``run`` on this lease, or until the lease is closed and the instance
                goes back to the pool. Copy what you keep (``np.array(view)``).

        Raises:
            TypeError: an input is not an ndarray, or its dtype cannot be converted safely.
            ValueError: missing or unexpected inputs, or a shape the model does not accept.
            Trap: the model trapped, or a limit (``LimitExceeded``) was hit. The instance is
                discarded (its memory may be half-written); the next run gets a fresh one.
            RuntimeError: the session is closed.
        """
        arrays, plan = self._session._planner.plan(inputs, stacklevel=3)
        if self._pool.closed:
            raise RuntimeError("the session is closed")
        if self._instance is None:
            self._instance = self._pool.acquire()
        instance = self._instance
        try:
            instance.views.current()
            targets, _ = instance.views.of(plan)
            for target, array in zip(targets, arrays):
                np.copyto(target, array, casting="same_kind")
            instance.call(plan.args)
        except Trap as trap:
            if trap.code != "rejected":
                self._drop(healthy=False)
            raise
        except BaseException:
            self._drop(healthy=False)
            raise
        instance.views.current()  # NOTE: re-read: the guest may have grown memory.
        _, views = instance.views.of(plan)
        infos = self._session.metadata.outputs
        if copy:
            return md.row_counted({t.name: view.copy() for t, view in zip(plan.outputs, views)},
                                  infos)
        outputs = {}
        for tensor, view in zip(plan.outputs, views):
            view = view.view()
            view.flags.writeable = False
            outputs[tensor.name] = view
        return md.row_counted(outputs, infos)

    def _drop(self, healthy: bool) -> None:
        if self._instance is not None:
            self._pool.release(self._instance, healthy)
            self._instance = None

    def close(self) -> None:
        """Give the instance back to the session's pool."""
        self._drop(healthy=True)

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Session:
    """A loaded model. ``run`` is safe to call from many threads at once: each call borrows
    an instance (its own sandboxed compartment) from a pool that grows lazily up to
    ``instances``. Use ``close()`` or ``with`` to release them."""

    def __init__(self, wasm: bytes | Path, limits: ResourceLimits, kernels: str = "auto", *,
                 instances: int | None = None,
                 model_path: str | os.PathLike[str] | None = None,
                 weights: str | os.PathLike[str] | bytes | None = None,
                 threads: int | str = "auto"):
        """Compile ``wasm``, check its metadata and create the first instance, so that a bad
        model fails here rather than on the first ``run``. Raises as ``load`` does."""
        if kernels not in KERNEL_CHOICES:
            raise ValueError(f"unknown kernels {kernels!r}; available: {list(KERNEL_CHOICES)}")
        size = instances if instances is not None else os.cpu_count() or 1
        check_threads(threads)
        self.limits = limits
        wasm, segments = data_segments.split(wasm)
        count = check_threads(threads, weights_bytes(wasm) if threads == "auto" else None)
        self.threads = 1 if kernels == "host" else count
        isa = "relaxed" if kernels == "auto" else kernels
        merged = (threaded(wasm, isa, lambda names: _kernel_wasm(isa, names, shared=True))
                  if self.threads > 1 else None)
        self.threads = self.threads if merged is not None else 1
        features = FEATURES if merged is not None else ()
        compartment = Compartment(limits, features)
        model = (compartment.compile(merged[0], opt_level(merged[1])) if merged is not None
                 else compartment.compile(wasm))
        self.metadata = md.parse(model[1].custom(md.SECTION))
        if self.metadata.abi_module != wasm_kernels.abi.MODULE:
            raise ModelFormatError(
                f"the model imports kernels from {self.metadata.abi_module!r}, but this "
                f"runtime provides {wasm_kernels.abi.MODULE!r}; re-export the model")
        _check_entry(model[1], self.metadata)
        # NOTE: a merged model defines the memory its source imports (runtime.merge)
        imports = read_module(wasm).imports if merged is not None else model[1].imports
        pages = _memory_pages(imports, self.metadata, limits.max_memory)
        kernel_modules: tuple[Compiled, ...] | None = None
        worker: Compiled | None = None
        if merged is not None:
            kernel_modules = ()
            worker = compile_worker(compartment, isa, merged[1])
        elif kernels != "host":
            kernel_modules = compile_kernels(compartment, isa, imported_kernels(model[1]))
        sidecar = (read_sidecar(self.metadata.sidecar, model_path, weights)
                   if self.metadata.sidecar is not None else None)
        blueprint = Blueprint(self.metadata, model, kernel_modules, pages, sidecar, segments,
                              self.threads, worker)
        self._planner = Planner(self.metadata, bind)
        self._pool = InstancePool(lambda: ModelInstance(blueprint, Compartment(limits, features)),
                                  size, ModelInstance(blueprint, compartment))

    @property
    def inputs(self) -> tuple[md.TensorInfo, ...]:
        """Input names, dtypes and shapes (symbolic dims by name)."""
        return self.metadata.inputs

    @property
    def outputs(self) -> tuple[md.TensorInfo, ...]:
        """Output names, dtypes and shapes (symbolic dims by name)."""
        return self.metadata.outputs

    @property
    def instances(self) -> int:
        """How many instances exist now (at most the ``instances`` it was loaded with)."""
        return self._pool.live

    def lease(self) -> Lease:
        """Hold one instance for a series of runs on this thread (see ``Lease``)."""
        return Lease(self)

    def run(self, inputs: Inputs) -> dict[str, np.ndarray]:
        """Run the model: ``{name: ndarray}`` (or one ndarray) in, ``{name: ndarray}`` out.
        Thread-safe; outputs are copies.

        Raises:
            TypeError: an input is not an ndarray, or its dtype cannot be converted safely.
            ValueError: missing or unexpected inputs, or a shape the model does not accept.
            Trap: the model trapped, or a limit (``LimitExceeded``) was hit.
            RuntimeError: the session is closed.
        """
        with Lease(self) as lease:
            return lease.run(inputs)

    def close(self) -> None:
        """Release the instances; further ``run`` calls raise ``RuntimeError``. Runs under
        way finish; outputs already returned stay valid."""
        self._pool.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def load(model: str | os.PathLike[str] | bytes, *,
         max_memory: int | str = ResourceLimits.max_memory, timeout: float | None = None,
         fuel: int | None = None, kernels: str = "auto", instances: int | None = None,
         weights: str | os.PathLike[str] | bytes | None = None,
         threads: int | str = "auto") -> Session:
    """Load a ``.wasm`` model into a new sandboxed session.

    Args:
        model: a path to a ``.wasm`` file, or its bytes.
        max_memory: the memory cap of each instance, in bytes or as text such as ``"64MiB"``.
        timeout: wall-clock seconds allowed per ``run`` call (``None``: no limit).
        fuel: wasm instructions allowed per ``run`` call (``None``: no limit).
        kernels: ``"auto"`` (relaxed SIMD), ``"simd128"``, ``"scalar"``, or ``"host"`` (numpy).
        instances: how many instances concurrent ``run`` calls may use (default: the number
            of CPUs); each is created on first need and has its own memory.
        weights: for a model exported with ``sidecar=True``: its weights file (or bytes);
            by default the file the metadata names, next to ``model``.
        threads: the threads each ``run`` call may use for its large kernels. The default
            ``"auto"`` is the cores this process may run on (at most
            ``runtime.threads.MAX_THREADS``) for a model of at least
            ``wasm_kernels.parallel.AUTO_WEIGHTS`` weight bytes, else 1: a threaded model
            runs its small kernels ~1.1-1.25x slower (README, Threads). 1 runs everything on
            the calling thread with a private memory, as before threads. A model that cannot
            be merged with its kernels runs on one thread, with a ``RuntimeWarning``. The
            numpy ``"host"`` kernels use one.

    Raises:
        FileNotFoundError: the path does not exist.
        ModelFormatError: the bytes are not a valid wasmnn model.
        LinkError: the model imports something the runtime does not provide.
        LimitExceeded: the model needs more memory than ``max_memory``.
        ValueError: a limit, ``instances`` or ``threads`` is out of range (see
            ``ResourceLimits``, ``MAX_THREADS``), or ``kernels`` is unknown.
        TypeError: a limit, ``instances`` or ``threads`` is not an integer (``timeout``: not
            a number).
    """
    limits = ResourceLimits(max_memory=parse_size(max_memory), timeout=timeout, fuel=fuel)
    model_path = model if isinstance(model, (str, os.PathLike)) else None
    return Session(_read_model(model), limits, kernels, instances=instances,
                   model_path=model_path, weights=weights, threads=threads)
