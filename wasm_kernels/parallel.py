"""Intra-op threads for the kernels that split: the dispatch functions.

A model that runs on several threads has its kernels merged into its own module
(``runtime.merge``) and each kernel that splits (``splits``) replaced by a stand-in of the
kernel's own signature (``standin``) that cuts the output into contiguous parts along one
axis (rows of C, batches, output channels, rows of a row-wise op, elements),
``CHUNKS_PER_THREAD`` per thread, and takes parts together with the workers until none is
left. Each worker is an instance of ``build_worker``'s module in its own store and host
thread, importing the same shared linear memory, parked in ``worker`` on
``memory.atomic.wait32`` (a dispatch measured ~12 us, against ~60 us for a host-side
barrier). So every store holds exactly one module that touches the linear memory, which
keeps wasmtime's guard pages usable (see ``runtime.threads``). Every part is the unmodified
kernel called on a sub-range that starts at a multiple of the kernel's tile, so each output
element is computed by the same instructions as on one thread: results are bit-identical.
Work below a kernel's ``threshold`` stays on the calling thread.

The job travels through a one-page shared *control* memory (``CONTROL``, memory 1 of every
module holding these functions): the kernels' pointers are passed through untouched.

Host-called exports (``EXPORTS``): ``reset(threads)`` before a call's workers enter,
``worker(part)`` (returns once ``release`` is called), ``fail()`` (a worker's host marks
the call failed after its worker trapped; the caller then traps ``unreachable``) and
``release()`` (workers leave ``worker``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from . import abi
from .build import MAX_PAGES, generate
from .parallel_parts import ARGS_AT as _ARGS
from .parallel_parts import CONTROL_MEMORY as _CTL
from .parallel_parts import arg_names, part_body
from .splits import AUTO_WEIGHTS as AUTO_WEIGHTS
from .splits import DENSE_THRESHOLD as DENSE_THRESHOLD
from .splits import GROUP_SPLIT_MIN
from .splits import STREAM_THRESHOLD as STREAM_THRESHOLD
from .splits import Split as Split
from .splits import splits as splits
from .wasm import Code, FuncType, Limits, MemoryType, ModuleBuilder

CONTROL = ("wasmnn_threads", "control")
"""Where the module imports its control memory: one shared page, ``(1, 1, shared)``."""
CONTROL_TYPE = MemoryType(Limits(1, 1), shared=True)
MEMORY_TYPE = MemoryType(Limits(1, MAX_PAGES))
"""The linear memory a threaded module defines (unshared: see ``build_worker``)."""
EXPORTS = {name: f"wasmnn_threads:{name}" for name in ("reset", "worker", "fail", "release")}
"""The export name of each host-called dispatch function (prefixed: a model merged with them
keeps its own exports)."""
MEMORY_EXPORTS = {name: f"wasmnn_threads:{name}" for name in ("memory", "control")}
"""The export names of a merged model's linear memory and control memory (``runtime.merge``)."""

# Control words (byte offsets in the control memory): the job's generation, parts done,
# kernel, team size, failure flag, part count, the next part to take (an i64: generation in
# the high half), the caller's memory size in pages; the kernel's arguments follow at
# ``parallel_parts.ARGS_AT``.
_GEN, _DONE, _KERNEL, _THREADS, _FAILED, _CHUNKS, _NEXT, _PAGES, _SPIN = (
    0, 4, 8, 12, 16, 20, 24, 32, 36)
_STOP = -1
CHUNKS_PER_THREAD = 4
"""Parts per thread in a job: threads take parts until none is left, so one that the OS
preempts delays the call by at most the part it holds, not by its whole share."""
_AWAIT_NS = 1_000_000  # the caller re-checks for a failed worker (and its limits) this often


class Bodies(Protocol):
    """Where dispatch functions are defined: a ``ModuleBuilder``, or the function space of a
    model that kernels are merged into (``runtime.merge``)."""

    def code(self, ty: FuncType, names: Sequence[str] = ()) -> Code: ...

    def add_function(self, ty: FuncType, code: Code, export: str | None = None,
                     name: str | None = None) -> int: ...


