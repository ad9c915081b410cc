"""A harness that runs any kernel provider on numpy arrays: the wasm kernel modules for each
ISA, and the host (numpy) provider, both compiled and linked as a session does it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import wasmtime
from executors import PROVIDERS

from runtime.compartment import Compartment
from runtime.linker import RegistryResolver
from runtime.pool import link_kernels
from runtime.session import compile_kernels
from wasm_kernels import abi
from wasm_kernels.templates import qlinear
from wasm_kernels.wasm import Limits, MemoryType, ModuleBuilder

PAGES = 512  # 32 MiB of linear memory


@dataclass(frozen=True)
class Output:
    """An output operand of another dtype than float32 (a tuple is a float32 output)."""

    shape: tuple[int, ...]
    dtype: np.dtype


@dataclass(frozen=True)
class InOut:
    """An operand the kernel updates in place: copied in, and returned like an output."""

    array: np.ndarray


class Harness:
    """Calls kernels by ABI name with arrays placed in linear memory.

    ``call(name, offset=..., x=array, y=shape, n=7)``: an ndarray argument is copied in (in
    its own dtype), a tuple argument allocates a float32 output of that shape (an ``Output``
    one of its dtype), an ``InOut`` is copied in and returned, ints and floats pass through.
    Every operand starts ``offset`` bytes past a 64-byte boundary; outputs return as copies.
    """

    def __init__(self, name: str):
        compartment = Compartment()
        self.store = compartment.store
        # As a session compiles and links them: the host provider, or a module per opt level.
        compiled = None if name == "host" else compile_kernels(compartment, name,
                                                                frozenset(abi.BY_NAME))
        exports, self.memory = link_kernels(compartment, compiled, PAGES, RegistryResolver())
        self.funcs: Callable[[str], Any] = (
            (lambda kernel: exports[kernel]) if compiled is None
            else (lambda kernel: exports[kernel].extern))

    @staticmethod
    def output(shape: tuple[int, ...], dtype: Any) -> Output:
        """An output argument of ``shape`` and ``dtype`` for ``call``."""
        return Output(shape, np.dtype(dtype))

    @staticmethod
    def inout(array: np.ndarray) -> InOut:
        """An operand for ``call`` that the kernel updates in place."""
        return InOut(array)

    def view(self) -> np.ndarray:
        return np.ctypeslib.as_array(self.memory.data_ptr(self.store),
                                     shape=(self.memory.data_len(self.store),))

    def call(self, name: str, offset: int = 0, **args: Any) -> dict[str, np.ndarray]:
        spec = abi.BY_NAME[name]
        memory = self.view()
        cursor, values, outputs = 64, [], {}
        for param in spec.params:
            key = param.split(":")[0]
            value = args[key]
            if isinstance(value, InOut):
                outputs[key] = None
                value = value.array
            if isinstance(value, Output):
                value, dtype = value.shape, np.dtype(value.dtype)
            else:
                dtype = value.dtype if isinstance(value, np.ndarray) else np.dtype(np.float32)
            if isinstance(value, (np.ndarray, tuple)):
                shape = value.shape if isinstance(value, np.ndarray) else value
                nbytes = dtype.itemsize * int(np.prod(shape))
                address = cursor + offset
                region = memory[address:address + nbytes].view(dtype).reshape(shape)
                if isinstance(value, np.ndarray):
                    region[...] = value
                    if key in outputs:
                        outputs[key] = region
                else:  # outputs must be fully written
                    region.view(np.uint8)[...] = 0xFF  # a NaN float, an invalid bool
                    outputs[key] = region
                values.append(address)
                cursor = (address + nbytes + 127) // 64 * 64
            else:
                values.append(value)
        assert cursor < memory.size, "test operands exceed the harness memory"
        self.funcs(name)(self.store, *values)
        return {key: region.copy() for key, region in outputs.items()}


@pytest.fixture(scope="session")
def harnesses() -> Iterator[dict[str, Harness]]:
    """Harnesses by provider, built on first use and dropped before interpreter shutdown."""
    cache: dict[str, Harness] = {}
    yield cache
    cache.clear()


@pytest.fixture(params=PROVIDERS)
def kernels(request: pytest.FixtureRequest, harnesses: dict[str, Harness]) -> Harness:
    """The harness of each provider in turn."""
    if request.param not in harnesses:
        harnesses[request.param] = Harness(request.param)
    return harnesses[request.param]


@pytest.fixture
def relaxed_tile(harnesses: dict[str, Harness]) -> Harness:
    """The relaxed harness with its qlinear rows built with the relaxed tile, which
    ``TILE_ISA`` leaves out of the relaxed module, instantiated on the harness's memory."""
    if "relaxed" not in harnesses:
        harnesses["relaxed"] = Harness("relaxed")
    harness = harnesses["relaxed"]
    builder = ModuleBuilder("relaxed_tile")
    builder.import_memory("env", "memory", MemoryType(Limits(1)))
    for spec in abi.KERNELS:
        if spec.family == "qlinear":
            builder.add_function(*qlinear.emit(spec, "relaxed", tile_isa="relaxed"),
                                 export=spec.name)
    module = wasmtime.Module(harness.store.engine, builder.encode())
    exports = wasmtime.Instance(harness.store, module, [harness.memory]).exports(harness.store)
    tiled = Harness.__new__(Harness)
    tiled.store, tiled.memory = harness.store, harness.memory
    tiled.funcs = lambda kernel: exports[kernel]
    return tiled
