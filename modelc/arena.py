"""The activation arena in linear memory, for the dims of each call.

``plan_memory`` makes the plan symbolic; here it becomes addresses. A buffer whose offset is
the same for every dims gets a constant address. The others are computed at run time by
the exported ``layout(dims...) -> i32`` function, which writes every such address into a
table before the arena, writes the memory the dims need (a ``u32``) just before that
table, and grows memory to it with ``memory.grow``: 0 on success, 1 when memory cannot grow
that far. ``run`` calls it first, so every host (the runtime, a WASI engine, a web page)
gets the same growth, and a host that must place inputs first calls it itself. Growth is
``memory.grow`` alone, so it works the same for a memory that is shared (up to its fixed
maximum) and for one that is not.
"""

from __future__ import annotations

from dataclasses import dataclass

from wasm_kernels.wasm import Code, FuncType, ModuleBuilder

from .graph import Graph, Value
from .passes.plan_memory import MemoryPlan, Monomial

PAGE = 65536
ALIGN = 16
NEED_BYTES = 4
"""The ``u32`` before the address table: the bytes of memory the last ``layout`` dims need."""
LAYOUT_EXPORT = "layout"


def _aligned(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


@dataclass(frozen=True)
class Layout:
    """Where things live in linear memory; every address the module uses derives from it.
    ``table`` maps a plan buffer computed at run time to the address of its table entry;
    ``fixed`` holds every buffer's offset at the dims' smallest values (the run-time
    offset of a buffer not in ``table``)."""

    messages: bytes
    message_at: dict[str, tuple[int, int]]
    reserved_at: int
    weights_base: int
    need_at: int
    table: dict[int, int]
    arena_base: int
    fixed: tuple[int, ...]
    memory_bytes: int
    memory_bytes_max: int

    @property
    def pages(self) -> int:
        return max(1, -(-self.memory_bytes // PAGE))

    def address(self, graph: Graph, value: Value) -> int:
        """``value``'s address at the dims' smallest values."""
        return self.arena_base + self.fixed[graph.meta["slots"][id(value)]]

    def offset_at(self, graph: Graph, value: Value) -> int | None:
        """Where ``layout`` writes ``value``'s address, or None when it is constant."""
        return self.table.get(graph.meta["slots"][id(value)])

    def push(self, code: Code, slot: int, offset: int = 0) -> None:
        """Emit: push the address of byte ``offset`` of plan buffer ``slot``."""
        if slot in self.table:
            code.emit("i32.const", self.table[slot]).emit("i32.load", 2)
            if offset:
                code.emit("i32.const", offset).emit("i32.add")
        else:
            code.emit("i32.const", self.arena_base + self.fixed[slot] + offset)

    def push_value(self, code: Code, graph: Graph, value: Value) -> None:
        """Emit: push ``value``'s address."""
        self.push(code, graph.meta["slots"][id(value)])


def make_layout(graph: Graph, messages: bytes, message_at: dict[str, tuple[int, int]],
                static_end: int, reserve: int, weights_bytes: int) -> Layout:
    """Lay out ``reserve`` bytes for the caller after ``static_end``, then the weights, the
    need slot and address table, then the arena."""
    plan: MemoryPlan = graph.meta["plan"]
    reserved_at = _aligned(static_end)
    weights_base = _aligned(reserved_at + reserve)
    need_at = _aligned(weights_base + weights_bytes)
    moving = [i for i, constant in enumerate(plan.is_constant()) if not constant]
    table = {slot: need_at + NEED_BYTES + 4 * k for k, slot in enumerate(moving)}
    arena_base = _aligned(need_at + NEED_BYTES + 4 * len(moving))
    fixed, _ = plan.evaluate({name: low for name, (low, _) in graph.dims.items()})
    return Layout(messages, message_at, reserved_at, weights_base, need_at, table, arena_base,
                  tuple(fixed), arena_base + graph.meta["arena_bytes_min"],
                  arena_base + graph.meta["arena_bytes"])


def _keep_larger(code: Code, target: int, spare: int) -> None:
    """Pop a u32 and keep it in local ``target`` if it is larger (``spare``: a free local)."""
    code.set(spare).get(spare).get(target).get(spare).get(target).emit("i32.gt_u")
    code.emit("select").set(target)


def _emit_size(code: Code, size: tuple[Monomial, ...], dim_param: dict[str, int],
               result: int, spare: int) -> None:
    """Set local ``result`` to a buffer's aligned size: the largest of its monomials."""
    code.emit("i32.const", 0).set(result)
    for constant, dims in size:
        code.emit("i32.const", constant)
        for dim in dims:
            code.get(dim_param[dim]).emit("i32.mul")
        code.emit("i32.const", ALIGN - 1).emit("i32.add").emit("i32.const", -ALIGN)
        code.emit("i32.and")
        _keep_larger(code, result, spare)


def layout_function(builder: ModuleBuilder, graph: Graph, layout: Layout) -> int:
    """Add ``layout(dims...) -> i32``, exported: see the module docstring. Returns its index."""
    plan: MemoryPlan = graph.meta["plan"]
    dim_param = {name: i for i, name in enumerate(graph.dims)}
    ty = FuncType(("i32",) * len(graph.dims), ("i32",))
    code = builder.code(ty)
    offset, size, spare, end = (code.local("i32") for _ in range(4))
    ends = [code.local("i32") for _ in plan.sizes]
    code.emit("i32.const", 0).set(end)
    for slot, (monomials, below) in enumerate(zip(plan.sizes, plan.below)):
        code.emit("i32.const", 0).set(offset)
        for j in below:
            code.get(ends[j])
            _keep_larger(code, offset, spare)
        if slot in layout.table:
            code.emit("i32.const", layout.table[slot]).get(offset)
            code.emit("i32.const", layout.arena_base).emit("i32.add").emit("i32.store", 2)
        _emit_size(code, monomials, dim_param, size, spare)
        code.get(offset, size).emit("i32.add").tee(ends[slot])
        _keep_larger(code, end, spare)
    # NOTE: the compiler refuses plans over 4 GiB at the dims' largest values, so need fits
    # a u32; the pages it needs are ceil(need / PAGE).
    code.emit("i32.const", layout.need_at)
    code.get(end).emit("i32.const", layout.arena_base).emit("i32.add").tee(end)
    code.emit("i32.store", 2)
    code.get(end).emit("i32.const", 16).emit("i32.shr_u")
    code.get(end).emit("i32.const", PAGE - 1).emit("i32.and").emit("i32.const", 0)
    code.emit("i32.ne").emit("i32.add")
    code.emit("memory.size").emit("i32.sub")
    code.tee(spare).emit("i32.const", 0).emit("i32.gt_s")
    with code.if_():
        code.get(spare).emit("memory.grow").emit("i32.const", -1).emit("i32.eq")
        with code.if_():
            code.emit("i32.const", 1).emit("return")
    code.emit("i32.const", 0)
    return builder.add_function(ty, code, export=LAYOUT_EXPORT)
