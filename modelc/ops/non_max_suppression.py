"""non_max_suppression: ONNX's greedy NMS into a fixed-capacity table of ``[batch, class,
box]`` rows and their count, lowered to one ``f32_non_max_suppression`` call."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wasm_kernels import abi

from ..errors import CompileError
from . import OpDef

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node, Shape


def _sizes(shapes: list, attrs: dict[str, Any]) -> tuple[int, int, int, int]:
    """Batches, classes, boxes and the boxes kept per class at most (K)."""
    batches, n, _ = shapes[0]
    classes = shapes[1][1]
    return batches, classes, n, max(min(int(attrs["max_output_boxes_per_class"]), n), 0)


class NonMaxSuppression(OpDef):
    name = "non_max_suppression"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        boxes, scores = shapes[0], shapes[1]
        if dtypes[:2] != ["float32", "float32"]:
            raise CompileError(f"non_max_suppression expects float32 boxes and scores, got "
                               f"{dtypes[0]} and {dtypes[1]}")
        if not all(isinstance(d, int) for d in (*boxes, *scores)):
            raise CompileError(f"non_max_suppression needs fixed shapes, got boxes "
                               f"{list(boxes)} and scores {list(scores)}")
        if len(boxes) != 3 or boxes[2] != 4 or len(scores) != 3 or (
                scores[0], scores[2]) != (boxes[0], boxes[1]):
            raise CompileError(f"non_max_suppression expects boxes (B, N, 4) and scores "
                               f"(B, C, N), got {list(boxes)} and {list(scores)}")
        batches, classes, _, k = _sizes(shapes, attrs)
        return [((batches * classes * k, 3), "int64"), ((1,), "int64")]

    def scratch(self, node: Node) -> tuple[Shape, ...]:
        """Each box's corners, the heap of candidates, the kept boxes' corners."""
        _, _, n, k = _sizes([v.shape for v in node.inputs], node.attrs)
        return ((abi.nms_scratch_floats(n, k),),)

    def lower(self, node: Node, ctx: LowerContext) -> None:
        batches, classes, n, k = _sizes([v.shape for v in node.inputs], node.attrs)
        floor = node.attrs.get("score_threshold")
        for value in (*node.inputs[:2], *node.outputs):
            ctx.address(value)
        ctx.scratch(node)
        for number in (batches, classes, n, k, int(bool(node.attrs.get("center_point_box"))),
                       int(floor is not None)):
            ctx.push(number)
        ctx.push_f32(float(node.attrs.get("iou_threshold", 0.0)))
        ctx.push_f32(0.0 if floor is None else float(floor))
        ctx.call(abi.NMS.name)


OP = NonMaxSuppression()
