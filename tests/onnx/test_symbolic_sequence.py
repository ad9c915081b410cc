"""Positions over a symbolic sequence, as exported transformers compute them: ``Range`` from 0
by 1 up to a symbolic dim (int64, and float32 through a ``Cast`` of the dim), ``Slice`` of a
position buffer up to it, ``Trilu`` over symbolic axes (a causal mask), integer ``Neg`` /
``Abs`` (T5's relative positions), ``CumSum`` along it, and three torch modules spelling
positions and masks as transformers do, exported by both exporters; one module run at several
lengths on every provider against onnxruntime, and the refusals of what stays unsupported."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from executors import PROVIDERS

import modelc
import runtime

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

SEQ = ("seq", 1, 16)


def _model(nodes: list, inputs: list, outputs: list, initializers: dict[str, np.ndarray]
           ) -> Any:
    graph = helper.make_graph(nodes, "g", inputs, outputs, [
        numpy_helper.from_array(v, k) for k, v in initializers.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    return model


def _positions_model(start: int = 0, delta: int = 1) -> Any:
    """``Range(start, x.shape[1], delta)`` as int64 (``ids``) and, through a float ``Cast``
    of the dim, ``sin`` of the float positions (``angles``: LLaMA's rotary spelling)."""
    nodes = [helper.make_node("Shape", ["X"], ["shape"]),
             helper.make_node("Gather", ["shape", "one"], ["seq"], axis=0),
             helper.make_node("Range", ["start", "seq", "delta"], ["ids"]),
             helper.make_node("Cast", ["seq"], ["seq_f"], to=TensorProto.FLOAT),
             helper.make_node("Range", ["start_f", "seq_f", "delta_f"], ["positions"]),
             helper.make_node("Sin", ["positions"], ["angles"])]
    return _model(nodes, [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, "seq"])],
                  [helper.make_tensor_value_info("ids", TensorProto.INT64, ["seq"]),
                   helper.make_tensor_value_info("angles", TensorProto.FLOAT, ["seq"])],
                  {"one": np.array(1, np.int64), "start": np.array(start, np.int64),
                   "delta": np.array(delta, np.int64),
                   "start_f": np.array(start, np.float32),
                   "delta_f": np.array(delta, np.float32)})


def _run_lengths(model: Any, feeds_at: Any, lengths: tuple[int, ...], compare: Any) -> None:
    wasm = modelc.export(modelc.from_onnx(model, dynamic={"X": dict(feeds_at.axes)}))
    for kernels in PROVIDERS:
        with runtime.load(wasm, kernels=kernels) as session:
            for length in lengths:
                feeds = feeds_at(length)
                compare(session.run(feeds), model, feeds, f"length {length} on {kernels}")


class _Feeds:
    """Seeded float inputs ``X`` whose symbolic axes all take the run's length."""

    def __init__(self, shape: tuple[Any, ...]):
        self.shape = shape
        self.axes = {i: (d, 1, 16) for i, d in enumerate(shape) if isinstance(d, str)}

    def __call__(self, length: int) -> dict[str, np.ndarray]:
        shape = [length if isinstance(d, str) else d for d in self.shape]
        return {"X": np.random.default_rng(length).standard_normal(shape).astype(np.float32)}


def test_range_up_to_a_symbolic_dim_matches_onnxruntime(compare_with_ort: Any) -> None:
    _run_lengths(_positions_model(), _Feeds((2, "seq")), (1, 5, 16), compare_with_ort)


@pytest.mark.parametrize(("upper", "k"), [(0, 0), (1, 0), (0, -1), (1, 2)])
def test_trilu_over_symbolic_axes_matches_onnxruntime(upper: int, k: int,
                                                      compare_with_ort: Any) -> None:
    """A (rows, columns) of two symbolic dims, rows != columns in a run."""
    nodes = [helper.make_node("Trilu", ["X", "k"], ["Y"], upper=upper)]
    model = _model(nodes, [helper.make_tensor_value_info("X", TensorProto.FLOAT,
                                                         [3, "rows", "columns"])],
                   [helper.make_tensor_value_info("Y", TensorProto.FLOAT,
                                                  [3, "rows", "columns"])],
                   {"k": np.array(k, np.int64)})
    feeds = _Feeds((3, "rows", "columns"))
    wasm = modelc.export(modelc.from_onnx(model, dynamic={"X": feeds.axes}))
    rng = np.random.default_rng(0)
    for kernels in PROVIDERS:
        with runtime.load(wasm, kernels=kernels) as session:
            for rows, columns in ((1, 1), (4, 7), (9, 2)):
                run = {"X": rng.standard_normal((3, rows, columns)).astype(np.float32)}
                compare_with_ort(session.run(run), model, run, f"{rows}x{columns} on {kernels}")