@dataclass(frozen=True)
class Helpers:
    """The indices of the dispatch functions ``add_helpers`` defined."""

    work: int
    awaiting: int


def add_helpers(b: Bodies, isa: str, names: Sequence[str], serial: Sequence[int]) -> Helpers:
    """Define the functions every thread of a team runs, for the kernels ``names`` that split
    (their one-thread bodies at ``serial``): one ``<kernel>_part`` each, ``work``, ``await``,
    and the exports ``EXPORTS`` (``reset``, ``worker``, ``fail``, ``release``).

    Raises:
        ValueError: a name is not a kernel that splits.
    """
    table = splits(isa)
    unknown = sorted(set(names) - table.keys())
    if unknown:
        raise ValueError(f"kernels that do not split: {unknown}; available: {sorted(table)}")
    specs = [abi.BY_NAME[n] for n in names]
    parts = []
    for spec, body in zip(specs, serial):
        code = b.code(FuncType(("i32", "i32"), ()), names=("part", "parts"))
        part_body(code, spec, table[spec.name], body)
        parts.append(b.add_function(FuncType(("i32", "i32"), ()), code, name=f"{spec.name}_part"))
    work = b.add_function(FuncType(("i32",), ()), _work(b, parts), name="work")
    awaiting = b.add_function(FuncType((), ()), _await(b), name="await")
    b.add_function(FuncType(("i32", "i32"), ()), _reset(b), export=EXPORTS["reset"])
    b.add_function(FuncType(("i32",), ()), _worker(b, work), export=EXPORTS["worker"])
    b.add_function(FuncType((), ()), _fail(b), export=EXPORTS["fail"])
    b.add_function(FuncType((), ()), _release(b), export=EXPORTS["release"])
    return Helpers(work, awaiting)


def standin(b: Bodies, isa: str, names: Sequence[str], name: str, serial: int,
            helpers: Helpers) -> Code:
    """The body that stands in for kernel ``name`` (one of ``names``, the kernels
    ``add_helpers`` defined parts for, in that order) with its signature: small work, or a
    team of one, calls its one-thread body at ``serial``; otherwise it posts the job and takes
    parts of it with the workers."""
    spec = abi.BY_NAME[name]
    return _dispatch(b, spec, splits(isa)[name], list(names).index(name), serial,
                     helpers.work, helpers.awaiting)


def build_worker(isa: str, names: frozenset[str]) -> bytes:
    """A worker's module for the kernels ``names`` that split (see ``splits``): it imports
    the control memory (``CONTROL``, memory 0) and defines the linear memory (memory 1, which
    the runtime backs with the caller's: see ``runtime.host_memory``), holds those kernels'
    one-thread bodies and exports ``EXPORTS``. Each worker's store holds one instance of it,
    the one module there that touches the linear memory. NOTE: every body is written for the
    merged model's numbering (linear memory 0, control 1) and renumbered here: imported
    memories come first, and a defined memory is reached through one pointer less than an
    imported one (cranelift at opt level ``none`` reloads it on every access).

    Raises:
        ValueError: a name is not a kernel that splits.
    """
    b = ModuleBuilder(abi.MODULE)
    b.import_memory(*CONTROL, CONTROL_TYPE)
    b.add_memory(MEMORY_TYPE)
    b.export(MEMORY_EXPORTS["memory"], "memory", 1)  # NOTE: after the imported one
    swapped = _Renumbered(b, {0: 1, 1: 0})
    ordered = sorted(names)
    serial = []
    for name in ordered:
        ty, code = generate(abi.BY_NAME[name], isa)
        serial.append(swapped.add_function(ty, code, name=name))
    add_helpers(swapped, isa, ordered, serial)
    return b.encode()


@dataclass(frozen=True)
class _Renumbered:
    """Function bodies added to ``builder`` with their memories renumbered by ``mapping``."""

    builder: ModuleBuilder
    mapping: dict[int, int]

    def code(self, ty: FuncType, names: Sequence[str] = ()) -> Code:
        return self.builder.code(ty, names)

    def add_function(self, ty: FuncType, code: Code, export: str | None = None,
                     name: str | None = None) -> int:
        code.renumber_memories(self.mapping)
        return self.builder.add_function(ty, code, export, name)


