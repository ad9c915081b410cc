"""Calling a wasm function with every value as its bits, through wasmtime's C API.

wasmtime-py converts an ``f32`` through C ``float`` and ``double``, which quiets a signalling
NaN and so changes its payload, and it aborts the process on a ``v128`` signature. The spec
scripts compare bit patterns, including NaN payloads and SIMD lanes: ``call_bits`` passes and
returns each value as an unsigned integer of its width, with the signature read from the
binary (``FuncType``), never from wasmtime-py.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

import wasmtime
from wasmtime import _ffi as ffi
from wasmtime._func import enter_wasm, maybe_raise_last_exn

from wasm_kernels.wasm import FuncType

_KINDS = {"i32": 0, "i64": 1, "f32": 2, "f64": 3, "v128": 4}
WIDTHS = {"i32": 32, "i64": 64, "f32": 32, "f64": 64, "v128": 128}
"""The value types ``call_bits`` takes, and their widths in bits."""


def numeric(ty: FuncType) -> bool:
    """Whether every parameter and result of ``ty`` is a number or a ``v128``."""
    return all(t in _KINDS for t in ty.params + ty.results)


def call_bits(store: wasmtime.Store, func: wasmtime.Func, ty: FuncType, args: list[int]
              ) -> list[int]:
    """Call ``func`` (of type ``ty``, all numeric) with ``args`` as unsigned bit patterns;
    its results as unsigned bit patterns.

    Raises:
        wasmtime.Trap, wasmtime.WasmtimeError: as ``Func.__call__`` does (translate them with
            ``Compartment.call``).
        ValueError: ``ty`` has a reference type, or ``args`` do not fit it.
    """
    if not numeric(ty) or len(args) != len(ty.params):
        raise ValueError(f"call_bits takes numeric signatures and one value per parameter; "
                         f"got {ty} with {len(args)} argument(s)")
    params = (ffi.wasmtime_val_t * len(args))()
    for slot, kind, bits in zip(params, ty.params, args):
        slot.kind = _KINDS[kind]
        data = bits.to_bytes(WIDTHS[kind] // 8, "little")
        ctypes.memmove(ctypes.addressof(slot.of), data, len(data))
    results = (ffi.wasmtime_val_t * len(ty.results))()
    func_ref: Any = func._func  # NOTE: wasmtime-py's handle; there is no public accessor
    with enter_wasm(store) as trap:
        error = ffi.wasmtime_func_call(store._context(), ctypes.byref(func_ref), params,
                                       len(args), results, len(results), trap)
        if error:
            raise wasmtime.WasmtimeError._from_ptr(error)
    return [int.from_bytes(ctypes.string_at(ctypes.addressof(r.of), WIDTHS[k] // 8), "little")
            for r, k in zip(results, ty.results)]


class I32Call:
    """A prepared call of one function taking ``params`` ``i32`` values and returning one
    ``i32`` (or, with ``results=0``, nothing: a kernel): the argument, result and trap slots
    are allocated once and the store's context read once, so a call costs a few microseconds
    instead of ``Func.__call__``'s type queries and value conversions (about 10 us plus 10 us
    per argument, as much as a small model's whole inference).

    The caller must have checked the signature (from the binary, ``FuncType``) and keep
    ``store`` alive.
    """

    def __init__(self, store: wasmtime.Store, func: wasmtime.Func, params: int,
                 results: int = 1):
        self._store = store
        self._context = store._context()  # NOTE: fixed for the store's life
        self._func = ctypes.byref(func._func)  # NOTE: wasmtime-py's handle, as in call_bits
        self._params: Any = (ffi.wasmtime_val_t * params)()
        for slot in self._params:
            slot.kind = _KINDS["i32"]  # type: ignore[assignment]
        self._count = params
        self._results = (ffi.wasmtime_val_t * results)()
        self._result_count = results
        self._trap = ctypes.POINTER(ffi.wasm_trap_t)()

    def __call__(self, args: Sequence[int]) -> int:
        """Call with ``args`` (one ``int`` per parameter, each within ``i32``); the result
        (0 for a function without one).

        Raises:
            wasmtime.Trap, wasmtime.WasmtimeError: as ``Func.__call__`` does, or what a host
                function raised (translate them with ``Compartment.call``).
        """
        params = self._params
        for index, value in enumerate(args):
            params[index].of.i32 = value
        trap = self._trap
        error = ffi.wasmtime_func_call(self._context, self._func, params, self._count,
                                       self._results, self._result_count, ctypes.byref(trap))
        # NOTE: what wasmtime-py's ``enter_wasm`` does: a host function's own exception wins
        # over the trap it caused.
        if trap:
            self._trap = ctypes.POINTER(ffi.wasm_trap_t)()  # the trap object now owns it
            raised = wasmtime.Trap._from_ptr(trap)
            maybe_raise_last_exn()
            raise raised
        if error:
            maybe_raise_last_exn()
            raise wasmtime.WasmtimeError._from_ptr(error)
        return int(self._results[0].of.i32) if self._result_count else 0
