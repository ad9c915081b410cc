"""Intrinsic modules declared in Python: WASI preview1 and the host (numpy) kernel provider."""

from .intrinsic import (
                        HostContext,
                        IntrinsicInstance,
                        IntrinsicModule,
                        f32,
                        f64,
                        i32,
                        i64,
                        to_wasmtime,
)

__all__ = ["HostContext", "IntrinsicInstance", "IntrinsicModule", "f32", "f64", "i32", "i64",
           "to_wasmtime"]
