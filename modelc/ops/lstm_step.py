"""lstm_step: one step of an unrolled LSTM after its product (``nn.functional.lstm_step``,
the steps of onnxruntime's ``DynamicQuantizeLSTM``), lowered to one ``f32_lstm_step`` call:
gates, new c and h, and with ``quantize`` h's dynamic quantization for the next step's
integer product (``f32_lstm_step_dynamic_quantize``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wasm_kernels import abi

from ..errors import CompileError
from . import OpDef

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node, Shape


class LstmStep(OpDef):
    name = "lstm_step"

    def infer(self, shapes: list[Shape], dtypes: list[str],
              attrs: dict[str, Any]) -> list[tuple[Shape, str]]:
        gates, c = shapes[0], shapes[1]
        if len(gates) != 2 or len(c) != 2 or gates[0] != c[0] or gates[1] != 4 * c[1]:
            raise CompileError(f"lstm_step expects gates (B, 4H) and c (B, H), got "
                               f"{list(gates)} and {list(c)}")
        if any(d != "float32" for d in dtypes[:2]):
            raise CompileError(f"lstm_step supports float32 gates and c, got {dtypes[:2]}")
        state = (tuple(c), "float32")
        quantized = [(tuple(c), "uint8"), ((), "float32"), ((), "uint8")]
        return [state, state, *(quantized if attrs.get("quantize") else [])]

    def lower(self, node: Node, ctx: LowerContext) -> None:
        gates, c = node.inputs[:2]
        for value in (gates, c, *node.outputs):
            ctx.address(value)
        ctx.numel(c.shape[:1])
        ctx.numel(c.shape[1:])
        epilogue = ("dynamic_quantize",) if node.attrs.get("quantize") else ()
        ctx.call(abi.find("recurrent", "lstm_step", epilogue).name)


OP = LstmStep()
