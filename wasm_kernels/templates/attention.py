"""The attention family: ``f32_head_attention[_bias|_add]``, each head's
``softmax(Q K^T [+ mask]) V`` in blocks of ``ATTENTION_ROWS`` query rows.

Per block, the gemm family's in-place tiles (``gemm.in_place``) write the block's scores
into the scratch (Q's rows read where the projection left them, every ``heads * d`` floats;
K^T's rows in place; the mask added as the tiles store, a row for all or one per query
row), the row-wise softmax (``rowwise.ROWS``) turns each row into weights where it lies, and
the same tiles multiply them by the head's V (copied dense once per head) straight into the
head's columns of Y. The block's scores (8 KiB at 128 keys) so stay in L1, and the heads
are not permuted into dense copies before or after.
"""

from __future__ import annotations

from ..abi import ATTENTION_ROWS, KernelSpec
from ..wasm import Code, FuncType
from . import gemm
from .dense_tile import DenseFrame
from .isa import ISAS, Isa
from .rows import row_map
from .rowwise import ROWS


def emit(spec: KernelSpec, isa_name: str) -> tuple[FuncType, Code]:
    """Generate attention kernel ``spec`` for ``isa_name``."""
    isa = ISAS[isa_name]
    c = Code(spec.param_types)
    arg = {p: i for i, p in enumerate(spec.params)}
    ld, head, t_bytes = (c.local("i32") for _ in range(3))
    # ld = heads * d * 4: the byte stride of Q's, V's and Y's rows; head = d * src * 4: one
    # head of K^T
    c.emit("local.get", arg["heads"]).emit("local.get", arg["d"]).emit("i32.mul")
    c.emit("i32.const", 2).emit("i32.shl").emit("local.set", ld)
    c.emit("local.get", arg["d"]).emit("local.get", arg["src"]).emit("i32.mul")
    c.emit("i32.const", 2).emit("i32.shl").emit("local.set", head)
    c.emit("local.get", arg["t"]).emit("local.get", ld).emit("i32.mul").emit("local.set", t_bytes)
    c.emit("block").emit("loop")
    c.emit("local.get", arg["batch"]).emit("i32.eqz").emit("br_if", 1)
    _heads(c, isa, arg, spec.epilogue, ld, head)
    # the next batch element: Q and Y t rows on, V src rows on, K^T heads on, the mask a row
    for pointer, stride in (("q", t_bytes), ("y", t_bytes)):
        c.emit("local.get", arg[pointer]).emit("local.get", stride).emit("i32.add")
        c.emit("local.set", arg[pointer])
    c.emit("local.get", arg["v"]).emit("local.get", arg["src"]).emit("local.get", ld)
    c.emit("i32.mul").emit("i32.add").emit("local.set", arg["v"])
    c.emit("local.get", arg["kt"]).emit("local.get", arg["heads"]).emit("local.get", head)
    c.emit("i32.mul").emit("i32.add").emit("local.set", arg["kt"])
    if "mask" in arg:
        c.emit("local.get", arg["mask"]).emit("local.get", arg["mask_stride"])
        c.emit("i32.const", 2).emit("i32.shl").emit("i32.add").emit("local.set", arg["mask"])
    c.emit("local.get", arg["batch"]).emit("i32.const", 1).emit("i32.sub")
    c.emit("local.set", arg["batch"])
    c.emit("br", 0).emit("end").emit("end")
    return FuncType(spec.param_types, spec.results), c


