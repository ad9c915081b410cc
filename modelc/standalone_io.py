"""The I/O helper functions of a standalone module, written in wasm over WASI's
``fd_write`` and ``proc_exit``: error exit, parsing of the ``.npy`` header's numbers, and
writing whole buffers."""

from __future__ import annotations

from wasm_kernels.wasm import FuncType, ModuleBuilder

I32 = ("i32",)


def _fail(builder: ModuleBuilder, fd_write: int, proc_exit: int) -> int:
    """fail(message, length): the message to stderr, then exit code 1."""
    ty = FuncType(("i32", "i32"), ())
    c = builder.code(ty, names=("message", "length"))
    c.emit("i32.const", 0).get("message").emit("i32.store", 2)
    c.emit("i32.const", 4).get("length").emit("i32.store", 2)
    for iovec_argument in (2, 0, 1, 8):
        c.emit("i32.const", iovec_argument)
    c.emit("call", fd_write).emit("drop")
    c.emit("i32.const", 1).emit("call", proc_exit).emit("unreachable")
    return builder.add_function(ty, c, name="fail")


def _skip_spaces(builder: ModuleBuilder) -> int:
    """skip_spaces(p) -> the first address from p that holds no space."""
    c = builder.code(FuncType(I32, I32), names=("p",))
    with c.loop():
        c.get("p").emit("i32.load8_u", 0).emit("i32.const", 32).emit("i32.ne").emit("br_if", 1)
        c.get("p").emit("i32.const", 1).emit("i32.add").set("p")
    c.get("p")
    return builder.add_function(FuncType(I32, I32), c, name="skip_spaces")


def _read_uint(builder: ModuleBuilder, skip_spaces: int, cursor: int) -> int:
    """read_uint(p) -> value; global cursor = end of the digits; -1 when there are none."""
    c = builder.code(FuncType(I32, I32), names=("p",))
    for local in ("value", "digit", "start"):
        c.local("i32", local)
    c.get("p").emit("call", skip_spaces).tee("p").set("start")
    with c.loop():
        c.get("p").emit("i32.load8_u", 0).emit("i32.const", 48).emit("i32.sub").tee("digit")
        c.emit("i32.const", 9).emit("i32.gt_u").emit("br_if", 1)
        c.get("value").emit("i32.const", 10).emit("i32.mul").get("digit").emit("i32.add")
        c.set("value").get("p").emit("i32.const", 1).emit("i32.add").set("p")
    c.get("p").emit("global.set", cursor)
    c.get("p", "start").emit("i32.eq")
    with c.if_():
        c.emit("i32.const", -1).emit("return")
    c.get("value")
    return builder.add_function(FuncType(I32, I32), c, name="read_uint")


def _find(builder: ModuleBuilder) -> int:
    """find(start, end, needle, needle_len) -> the address just after the match, or -1."""
    ty = FuncType(("i32",) * 4, I32)
    c = builder.code(ty, names=("start", "end", "needle", "needle_len"))
    c.local("i32", "j")
    with c.loop():
        c.get("start", "needle_len").emit("i32.add").get("end").emit("i32.gt_u").emit("br_if", 1)
        c.emit("i32.const", 0).set("j")
        with c.loop():
            c.get("j", "needle_len").emit("i32.ge_u")
            with c.if_():
                c.get("start", "needle_len").emit("i32.add").emit("return")
            c.get("start", "j").emit("i32.add").emit("i32.load8_u", 0)
            c.get("needle", "j").emit("i32.add").emit("i32.load8_u", 0).emit("i32.ne")
            c.emit("br_if", 1)
            c.get("j").emit("i32.const", 1).emit("i32.add").set("j")
        c.get("start").emit("i32.const", 1).emit("i32.add").set("start")
    c.emit("i32.const", -1)
    return builder.add_function(ty, c, name="find")


def _write_uint(builder: ModuleBuilder) -> int:
    """write_uint(dst, value) -> dst after the decimal digits."""
    ty = FuncType(("i32", "i32"), I32)
    c = builder.code(ty, names=("dst", "value"))
    c.local("i32", "digits")
    c.local("i32", "rest")
    c.get("value").set("rest")
    with c.loop():
        c.get("digits").emit("i32.const", 1).emit("i32.add").set("digits")
        c.get("rest").emit("i32.const", 10).emit("i32.div_u").tee("rest").emit("i32.eqz")
        c.emit("br_if", 1)
    c.get("dst", "digits").emit("i32.add").tee("dst").set("rest")
    with c.loop():
        c.get("rest").emit("i32.const", 1).emit("i32.sub").tee("rest")
        c.get("value").emit("i32.const", 10).emit("i32.rem_u").emit("i32.const", 48)
        c.emit("i32.add").emit("i32.store8", 0)
        c.get("value").emit("i32.const", 10).emit("i32.div_u").tee("value").emit("i32.eqz")
        c.emit("br_if", 1)
    c.get("dst")
    return builder.add_function(ty, c, name="write_uint")


def _write_all(builder: ModuleBuilder, fd_write: int) -> int:
    """write_all(fd, ptr, len) -> errno: fd_write until every byte is out."""
    ty = FuncType(("i32",) * 3, I32)
    c = builder.code(ty, names=("fd", "ptr", "len"))
    c.local("i32", "errno")
    c.local("i32", "written")
    with c.loop():
        c.get("len").emit("i32.eqz").emit("br_if", 1)
        c.emit("i32.const", 0).get("ptr").emit("i32.store", 2)
        c.emit("i32.const", 4).get("len").emit("i32.store", 2)
        c.get("fd").emit("i32.const", 0).emit("i32.const", 1).emit("i32.const", 8)
        c.emit("call", fd_write).tee("errno")
        with c.if_():
            c.get("errno").emit("return")
        c.emit("i32.const", 8).emit("i32.load", 2).tee("written").emit("i32.eqz")
        with c.if_():
            c.emit("i32.const", 29).emit("return")  # EIO: the stream made no progress
        c.get("ptr", "written").emit("i32.add").set("ptr")
        c.get("len", "written").emit("i32.sub").set("len")
    c.emit("i32.const", 0)
    return builder.add_function(ty, c, name="write_all")


def helpers(builder: ModuleBuilder, fd_write: int, proc_exit: int, cursor: int
             ) -> dict[str, int]:
    """Add the functions ``_start`` uses (and ``proc_exit``'s import index): ``fail``,
    ``skip_spaces``, ``read_uint``, ``find``, ``write_uint``, ``write_all``. Returns their
    indices by name."""
    index = {"fail": _fail(builder, fd_write, proc_exit), "skip_spaces": _skip_spaces(builder)}
    index["read_uint"] = _read_uint(builder, index["skip_spaces"], cursor)
    index.update(find=_find(builder), write_uint=_write_uint(builder),
                 write_all=_write_all(builder, fd_write), proc_exit=proc_exit)
    return index