def _dispatch(b: Bodies, spec: abi.KernelSpec, split: Split, index: int, serial: int,
              work: int, awaiting: int) -> Code:
    """The kernel's stand-in: small work or one thread calls it as is; otherwise post the
    job (a new generation, ``CHUNKS_PER_THREAD`` parts a thread, or one), take parts with the
    workers, wait for the last, and trap if a worker failed."""
    c = b.code(FuncType(spec.param_types, spec.results))
    arg = {name: i for i, name in enumerate(arg_names(spec))}
    threads, gen = c.local("i32"), c.local("i32")
    c.emit("i32.const", 0).emit("i32.load", 2, _THREADS, _CTL).emit("local.set", threads)
    # work = count * product(work) in i64, so large shapes do not wrap
    c.emit("local.get", arg[split.count]).emit("i64.extend_i32_u")
    for factor in split.work:
        c.emit("local.get", arg[factor]).emit("i64.extend_i32_u").emit("i64.mul")
    c.emit("i64.const", split.threshold).emit("i64.lt_u")
    c.emit("local.get", threads).emit("i32.const", 2).emit("i32.lt_u").emit("i32.or")
    for param, value in split.only.items():
        c.emit("local.get", arg[param]).emit("i32.const", value).emit("i32.ne").emit("i32.or")
    for param in split.same:
        c.emit("local.get", arg[param]).emit("local.get", arg[split.count]).emit("i32.ne")
        c.emit("i32.or")
    if split.groups_when:
        # serial |= groups != 1 & (a parameter of groups_when off its value)
        c.emit("local.get", arg["groups"]).emit("i32.const", 1).emit("i32.ne")
        c.emit("i32.const", 0)
        for param, value in split.groups_when.items():
            c.emit("local.get", arg[param]).emit("i32.const", value).emit("i32.ne").emit("i32.or")
        c.emit("i32.and").emit("i32.or")
    c.emit("if")
    for i in range(len(spec.params)):
        c.emit("local.get", i)
    c.emit("call", serial).emit("return").emit("end")
    # NEXT = gen << 32 first: a worker still in the last job's ``work`` then fails its
    # compare-and-swap, so it never takes a part against this job's CHUNKS (a larger count
    # let it take a stale part, count it in this job's DONE, and leave DONE past CHUNKS)
    c.emit("i32.const", 0).emit("i32.atomic.load", 2, _GEN, _CTL).emit("i32.const", 1)
    c.emit("i32.add").emit("local.set", gen)
    c.emit("i32.const", 0).emit("local.get", gen).emit("i64.extend_i32_u")
    c.emit("i64.const", 32).emit("i64.shl").emit("i64.atomic.store", 3, _NEXT, _CTL)
    for i, kind in enumerate(spec.param_types):
        c.emit("i32.const", 0).emit("local.get", i).emit(f"{kind}.store", 2, _ARGS + 4 * i, _CTL)
    c.emit("i32.const", 0).emit("i32.const", index).emit("i32.store", 2, _KERNEL, _CTL)
    c.emit("i32.const", 0).emit("local.get", threads)
    if split.one_part_when is None:
        c.emit("i32.const", CHUNKS_PER_THREAD)
    else:
        # a call cut by groups reads each group's operands in one part only
        wide, narrow = split.one_part_when
        c.emit("i32.const", 1).emit("i32.const", CHUNKS_PER_THREAD)
        c.emit("local.get", arg[wide]).emit("local.get", arg[narrow]).emit("i32.gt_u")
        if split.by_groups is not None:
            c.emit("local.get", arg["groups"]).emit("i32.const", GROUP_SPLIT_MIN)
            c.emit("i32.lt_u").emit("i32.and")
        c.emit("select")
    c.emit("i32.mul")
    if split.region is not None:
        # parts = min(parts, region.parts)
        parts = c.local("i32")
        c.emit("local.set", parts).emit("i32.const", split.region.parts)
        c.emit("local.get", parts).emit("local.get", parts).emit("i32.const", split.region.parts)
        c.emit("i32.gt_u").emit("select")
    c.emit("i32.store", 2, _CHUNKS, _CTL)
    c.emit("i32.const", 0).emit("i32.const", 0).emit("i32.atomic.store", 2, _DONE, _CTL)
    c.emit("i32.const", 0).emit("memory.size").emit("i32.store", 2, _PAGES, _CTL)
    # then GEN = gen, after the job is written: a worker reads GEN, then the job
    c.emit("i32.const", 0).emit("local.get", gen).emit("i32.atomic.store", 2, _GEN, _CTL)
    c.emit("i32.const", _GEN).emit("local.get", threads).emit("memory.atomic.notify", 2, 0, _CTL)
    c.emit("drop")
    c.emit("local.get", gen).emit("call", work)
    c.emit("call", awaiting)
    c.emit("i32.const", 0).emit("i32.atomic.load", 2, _FAILED, _CTL).emit("if").emit("unreachable")
    c.emit("end")
    return c


