"""The integer-tensor rows of the kernel ABI (issues #8 and #19): casts between every pair of
element dtypes, comparisons with bool results, and wrapping integer arithmetic. ``abi``
lists them in ``KERNELS``."""

from __future__ import annotations

from .kernel_spec import ELEMENTS, KernelSpec, broadcast_params, short

FLOAT = "float32"
NARROW = ("int16", "uint16", "int8", "uint8")
"""The integer dtypes narrower than 32 bits: computed in i32, stored by their low bits."""


def _cast_math(source: str, target: str) -> str:
    """What element ``x[i]`` of ``source`` becomes in ``target``."""
    if target == "bool":
        return "x[i] != 0 as a numpy bool byte" + (" (NaN is true)" if source == FLOAT else "")
    if source == "bool":
        return f"1{'.0' if target == FLOAT else ''} if the byte x[i] is nonzero else 0"
    if target == FLOAT:
        return "float32(x[i]), rounded to nearest"
    if source == FLOAT and target in ("int32", "int64"):
        return (f"{target}(x[i]) truncated toward zero, saturating at the {target} range; "
                "NaN gives 0")
    if source == FLOAT:
        return ("x[i] truncated toward zero to an int32 (outside its range, or NaN, the "
                f"smallest int32, as x86's conversion in onnxruntime and numpy), then its "
                f"low {8 * ELEMENTS[target][1]} bits as {target}")
    return (f"x[i] as {target}: sign- or zero-extended, or its low bits (two's complement "
            "wrapping, as numpy's astype)")


def _cast(source: str, target: str) -> KernelSpec:
    op = f"{short(source)}_to_{short(target)}"
    return KernelSpec(op, "cast", op, ("x", "y", "n"),
                      f"y[i] = {_cast_math(source, target)} for i < n",
                      dtypes=(source, target))


CASTS: tuple[KernelSpec, ...] = tuple(_cast(s, t) for s in ELEMENTS for t in ELEMENTS
                                      if s != t)
"""A cast between every ordered pair of distinct element dtypes."""

COMPARE_OPS: dict[str, str] = {"eq": "a == b", "ne": "a != b", "lt": "a < b", "le": "a <= b",
                               "gt": "a > b", "ge": "a >= b"}
"""Comparisons by name: ``y`` as a formula in ``a`` and ``b``."""

COMPARE_TYPES: tuple[str, ...] = tuple(ELEMENTS)
"""The operand dtypes of the comparisons (integers by value, a bool as 0 or 1)."""


def _compare(dtype: str, op: str, math: str) -> KernelSpec:
    return KernelSpec(f"{short(dtype)}_cmp_{op}", "compare", op, broadcast_params(),
                      f"y[i0, i1, i2, i3] = {math} as a numpy bool byte (1 or 0) over the "
                      f"dense (d0, d1, d2, d3) output, reading the {dtype} elements "
                      "a[sum(ik * ask)] and b[sum(ik * bsk)]: strides in elements, 0 "
                      "broadcasts" + ("; a NaN operand makes every comparison but != false"
                                      if dtype == FLOAT else " (by value)"),
                      dtypes=(dtype, "bool"), formula=math)


COMPARES: tuple[KernelSpec, ...] = tuple(
    _compare(dtype, op, math) for dtype in COMPARE_TYPES for op, math in COMPARE_OPS.items())

INTEGER_OPS: dict[str, str] = {"add": "a + b", "sub": "a - b", "mul": "a * b",
                               "maximum": "max(a, b)", "minimum": "min(a, b)"}
"""Integer arithmetic by name (issue #19: positions and indices computed at run time, Clip
and Min / Max of integers)."""

INTEGER_TYPES: tuple[str, ...] = ("int32", "int64", *NARROW)
"""The dtypes of the integer arithmetic kernels."""


def _integer(dtype: str, op: str, math: str) -> KernelSpec:
    return KernelSpec(f"{short(dtype)}_{op}", "integer", op, broadcast_params(),
                      f"y[i0, i1, i2, i3] = {math} over the dense (d0, d1, d2, d3) {dtype} "
                      "output, wrapping on overflow, reading a[sum(ik * ask)] and "
                      "b[sum(ik * bsk)]: strides in elements, 0 broadcasts",
                      dtypes=(dtype, dtype), formula=math)


INTEGERS: tuple[KernelSpec, ...] = tuple(
    _integer(dtype, op, math) for dtype in INTEGER_TYPES for op, math in INTEGER_OPS.items())
