"""Calling a wasm function with every value as its bits, through wasmtime's C API.

wasmtime-py converts an ``f32`` through C ``float`` and ``double``, which quiets a signalling
NaN and so changes its payload, and it aborts the process on a ``v128`` signature. The spec
scripts compare bit patterns, including NaN payloads and SIMD lanes: ``call_bits`` passes and
returns each value as an unsigned integer of its width, with the signature read from the
binary (``FuncType``), never from wasmtime-py.
"""

from __future__ import annotations

import ctypes
from typing import Any

import wasmtime
from wasmtime import _ffi as ffi
from wasmtime._func import enter_wasm

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
