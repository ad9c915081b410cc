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


def _pool_model(ph: int) -> bytes:
    """A model that max-pools its 1x4 input with ``ph`` rows of padding (8 KiB output)."""
    spec = abi.BY_NAME["f32_max_pool2d"]
    args = {"x": 0, "y": 1024, "planes": 1, "h": 1, "w": 4, "oh": 1, "ow": 1, "kh": 1, "kw": 1,
            "sh": 1, "sw": 1, "ph": ph, "pw": 0, "dh": 1, "dw": 1}
    call = " ".join(f"(i32.const {args[p]})" for p in spec.params)
    wat = f"""(module (import "env" "memory" (memory 1))
      (import "{abi.MODULE}" "f32_max_pool2d" (func $pool (param {' i32' * len(spec.params)})))
      (func (export "run") (param $batch i32) (result i32) (call $pool {call}) (i32.const 0)))"""
    return with_section(wasmtime.wat2wasm(wat), metadata())


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