def test_integer_neg_and_abs_of_relative_positions_match_onnxruntime(
        compare_with_ort: Any) -> None:
    """T5's ``memory - context`` over a symbolic sequence, negated and made absolute in
    int64."""
    nodes = [helper.make_node("Shape", ["X"], ["shape"]),
             helper.make_node("Gather", ["shape", "one"], ["seq"], axis=0),
             helper.make_node("Range", ["zero", "seq", "one"], ["ids"]),
             helper.make_node("Unsqueeze", ["ids", "zero1"], ["row"]),
             helper.make_node("Unsqueeze", ["ids", "one1"], ["column"]),
             helper.make_node("Sub", ["row", "column"], ["relative"]),
             helper.make_node("Neg", ["relative"], ["negated"]),
             helper.make_node("Abs", ["relative"], ["distance"])]
    model = _model(nodes, [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, "seq"])],
                   [helper.make_tensor_value_info(name, TensorProto.INT64, ["seq", "seq"])
                    for name in ("negated", "distance")],
                   {"one": np.array(1, np.int64), "zero": np.array(0, np.int64),
                    "zero1": np.array([0], np.int64), "one1": np.array([1], np.int64)})
    _run_lengths(model, _Feeds((2, "seq")), (1, 6), compare_with_ort)


@pytest.mark.parametrize(("start", "delta"), [(1, 1), (0, 2)])
def test_range_whose_length_is_not_the_dim_is_refused_by_name(start: int, delta: int) -> None:
    with pytest.raises(modelc.CompileError, match=r"Range.*'seq'.*from 0 by 1.*input_shapes"):
        modelc.from_onnx(_positions_model(start, delta), dynamic={"X": {1: SEQ}})


def _sliced_positions_model(start: int) -> Any:
    """BERT's position ids: a constant (1, 32) ``arange`` buffer sliced ``[:, start:seq]``,
    rows of a table gathered at them."""
    nodes = [helper.make_node("Shape", ["X"], ["shape"]),
             helper.make_node("Slice", ["shape", "one1", "two1"], ["seq"]),
             helper.make_node("Slice", ["buffer", "start", "seq", "one1"], ["ids"]),
             helper.make_node("Gather", ["table", "ids"], ["Y"])]
    return _model(nodes, [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, "seq"])],
                  [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, "seq", 3])],
                  {"one1": np.array([1], np.int64), "two1": np.array([2], np.int64),
                   "start": np.array([start], np.int64),
                   "buffer": np.arange(32, dtype=np.int64)[None],
                   "table": np.random.default_rng(0).standard_normal((32, 3)).astype(
                       np.float32)})


def test_slice_of_a_constant_up_to_a_symbolic_dim_matches_onnxruntime(
        compare_with_ort: Any) -> None:
    _run_lengths(_sliced_positions_model(0), _Feeds((2, "seq")), (1, 9, 16), compare_with_ort)


def test_slice_up_to_a_symbolic_dim_from_elsewhere_than_0_is_refused_by_name() -> None:
    with pytest.raises(modelc.CompileError, match=r"Slice \[1:'seq':1\].*input_shapes"):
        modelc.from_onnx(_sliced_positions_model(1), dynamic={"X": {1: SEQ}})


def test_slice_up_to_a_dim_longer_than_the_axis_is_refused_by_name() -> None:
    """The position buffer has 32 entries; a sequence of up to 64 could not be sliced."""
    with pytest.raises(modelc.CompileError, match=r"Slice up to 'seq' \(at most 64\) of an "
                                                  r"axis of 32: bound 'seq' to at most 32"):
        modelc.from_onnx(_sliced_positions_model(0), dynamic={"X": {1: ("seq", 1, 64)}})


@pytest.mark.parametrize(("dtype", "exclusive", "reverse"), [
    (TensorProto.INT64, 0, 0), (TensorProto.INT64, 1, 1), (TensorProto.FLOAT, 0, 1),
    (TensorProto.FLOAT, 1, 0)])
def test_cumsum_along_a_symbolic_axis_matches_onnxruntime(dtype: int, exclusive: int,
                                                          reverse: int,
                                                          compare_with_ort: Any) -> None:
    """RoBERTa's positions: the running count along the attention mask (int64, exact), and
    float32 running sums, over (batch, seq) both symbolic."""
    nodes = [helper.make_node("Cast", ["X"], ["values"], to=dtype),
             helper.make_node("CumSum", ["values", "axis"], ["Y"], exclusive=exclusive,
                              reverse=reverse)]
    model = _model(nodes, [helper.make_tensor_value_info("X", TensorProto.FLOAT,
                                                         ["batch", "seq"])],
                   [helper.make_tensor_value_info("Y", dtype, ["batch", "seq"])],
                   {"axis": np.array(1, np.int64)})
    feeds = _Feeds(("batch", "seq"))
    wasm = modelc.export(modelc.from_onnx(model, dynamic={"X": feeds.axes}))
    rng = np.random.default_rng(0)
    for kernels in PROVIDERS:
        with runtime.load(wasm, kernels=kernels) as session:
            for shape in ((1, 1), (3, 7), (2, 16)):
                run = {"X": rng.integers(-9, 9, shape).astype(np.float32)}
                compare_with_ort(session.run(run), model, run, f"{shape} on {kernels}")