def _heads(c: Code, isa: Isa, arg: dict[str, int], epilogue: tuple[str, ...], ld: int,
           head: int) -> None:
    """Every head of one batch element, block of query rows by block; ``epilogue`` is the
    row's: how the mask is added."""
    h, i0, m, row_bytes = (c.local("i32") for _ in range(4))
    q, kt, v, y, dense_v = (c.local("i32") for _ in range(5))
    block_mask = c.local("i32")  # with a mask per query row: the block's first row's
    # the mask: one row added to every score row (bias), or a row per query row (add, with
    # the scores' row stride)
    mask = ({"bias": arg["mask"]} if "bias" in epilogue else
            {"r": block_mask} if "add" in epilogue else {})
    scores = _frame(c, isa, arg, {"a": q, "b": kt, "c": arg["s"], "m": m, "k": arg["d"],
                                  "n": arg["src"], **mask})
    products = _frame(c, isa, arg, {"a": arg["s"], "b": dense_v, "c": y, "m": m,
                                    "k": arg["src"], "n": arg["d"]})
    v_bytes = c.local("i32")
    # the scores: A is Q's rows (ld apart), B the head's K^T (src floats a row), C the
    # block; the products: A the block, B the head's V copied dense (d floats a row) after
    # the block, C Y's rows (ld apart)
    c.emit("local.get", arg["src"]).emit("i32.const", 2).emit("i32.shl")
    c.emit("local.set", row_bytes)
    c.emit("local.get", arg["d"]).emit("i32.const", 2).emit("i32.shl").emit("local.set", v_bytes)
    c.emit("local.get", arg["s"]).emit("local.get", row_bytes).emit("i32.const", ATTENTION_ROWS)
    c.emit("i32.mul").emit("i32.add").emit("local.set", dense_v)
    for frame, strides in ((scores, (ld, row_bytes, row_bytes)),
                           (products, (row_bytes, v_bytes, ld))):
        for stride, value in zip((frame.lda, frame.ldb, frame.ldc), strides):
            c.emit("local.get", value).emit("local.set", stride)
    c.emit("i32.const", 0).emit("local.set", h)
    c.emit("block").emit("loop")
    c.emit("local.get", h).emit("local.get", arg["heads"]).emit("i32.ge_u").emit("br_if", 1)
    # this head's columns: Q, V and Y h * d floats on, K^T h heads on
    for pointer, base in ((q, "q"), (v, "v"), (y, "y")):
        c.emit("local.get", arg[base]).emit("local.get", h).emit("local.get", arg["d"])
        c.emit("i32.mul").emit("i32.const", 2).emit("i32.shl").emit("i32.add")
        c.emit("local.set", pointer)
    c.emit("local.get", arg["kt"]).emit("local.get", h).emit("local.get", head).emit("i32.mul")
    c.emit("i32.add").emit("local.set", kt)
    _copy_rows(c, isa, v, dense_v, arg["src"], arg["d"], ld)
    c.emit("i32.const", 0).emit("local.set", i0)
    c.emit("block").emit("loop")
    c.emit("local.get", i0).emit("local.get", arg["rows"]).emit("i32.ge_u").emit("br_if", 1)
    # m = min(ATTENTION_ROWS, rows - i0)
    c.emit("local.get", arg["rows"]).emit("local.get", i0).emit("i32.sub").emit("local.tee", m)
    c.emit("i32.const", ATTENTION_ROWS).emit("local.get", m).emit("i32.const", ATTENTION_ROWS)
    c.emit("i32.lt_u").emit("select").emit("local.set", m)
    if "r" in mask:
        # block_mask = mask + i0 * src * 4
        c.emit("local.get", arg["mask"]).emit("local.get", i0).emit("local.get", row_bytes)
        c.emit("i32.mul").emit("i32.add").emit("local.set", block_mask)
    gemm.in_place(scores)
    _softmax_rows(c, isa, arg["s"], m, arg["src"], row_bytes)
    gemm.in_place(products)
    # the next block: Q's and Y's pointers m rows on
    for pointer in (q, y):
        c.emit("local.get", pointer).emit("local.get", m).emit("local.get", ld).emit("i32.mul")
        c.emit("i32.add").emit("local.set", pointer)
    c.emit("local.get", i0).emit("local.get", m).emit("i32.add").emit("local.set", i0)
    c.emit("br", 0).emit("end").emit("end")
    c.emit("local.get", h).emit("i32.const", 1).emit("i32.add").emit("local.set", h)
    c.emit("br", 0).emit("end").emit("end")


def _frame(c: Code, isa: Isa, arg: dict[str, int], operands: dict[str, int]) -> DenseFrame:
    """A dense frame over ``operands`` (the gemm names ``a``, ``b``, ``c``, ``m``, ``k``,
    ``n`` and ``bias``, mapped to this kernel's locals) with fresh corner and stride
    locals."""
    return DenseFrame(c, isa, operands, (), *(c.local("i32") for _ in range(5)))


def _softmax_rows(c: Code, isa: Isa, s: int, m: int, n: int, row_bytes: int) -> None:
    """The ``m`` rows of ``n`` scores at ``s`` (``row_bytes`` apart), each a softmax in
    place."""
    row, left = c.local("i32"), c.local("i32")
    c.emit("local.get", s).emit("local.set", row)
    c.emit("local.get", m).emit("local.set", left)
    c.emit("block").emit("loop")
    c.emit("local.get", left).emit("i32.eqz").emit("br_if", 1)
    ROWS["softmax"](c, isa, {"x": row, "y": row, "n": n})
    c.emit("local.get", row).emit("local.get", row_bytes).emit("i32.add").emit("local.set", row)
    c.emit("local.get", left).emit("i32.const", 1).emit("i32.sub").emit("local.set", left)
    c.emit("br", 0).emit("end").emit("end")


def _copy_rows(c: Code, isa: Isa, src: int, dst: int, rows: int, n: int, ld: int) -> None:
    """Copy ``rows`` rows of ``n`` floats, ``ld`` bytes apart at ``src``, densely to ``dst``.
    NOTE: V's rows read in place, 1536 bytes apart in MiniLM, fall into 8 of L1's 64 sets,
    so a head's 128 rows did not stay in L1 between the blocks that reuse them."""
    row, to, left = c.local("i32"), c.local("i32"), c.local("i32")
    c.emit("local.get", src).emit("local.set", row)
    c.emit("local.get", dst).emit("local.set", to)
    c.emit("local.get", rows).emit("local.set", left)
    c.emit("block").emit("loop")
    c.emit("local.get", left).emit("i32.eqz").emit("br_if", 1)
    row_map(c, isa, [row], to, n, lambda e: e[0])
    c.emit("local.get", row).emit("local.get", ld).emit("i32.add").emit("local.set", row)
    c.emit("local.get", to).emit("local.get", n).emit("i32.const", 2).emit("i32.shl")
    c.emit("i32.add").emit("local.set", to)
    c.emit("local.get", left).emit("i32.const", 1).emit("i32.sub").emit("local.set", left)
    c.emit("br", 0).emit("end").emit("end")
