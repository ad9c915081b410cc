"""The instance pool behind ``Session``: concurrency, isolation, traps, leases and views."""

import threading

import numpy as np
import pytest

import runtime
from runtime import Trap
from tests.runtime.wat_models import wat_model

HANG_GUARD = 60.0  # seconds; only to fail instead of hanging, never a timing assertion

# Traps when batch == 3, else y = x.
TRAPS_ON_3 = """(if (i32.eq (local.get $batch) (i32.const 3)) (then unreachable))
                (memory.copy (i32.const 1024) (i32.const 0)
                             (i32.mul (local.get $batch) (i32.const 16)))
                (i32.const 0)"""


def _x(batch: int, value: float = 1.0) -> np.ndarray:
    return np.full((batch, 4), value, np.float32)


def _join(threads: list[threading.Thread]) -> None:
    for t in threads:
        t.join(HANG_GUARD)
        assert not t.is_alive(), "a thread hung"


def test_many_threads_get_correct_results_from_few_instances(mlp_wasm, mlp_model):
    session = runtime.load(mlp_wasm, instances=2)
    rng = np.random.default_rng(3)
    batches = [rng.standard_normal((i % 8 + 1, 6)).astype(np.float32) for i in range(32)]
    results: dict[int, np.ndarray] = {}

    def work(i: int) -> None:
        for _ in range(5):
            results[i] = session.run(batches[i])["output0"]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(batches))]
    for t in threads:
        t.start()
    _join(threads)
    assert 1 <= session.instances <= 2
    for i, x in enumerate(batches):
        np.testing.assert_allclose(results[i], mlp_model(x), rtol=1e-5, atol=1e-6)


def test_instances_are_created_lazily_up_to_the_limit():
    session = runtime.load(wat_model(), instances=2)
    assert session.instances == 1
    with session.lease() as a, session.lease() as b:
        a.run(_x(1))
        b.run(_x(1))
        assert session.instances == 2
        got: list[np.ndarray] = []
        waiter = threading.Thread(target=lambda: got.append(session.run(_x(2, 5.0))["y"]))
        waiter.start()
        waiter.join(0.2)
        assert waiter.is_alive() and session.instances == 2  # waits for a free instance
    _join([waiter])
    np.testing.assert_array_equal(got[0], _x(2, 5.0))
    assert session.instances == 2


def test_instances_do_not_share_memory():
    session = runtime.load(wat_model(), instances=2)
    with session.lease() as a, session.lease() as b:
        view_a = a.run(_x(2, 1.0), copy=False)["y"]
        b.run(_x(2, 2.0), copy=False)
        np.testing.assert_array_equal(view_a, _x(2, 1.0))


def test_zero_copy_views_are_read_only_and_live_until_the_next_run():
    session = runtime.load(wat_model(), instances=1)
    with session.lease() as lease:
        view = lease.run(_x(2, 1.0), copy=False)["y"]
        kept = np.array(view)
        assert not view.flags.writeable and not view.flags.owndata
        with pytest.raises(ValueError, match="read-only"):
            view[0, 0] = 9.0
        lease.run(_x(2, 7.0))
        np.testing.assert_array_equal(view, _x(2, 7.0))  # the documented contract
        np.testing.assert_array_equal(kept, _x(2, 1.0))
    copied = session.run(_x(2, 3.0))["y"]
    assert copied.flags.writeable and copied.flags.owndata


def test_views_outlive_the_session_without_dangling():
    session = runtime.load(wat_model(), instances=1)
    with session.lease() as lease:
        view = lease.run(_x(3, 4.0), copy=False)["y"]
    session.close()
    del session, lease
    np.testing.assert_array_equal(view, _x(3, 4.0))  # the view pins the instance's memory


def test_a_trapped_instance_is_replaced_and_the_session_keeps_serving():
    session = runtime.load(wat_model(TRAPS_ON_3), instances=1)
    with session.lease() as lease:
        first = lease.run(_x(1), copy=False)["y"]
        with pytest.raises(Trap, match="unreachable") as info:
            lease.run(_x(3))
        assert info.value.code == "unreachable"
        assert session.instances == 0  # dropped, not reused
        np.testing.assert_array_equal(lease.run(_x(2, 6.0))["y"], _x(2, 6.0))
        assert session.instances == 1
    np.testing.assert_array_equal(first, _x(1))


def test_a_rejected_input_keeps_the_instance(mlp_wasm):
    import json

    from tests.runtime.test_session import _meta, _with_metadata
    meta = _meta(mlp_wasm)
    meta["dims"][0]["max"] = 100
    meta["memory_bytes"] = 1 << 20
    session = runtime.load(_with_metadata(mlp_wasm, meta), instances=1)
    with pytest.raises(Trap, match="rejected its inputs") as info:
        session.run(np.zeros((20, 6), np.float32))
    assert info.value.code == "rejected" and session.instances == 1
    assert json.dumps(session.run(np.zeros((2, 6), np.float32))["output0"].shape) == "[2, 3]"


def test_close_wakes_waiters_and_refuses_runs():
    session = runtime.load(wat_model(), instances=1)
    errors: list[BaseException] = []

    def wait_for_instance() -> None:
        try:
            session.run(_x(1))
        except RuntimeError as err:
            errors.append(err)

    with session.lease() as lease:
        lease.run(_x(1))
        waiter = threading.Thread(target=wait_for_instance)
        waiter.start()
        waiter.join(0.2)
        session.close()
        _join([waiter])
        with pytest.raises(RuntimeError, match="the session is closed"):
            lease.run(_x(1))
    assert len(errors) == 1 and "the session is closed" in str(errors[0])
    assert session.instances == 0


def test_context_manager_closes():
    with runtime.load(wat_model()) as session:
        session.run(_x(1))
    with pytest.raises(RuntimeError, match="the session is closed"):
        session.run(_x(1))


@pytest.mark.parametrize("instances", [0, -1])
def test_instances_must_be_positive(instances):
    with pytest.raises(ValueError, match=f"instances must be at least 1, got {instances}"):
        runtime.load(wat_model(), instances=instances)


def test_limits_apply_to_every_instance():
    loop = "(loop $l (br $l)) (i32.const 0)"
    session = runtime.load(wat_model(loop), instances=2, fuel=10_000)
    errors: list[BaseException] = []

    def work() -> None:
        try:
            session.run(_x(1))
        except runtime.LimitExceeded as err:
            errors.append(err)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    _join(threads)
    assert len(errors) == 4 and {e.code for e in errors} == {"fuel"}
