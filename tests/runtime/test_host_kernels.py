"""Issue 18 item 12 and issue 17 item 3: the host (numpy) kernel provider keeps the same
promises as the wasm kernels: the same ``Trap`` for the same bad operand, named after the
kernel, and the caller's memory and time limits."""

import time

import numpy as np
import pytest
import wasmtime

import modelc
import nn
import runtime
from runtime import LimitExceeded, Trap
from tests.runtime.wat_models import metadata, with_section
from wasi_intrinsics.kernel_limits import KernelFault, KernelState, guarded
from wasm_kernels import abi


@pytest.fixture(scope="module")
def embedding_wasm() -> bytes:
    np.random.seed(0)
    model = nn.Embedding(10, 4).eval()
    return modelc.export(model, (np.zeros((1, 3), np.int64),))


@pytest.mark.parametrize("bad", [10, -1, 2**40])
def test_host_and_wasm_kernels_raise_the_same_trap_for_a_bad_index(embedding_wasm, bad):
    ids = np.array([[1, bad, 2]], np.int64)
    traps = {}
    for kernels in ("host", "simd128"):
        with pytest.raises(Trap) as info:
            runtime.load(embedding_wasm, kernels=kernels).run(ids)
        traps[kernels] = info.value
    assert type(traps["host"]) is Trap and traps["host"].code == traps["simd128"].code
    assert str(traps["host"]).endswith(f" in {abi.MODULE}!f32_gather")
    assert f"index {bad} is outside [0, 10)" in str(traps["host"])


def _kernel_model(kernel: str, **args: int) -> bytes:
    """A model whose ``run`` calls ``kernel`` once with ``args`` (by ABI parameter name)."""
    spec = abi.BY_NAME[kernel]
    call = " ".join(f"(i32.const {args[p]})" for p in spec.params)
    wat = f"""(module (import "env" "memory" (memory 1))
      (import "{abi.MODULE}" "{kernel}" (func $k (param {' i32' * len(spec.params)})))
      (func (export "run") (param $batch i32) (result i32) (call $k {call}) (i32.const 0)))"""
    return with_section(wasmtime.wat2wasm(wat), metadata())


def _pool_model(ph: int) -> bytes:
    """A model that max-pools its 1x4 input with ``ph`` rows of padding."""
    return _kernel_model("f32_max_pool2d", x=0, y=1024, planes=1, h=1, w=4, oh=1, ow=1, kh=1,
                         kw=1, sh=1, sw=1, ph=ph, pw=0, dh=1, dw=1)


def test_host_kernels_honour_the_memory_limit():
    x = np.ones((1, 4), np.float32)
    runtime.load(_pool_model(0), kernels="host").run(x)
    # 2^28 rows of padding: a 4 GiB padded copy on the host, under a 16 MiB cap.
    with pytest.raises(LimitExceeded, match=r"the padded input would take 4294967312 bytes of "
                                            r"host memory, over the limit of 16777216 bytes in "
                                            rf"{abi.MODULE}!f32_max_pool2d") as info:
        runtime.load(_pool_model(1 << 28), kernels="host", max_memory="16MiB").run(x)
    assert info.value.code == "memory"


class _Context:
    """What a host function sees, with a fixed deadline."""

    def __init__(self, deadline: float | None):
        self.state = KernelState(lambda: deadline)


def test_a_host_gemm_result_is_checked_against_its_destination_before_it_is_computed():
    # a (2^13 x 1) @ b (1 x 2^13) is 256 MiB of result for a destination in a 64 KiB memory
    model = _kernel_model("f32_gemm", a=0, b=32768, c=0, ws=0, wa=0, m=1 << 13, k=1,
                          n=1 << 13)
    with pytest.raises(Trap, match=rf"is outside linear memory of 65536 bytes in "
                                   rf"{abi.MODULE}!f32_gemm") as info:
        runtime.load(model, kernels="host").run(np.ones((1, 4), np.float32))
    assert info.value.code == "out_of_bounds"


def test_a_broadcast_operand_is_checked_against_the_memory_cap():
    # zero strides: a 4-byte view broadcast to 2^40 elements
    dims = {f"d{i}": 1 for i in range(abi.BROADCAST_RANK)}
    dims.update(d0=1 << 20, d1=1 << 20)
    strides = {f"{t}s{i}": 0 for t in "ab" for i in range(abi.BROADCAST_RANK)}
    spec = next(s for s in abi.KERNELS if s.family == "binary")
    model = _kernel_model(spec.name, a=0, b=0, y=0, **dims, **strides)
    with pytest.raises(LimitExceeded, match=rf"an operand of dims .* would take 4398046511104 "
                                            rf"bytes of host memory.* in {abi.MODULE}!"):
        runtime.load(model, kernels="host", max_memory="16MiB").run(np.ones((1, 4), np.float32))


def test_host_kernels_honour_the_deadline():
    def late(ctx, *args):
        pass

    with pytest.raises(Exception, match=rf"waited in {abi.MODULE}!f32_relu") as info:
        guarded(abi.MODULE, "f32_relu", late)(_Context(time.monotonic() - 1))
    assert type(info.value).__name__ == "DeadlineExceeded"


def test_host_kernel_geometry_numpy_refuses_is_a_trap_not_a_raw_error():
    def divides(ctx, n):
        return 1 // n

    with pytest.raises(KernelFault, match=rf"integer divide by zero in {abi.MODULE}!f32_x"):
        guarded(abi.MODULE, "f32_x", divides)(_Context(None), 0)