def test_expand_of_a_constant_to_symbolic_dims_matches_onnxruntime(compare_with_ort: Any
                                                                   ) -> None:
    """dynamo's ``torch.ones(t, t, dtype=bool)``: a bool scalar expanded to (seq, seq)."""
    nodes = [helper.make_node("Shape", ["X"], ["shape"]),
             helper.make_node("Slice", ["shape", "one1", "two1"], ["seq"]),
             helper.make_node("Concat", ["seq", "seq"], ["square"], axis=0),
             helper.make_node("Expand", ["true", "square"], ["ones"]),
             helper.make_node("Trilu", ["ones"], ["Y"], upper=0)]
    model = _model(nodes, [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, "seq"])],
                   [helper.make_tensor_value_info("Y", TensorProto.BOOL, ["seq", "seq"])],
                   {"one1": np.array([1], np.int64), "two1": np.array([2], np.int64),
                    "true": np.array(True)})
    _run_lengths(model, _Feeds((2, "seq")), (1, 6), compare_with_ort)


def _position_patterns() -> dict[str, Any]:
    """Modules spelling positions and masks over their sequence (axis 1 of (B, T, 8)) as
    transformers' older and current models do."""
    import torch

    class OldCausalMask(torch.nn.Module):
        """transformers' former ``_make_causal_mask``: a full of the float minimum, zeroed
        where ``arange < (arange + 1).view(T, 1)``."""

        def forward(self, x: Any) -> Any:
            mask = torch.full((x.shape[1], x.shape[1]), torch.finfo(torch.float32).min)
            cond = torch.arange(mask.size(-1))
            mask = mask.masked_fill(cond < (cond + 1).view(mask.size(-1), 1), 0.0)
            return torch.softmax(x @ x.transpose(1, 2) / 4.0 + mask[None], -1) @ x

    class RotaryByMatmul(torch.nn.Module):
        """LLaMA's rotary angles in transformers: ``inv_freq @ position_ids``."""

        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, 8, 2) / 8))

        def forward(self, x: Any) -> Any:
            positions = torch.arange(x.shape[1])[None].expand(x.shape[0], -1)
            freqs = (self.inv_freq[None, :, None] @ positions[:, None, :].float()
                     ).transpose(1, 2)
            angles = torch.cat((freqs, freqs), -1)
            return x * angles.cos() + x * angles.sin()

    class Sinusoids(torch.nn.Module):
        """fairseq's and Marian's sinusoidal positions, computed for the sequence."""

        def forward(self, x: Any) -> Any:
            scale = torch.exp(torch.arange(4, dtype=torch.float32) * -(np.log(1e4) / 3))
            angles = torch.arange(x.shape[1], dtype=torch.float32)[:, None] * scale[None]
            return x + torch.cat([angles.sin(), angles.cos()], 1)[None]

    return {"old_causal_mask": OldCausalMask, "rotary_by_matmul": RotaryByMatmul,
            "sinusoids": Sinusoids}


@pytest.mark.parametrize("exporter", ["dynamo", "torchscript17"])
@pytest.mark.parametrize("pattern", ["old_causal_mask", "rotary_by_matmul", "sinusoids"])
def test_exported_position_patterns_over_a_symbolic_sequence(pattern: str, exporter: str,
                                                             compare_with_ort: Any) -> None:
    import io
    import logging
    import warnings

    torch = pytest.importorskip("torch")
    model, x = _position_patterns()[pattern]().eval(), torch.zeros(2, 7, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if exporter == "dynamo":
            pytest.importorskip("onnxscript")
            logging.getLogger("torch.onnx").setLevel(logging.ERROR)
            dims = {0: torch.export.Dim("batch", min=1, max=4),
                    1: torch.export.Dim("seq", min=1, max=16)}
            data = torch.onnx.export(model, (x,), dynamo=True, input_names=["x"],
                                     output_names=["y"], dynamic_shapes=(dims,),
                                     verbose=False).model_proto.SerializeToString()
        else:
            out = io.BytesIO()
            torch.onnx.export(model, (x,), out, dynamo=False, input_names=["x"],
                              output_names=["y"], opset_version=17,
                              dynamic_axes={"x": {0: "batch", 1: "seq"}})
            data = out.getvalue()
    wasm = modelc.export(modelc.from_onnx(data, dynamic={"x": {0: ("batch", 1, 4), 1: SEQ}}))
    for kernels in PROVIDERS:
        with runtime.load(wasm, kernels=kernels) as session:
            for shape in ((2, 7, 8), (1, 1, 8), (3, 16, 8)):
                run = {"x": np.random.default_rng(shape[1]).standard_normal(shape).astype(
                    np.float32)}
                compare_with_ort(session.run(run), data, run, f"{shape} on {kernels}")