def _work(b: Bodies, parts: list[int]) -> Code:
    """``work(gen)``: take parts of job ``gen`` until none is left, run each, count it done
    (notifying the caller after the last). A part is taken by a compare-and-swap of
    ``NEXT`` = (job, next part), so a thread that wakes late never takes a part of a later
    job: it finds another generation there and stops."""
    c = b.code(FuncType(("i32",), ()), names=("gen",))
    seen, part, kernel = c.local("i64"), c.local("i32"), c.local("i32")
    with c.loop():
        c.emit("i32.const", 0).emit("i64.atomic.load", 3, _NEXT, _CTL).emit("local.tee", seen)
        c.emit("i64.const", 32).emit("i64.shr_u").emit("i32.wrap_i64").emit("local.get", 0)
        c.emit("i32.ne").emit("br_if", 1)
        c.emit("local.get", seen).emit("i32.wrap_i64").emit("local.tee", part)
        c.emit("i32.const", 0).emit("i32.load", 2, _CHUNKS, _CTL).emit("i32.ge_u").emit("br_if", 1)
        c.emit("i32.const", 0).emit("local.get", seen).emit("local.get", seen)
        c.emit("i64.const", 1).emit("i64.add").emit("i64.atomic.rmw.cmpxchg", 3, _NEXT, _CTL)
        c.emit("local.get", seen).emit("i64.ne").emit("br_if", 0)  # another took it: retry
        c.emit("i32.const", 0).emit("i32.load", 2, _KERNEL, _CTL).emit("local.set", kernel)
        for index, fn in enumerate(parts):
            c.emit("local.get", kernel).emit("i32.const", index).emit("i32.eq").emit("if")
            c.emit("local.get", part).emit("i32.const", 0).emit("i32.load", 2, _CHUNKS, _CTL)
            c.emit("call", fn).emit("end")
        c.emit("i32.const", 0).emit("i32.const", 1).emit("i32.atomic.rmw.add", 2, _DONE, _CTL)
        c.emit("i32.const", 1).emit("i32.add").emit("i32.const", 0)
        c.emit("i32.load", 2, _CHUNKS, _CTL).emit("i32.eq").emit("if")
        c.emit("i32.const", _DONE).emit("i32.const", 1).emit("memory.atomic.notify", 2, 0, _CTL)
        c.emit("drop").emit("end")
    return c


def _await(b: Bodies) -> Code:
    """Wait until every part is done or a worker failed: re-read ``_SPIN`` times, then
    sleep, waking every ``_AWAIT_NS`` so that the caller's own time or fuel limit can stop
    it."""
    c = b.code(FuncType((), ()))
    done, spins = c.local("i32"), c.local("i32")
    with c.loop():
        c.emit("i32.const", 0).emit("i32.atomic.load", 2, _FAILED, _CTL).emit("br_if", 1)
        c.emit("i32.const", 0).emit("i32.atomic.load", 2, _DONE, _CTL).emit("local.tee", done)
        c.emit("i32.const", 0).emit("i32.load", 2, _CHUNKS, _CTL).emit("i32.eq").emit("br_if", 1)
        _spin(c, spins)
        c.emit("i32.const", _DONE).emit("local.get", done).emit("i64.const", _AWAIT_NS)
        c.emit("memory.atomic.wait32", 2, 0, _CTL).emit("drop")
    return c


