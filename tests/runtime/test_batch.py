"""``BatchRunner`` without Ray: chunks of rows in, whole output columns out, failed rows as
error records. Expected values come from eager ``nn``."""

import numpy as np
import pytest
from models import Lookup

import modelc
import nn
import runtime
from runtime.batch import ERROR_COLUMN, BatchRunner


@pytest.fixture(scope="module")
def lookup() -> tuple[nn.Module, bytes]:
    np.random.seed(4)
    model = Lookup().eval()
    wasm = modelc.export(model, {"ids": np.zeros((1, 2), np.int64)},
                         dynamic={"ids": {0: ("batch", 1, 8)}})
    return model, wasm


def test_chunks_and_failed_rows_come_out_in_row_order(lookup):
    model, wasm = lookup
    ids = np.random.default_rng(5).integers(0, 10, (21, 2))
    bad = [0, 9, 10, 20]
    ids[bad, 0] = 42  # past the table: the gather traps
    with runtime.load(wasm, instances=1) as session:
        out = BatchRunner(session)({"ids": ids})
    assert [i for i, e in enumerate(out[ERROR_COLUMN]) if e] == bad
    assert all(out[ERROR_COLUMN][i].startswith("Trap: ") for i in bad)
    good = [i for i in range(21) if i not in bad]
    assert out["output0"].shape == (21, 2, 3) and out["output0"].dtype == np.float32
    np.testing.assert_array_equal(out["output0"][good], model(ids[good]))
    assert np.isnan(out["output0"][bad]).all()


def test_a_batch_where_every_row_fails_has_no_outputs(lookup):
    with runtime.load(lookup[1], instances=1) as session:
        out = BatchRunner(session, outputs={"output0": "vectors"})({"ids": np.full((3, 2), 99)})
    assert list(out["vectors"]) == [None] * 3 and all(out[ERROR_COLUMN])


def test_on_error_raise_raises_the_trap(lookup):
    with runtime.load(lookup[1], instances=1) as session:
        with pytest.raises(runtime.Trap, match="out_of_bounds|unreachable"):
            BatchRunner(session, on_error="raise")({"ids": np.full((3, 2), 99)})
