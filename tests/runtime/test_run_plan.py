"""The per-call fast path of ``Session.run``: plans memoized by input shapes, typed views of
memory kept per instance, and the prepared entry call. Expected values come from numpy (the
identity model copies its input) or from eager ``nn``."""

import numpy as np
import pytest

import runtime
from runtime import Trap
from runtime.raw_call import I32Call
from runtime.run_plan import MAX_PLANS, Planner, RunPlan
from runtime.session import bind

from .wat_models import IDENTITY, metadata, wat_model

# Grows memory by one page on every run, then copies x to y (at 64 KiB, see the metadata
# below): every run changes the memory's size, so the instance's views must be made again.
GROW_THEN_COPY = """(drop (memory.grow (i32.const 1)))
    (memory.copy (i32.const 65536) (i32.const 0) (i32.mul (local.get $batch) (i32.const 16)))
    (i32.const 0)"""


def test_a_plan_is_made_once_per_shape_and_dtype(mlp_wasm):
    session = runtime.load(mlp_wasm)
    planner = Planner(session.metadata, bind)
    x2, y2 = np.zeros((2, 6), np.float32), np.ones((2, 6), np.float32)
    _, first = planner.plan({"x": x2}, 1)
    _, again = planner.plan(y2, 1)
    _, other = planner.plan({"x": np.zeros((3, 6), np.float32)}, 1)
    assert again is first and other is not first
    assert first.args == (2,) and other.args == (3,)
    assert [(t.name, t.shape, t.nbytes) for t in other.outputs] == [
        ("output0", (3, 3), 36)]


def test_a_converted_dtype_warns_on_every_call(mlp_wasm, mlp_model):
    session = runtime.load(mlp_wasm)
    x = np.random.default_rng(2).standard_normal((3, 6))
    for _ in range(2):
        with pytest.warns(UserWarning, match="input 'x': converting float64 to float32"):
            got = session.run({"x": x})["output0"]
        np.testing.assert_allclose(got, mlp_model(x.astype(np.float32)), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("inputs, error, message", [
    ({"x": np.zeros((2, 6), np.float32), "y": np.zeros(1)}, ValueError, r"unexpected \['y'\]"),
    ({"y": np.zeros((2, 6), np.float32)}, ValueError, r"missing \['x'\]"),
    ({"x": [[0.0] * 6] * 2}, TypeError, "input 'x': expected an ndarray, got list"),
    ({"x": np.zeros((2, 6), np.complex64)}, TypeError, "expected dtype float32, got complex64"),
    ({"x": np.zeros((2, 5), np.float32)}, ValueError, "axis 1 must be 6, got 5"),
])
def test_inputs_are_still_checked_after_a_shape_was_planned(mlp_wasm, inputs, error, message):
    session = runtime.load(mlp_wasm)
    session.run({"x": np.zeros((2, 6), np.float32)})
    with pytest.raises(error, match=message):
        session.run(inputs)


def test_new_shapes_past_the_limit_start_afresh(mlp_wasm):
    planner = Planner(runtime.load(mlp_wasm).metadata, bind)
    arrays = [np.zeros((1, 6), np.float32)] + [np.zeros((1, 6), np.float32)[:, ::1]]
    _, first = planner.plan(arrays[0], 1)
    for rows in range(2, 9):
        planner.plan(np.zeros((rows, 6), np.float32), 1)
    assert len(planner._plans) <= MAX_PLANS
    assert planner.plan(arrays[1], 1)[1] is first


def test_many_shapes_in_turn_give_eager_results(mlp_wasm, mlp_model):
    rng = np.random.default_rng(3)
    with runtime.load(mlp_wasm, instances=1) as session:
        for rows in [1, 8, 3, 1, 8, 5, 3]:
            x = rng.standard_normal((rows, 6)).astype(np.float32)
            np.testing.assert_allclose(session.run(x)["output0"], mlp_model(x), rtol=1e-5,
                                       atol=1e-6)


def test_outputs_are_read_after_the_guest_grew_its_memory():
    meta = metadata(outputs=[{"name": "y", "dtype": "float32", "shape": ["batch", 4],
                              "offset": 65536}], memory_bytes=65536 + 8 * 16)
    wasm = wat_model(GROW_THEN_COPY, meta=meta)
    with runtime.load(wasm, kernels="host", instances=1) as session:
        with session.lease() as lease:
            sizes = []
            for rows in (2, 2, 3):
                x = np.arange(rows * 4, dtype=np.float32).reshape(rows, 4) + rows
                np.testing.assert_array_equal(lease.run(x)["y"], x)
                sizes.append(len(lease._instance.views.current()))
            assert np.diff(sizes).tolist() == [65536, 65536]


def test_zero_copy_outputs_are_fresh_read_only_views():
    with runtime.load(wat_model(IDENTITY), kernels="host").lease() as lease:
        first = lease.run(np.ones((2, 4), np.float32), copy=False)["y"]
        second = lease.run(np.full((2, 4), 7, np.float32), copy=False)["y"]
        assert first is not second and not second.flags.writeable
        np.testing.assert_array_equal(second, np.full((2, 4), 7, np.float32))


def test_run_plans_compare_by_identity(mlp_wasm):
    metadata_ = runtime.load(mlp_wasm).metadata
    a, b = RunPlan.of(metadata_, {"batch": 2}), RunPlan.of(metadata_, {"batch": 2})
    assert a == a and a != b and len({a, b}) == 2


def test_prepared_call_passes_values_and_raises_traps():
    import wasmtime

    from runtime.compartment import Compartment

    compartment = Compartment()
    wat = """(module (func (export "f") (param i32 i32) (result i32)
               (if (i32.eqz (local.get 1)) (then unreachable))
               (i32.div_s (local.get 0) (local.get 1))))"""
    module = wasmtime.Module(compartment.engine, wat)
    func = wasmtime.Instance(compartment.store, module, []).exports(compartment.store)["f"]
    call = I32Call(compartment.store, func, 2)
    assert call([-7, 2]) == -3 and call([2**31 - 1, 1]) == 2**31 - 1
    with pytest.raises(Trap, match="unreachable"):
        compartment.call(call, [1, 0])
    assert call([9, 3]) == 3  # a trap leaves the prepared call usable


def test_a_dropped_session_frees_its_instances(mlp_wasm):
    import gc
    import weakref

    session = runtime.load(mlp_wasm, instances=1)
    session.run(np.ones((2, 6), np.float32))
    instance = weakref.ref(session._pool._idle[0])
    del session
    gc.collect()
    assert instance() is None


def test_prepared_call_of_a_function_without_result():
    import wasmtime

    from runtime.compartment import Compartment

    compartment = Compartment()
    wat = """(module (global $g (export "g") (mut i32) (i32.const 0))
               (func (export "f") (param i32 i32)
                 (global.set $g (i32.sub (local.get 0) (local.get 1)))))"""
    module = wasmtime.Module(compartment.engine, wat)
    exports = wasmtime.Instance(compartment.store, module, []).exports(compartment.store)
    call = I32Call(compartment.store, exports["f"], 2, results=0)
    assert call([5, 7]) == 0
    assert exports["g"].value(compartment.store) == -2