def _worker(b: Bodies, work: int) -> Code:
    """``worker(part)``: wait for a new job, take parts of it; until released. Before taking
    parts it grows its own memory to the caller's size (``_PAGES``): the two share their
    bytes (``build_worker``), but each store keeps its own size, which ``memory.copy`` and
    ``memory.fill`` check."""
    c = b.code(FuncType(("i32",), ()), names=("part",))
    seen, gen, grow, spins = (c.local("i32") for _ in range(4))
    with c.loop():
        c.emit("i32.const", 0).emit("i32.atomic.load", 2, _GEN, _CTL).emit("local.tee", gen)
        c.emit("local.get", seen).emit("i32.eq").emit("if")
        _spin(c, spins, depth=1)
        c.emit("i32.const", _GEN).emit("local.get", seen).emit("i64.const", -1)
        c.emit("memory.atomic.wait32", 2, 0, _CTL).emit("drop").emit("br", 1).emit("end")
        c.emit("i32.const", 0).emit("local.set", spins)
        c.emit("local.get", gen).emit("local.set", seen)
        c.emit("i32.const", 0).emit("i32.atomic.load", 2, _KERNEL, _CTL)
        c.emit("i32.const", _STOP).emit("i32.eq").emit("br_if", 1)
        c.emit("i32.const", 0).emit("i32.load", 2, _PAGES, _CTL).emit("memory.size")
        c.emit("i32.sub").emit("local.tee", grow).emit("i32.const", 0).emit("i32.gt_s")
        c.emit("if").emit("local.get", grow).emit("memory.grow").emit("drop").emit("end")
        c.emit("local.get", gen).emit("call", work)
    return c


def _spin(c: Code, spins: int, depth: int = 0) -> None:
    """Inside a loop ``depth`` blocks out: count ``spins`` up and go round again until it
    reaches ``_SPIN`` (then fall through to sleep)."""
    c.emit("local.get", spins).emit("i32.const", 0).emit("i32.load", 2, _SPIN, _CTL)
    c.emit("i32.lt_u").emit("if")
    c.emit("local.get", spins).emit("i32.const", 1).emit("i32.add").emit("local.set", spins)
    c.emit("br", depth + 1).emit("end")


def _reset(b: Bodies) -> Code:
    c = b.code(FuncType(("i32", "i32"), ()), names=("threads", "spin"))
    for word in (_GEN, _DONE, _KERNEL, _FAILED, _CHUNKS):
        c.emit("i32.const", 0).emit("i32.const", 0).emit("i32.atomic.store", 2, word, _CTL)
    c.emit("i32.const", 0).emit("i64.const", 0).emit("i64.atomic.store", 3, _NEXT, _CTL)
    c.emit("i32.const", 0).emit("local.get", 0).emit("i32.atomic.store", 2, _THREADS, _CTL)
    c.emit("i32.const", 0).emit("local.get", 1).emit("i32.atomic.store", 2, _SPIN, _CTL)
    return c


def _fail(b: Bodies) -> Code:
    c = b.code(FuncType((), ()))
    c.emit("i32.const", 0).emit("i32.const", 1).emit("i32.atomic.store", 2, _FAILED, _CTL)
    c.emit("i32.const", _DONE).emit("i32.const", 1).emit("memory.atomic.notify", 2, 0, _CTL)
    c.emit("drop")
    return c


def _release(b: Bodies) -> Code:
    c = b.code(FuncType((), ()))
    c.emit("i32.const", 0).emit("i32.const", _STOP).emit("i32.atomic.store", 2, _KERNEL, _CTL)
    c.emit("i32.const", 0).emit("i32.const", 1).emit("i32.atomic.rmw.add", 2, _GEN, _CTL)
    c.emit("drop")
    c.emit("i32.const", _GEN).emit("i32.const", -1).emit("memory.atomic.notify", 2, 0, _CTL)
    c.emit("drop")
    return c
