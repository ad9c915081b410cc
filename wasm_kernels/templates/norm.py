"""The norm family: group normalisation of x(n, groups * channels, spatial).

Per (image, group), the mean and biased variance fold over the group's contiguous
``channels * spatial`` floats; then each channel is one affine map ``y = x * a + b`` with
``a = gamma[ch] / sqrt(var + eps)`` and ``b = beta[ch] - mean * a`` (rows.row_map).
"""

from __future__ import annotations

from ..abi import KernelSpec
from ..wasm import Code, FuncType
from .isa import ISAS
from .loops import strided_loop
from .rows import row_fold, row_map, splat_scalar


def emit(spec: KernelSpec, isa_name: str) -> tuple[FuncType, Code]:
    """Generate ``f32_group_norm`` for ``isa_name``."""
    isa = ISAS[isa_name]
    c = Code(spec.param_types)
    arg = {p.split(":")[0]: i for i, p in enumerate(spec.params)}
    size, count, inv, block, ch, channel_bytes = (c.local("i32"), c.local("i32"),
                                                  c.local("f32"), c.local("i32"),
                                                  c.local("i32"), c.local("i32"))
    # size = channels * spatial floats per group; inv = 1 / size
    c.emit("f32.const", 1.0)
    c.emit("local.get", arg["channels"]).emit("local.get", arg["spatial"]).emit("i32.mul")
    c.emit("local.tee", size).emit("f32.convert_i32_u").emit("f32.div").emit("local.set", inv)
    c.emit("local.get", arg["spatial"]).emit("i32.const", 2).emit("i32.shl")
    c.emit("local.set", channel_bytes)
    # count = n * groups blocks; the channel index into gamma/beta wraps every group*channels
    c.emit("local.get", arg["n"]).emit("local.get", arg["groups"]).emit("i32.mul")
    c.emit("local.set", count)
    gamma, beta = c.local("i32"), c.local("i32")

    def group() -> None:
        # gamma/beta restart at each image: block % groups * channels
        c.emit("local.get", block).emit("local.get", arg["groups"]).emit("i32.rem_u")
        c.emit("local.get", arg["channels"]).emit("i32.mul").emit("i32.const", 2)
        c.emit("i32.shl").emit("local.tee", gamma).emit("local.get", arg["beta"])
        c.emit("i32.add").emit("local.set", beta)
        c.emit("local.get", gamma).emit("local.get", arg["gamma"]).emit("i32.add")
        c.emit("local.set", gamma)
        row_fold(c, isa, [arg["x"]], size, "add", lambda e: e[0])
        c.emit("local.get", inv).emit("f32.mul")
        mean = splat_scalar(c, isa)
        row_fold(c, isa, [arg["x"]], size, "add", lambda e: (e[0] - e[1]) * (e[0] - e[1]),
                 {1: mean})
        c.emit("local.get", inv).emit("f32.mul").emit("local.get", arg["eps"]).emit("f32.add")
        c.emit("f32.sqrt")
        rstd = c.local("f32")
        c.emit("local.set", rstd)
        c.emit("i32.const", 0).emit("local.set", ch)

        def channel() -> None:
            # a = gamma[ch] / std; b = beta[ch] - mean * a
            c.emit("local.get", gamma).emit("f32.load", 2).emit("local.get", rstd)
            c.emit("f32.div")
            a = splat_scalar(c, isa)
            c.emit("local.get", beta).emit("f32.load", 2).emit("local.get", mean[1])
            c.emit("local.get", a[1]).emit("f32.mul").emit("f32.sub")
            b = splat_scalar(c, isa)
            row_map(c, isa, [arg["x"]], arg["y"], arg["spatial"],
                    lambda e: e[0] * e[1] + e[2], {1: a, 2: b})
            for pointer in (arg["x"], arg["y"]):
                c.emit("local.get", pointer).emit("local.get", channel_bytes).emit("i32.add")
                c.emit("local.set", pointer)
            for pointer in (gamma, beta):
                c.emit("local.get", pointer).emit("i32.const", 4).emit("i32.add")
                c.emit("local.set", pointer)

        strided_loop(c, ch, 1, arg["channels"], channel)

    c.emit("i32.const", 0).emit("local.set", block)
    strided_loop(c, block, 1, count, group)
    return FuncType(spec.param_types, spec.results), c
