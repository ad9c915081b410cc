"""The shape and dtype rules the quantized products share (``qlinear``, ``qconv2d``,
``qmatmul``): their inputs come as (input, scale, zero point) triples, then an optional
bias and an optional (output scale, output zero point) pair, told apart by count."""

from __future__ import annotations

from typing import Any

from nn.functional.quantized import ACTIVATIONS

from ..errors import CompileError
from ._quantized import FLOAT, QUANTIZED, check_pair


def optional(shapes: list, dtypes: list[str], has_bias: bool) -> tuple[Any, Any]:
    """``(bias, output)``: the optional bias and output pair as ``(shape, dtype)`` items (or
    None) after the two operand triples."""
    rest = list(zip(shapes[6:], dtypes[6:]))
    bias = rest.pop(0) if has_bias and len(rest) in (1, 3) else None
    output = rest if len(rest) == 2 else None
    return bias, output


def check_operands(op: str, shapes: list, dtypes: list[str], channels: Any,
                   names: tuple[str, str]) -> None:
    """The two operand triples: quantized tensors, the first's pair per tensor, the
    second's per tensor or (``channels`` not None) per channel.

    Raises:
        CompileError: a dtype or a scale/zero point shape does not fit.
    """
    for index, name in zip((0, 3), names):
        if dtypes[index] not in QUANTIZED:
            raise CompileError(f"{op}: {name} must be int8 or uint8, got {dtypes[index]}")
        check_pair(op, name, (shapes[index + 1], dtypes[index + 1]),
                   (shapes[index + 2], dtypes[index + 2]), channels if index else None)
        if dtypes[index + 2] != dtypes[index]:
            raise CompileError(f"{op}: {name} is {dtypes[index]} but its zero point is "
                               f"{dtypes[index + 2]}")


def result_dtype(op: str, bias: Any, output: Any, channels: Any, attrs: dict[str, Any]) -> str:
    """The output dtype: the output zero point's when requantized, else float32.

    Raises:
        CompileError: a bad bias, output pair or activation.
    """
    if attrs.get("activation", "") not in ACTIVATIONS:
        raise CompileError(f"{op}: activation {attrs['activation']!r} is not one of "
                           f"{list(ACTIVATIONS)}")
    if bias is not None:
        if tuple(bias[0]) != (channels,) or bias[1] not in ("int32", FLOAT):
            raise CompileError(f"{op}: bias must be int32 or float32 of shape [{channels}], "
                               f"got {bias[1]} {list(bias[0])}")
        if bias[1] == FLOAT and output is not None:
            raise CompileError(f"{op}: a requantized output takes an int32 bias (scale "
                               "input_scale * weight_scale), got float32")
    if output is None:
        return FLOAT
    check_pair(op, "output", output[0], output[1])
    return output[1][1]
