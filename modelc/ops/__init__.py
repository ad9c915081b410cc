"""Op definitions, one file per op named after its ``nn.functional`` function.

``modelc/ops/<op>.py`` defines ``OP``, an ``OpDef``: the shape and dtype rule, the lowering
to kernel ABI calls, and which elementwise epilogues may fuse into it. The reference
semantics stay in ``nn.functional``. Ops are found by file name; there is no registry list.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import CompileError, UnsupportedOpError

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node, Shape


class OpDef:
    """What the compiler knows about one op. Subclasses implement ``infer`` and ``lower``."""

    name: str = ""
    epilogues: frozenset[str] = frozenset()
    """Elementwise ops that may be fused into this op's output (see ``fuse_epilogues``)."""
    composite_forms: tuple[Callable[[Any], Any], ...] = ()
    """For a composite with its own kernel: the ``nn.functional`` formulations whose traced
    primitives ``recognize_composites`` turns back into one node of this op."""

    def infer(self, shapes: list[Shape], dtypes: list[str],
              attrs: dict[str, Any]) -> list[tuple[Shape, str]]:
        """Output shapes and dtypes from input shapes, dtypes and attrs.

        Raises:
            CompileError: the inputs do not fit this op.
        """
        raise NotImplementedError

    def lower(self, node: Node, ctx: LowerContext) -> None:
        """Emit the kernel calls that compute ``node`` into ``ctx``.

        Raises:
            CompileError: the op has no wasm lowering (it still traces, optimises and runs
                in the interpreter).
        """
        raise CompileError(f"op {self.name!r} has no WebAssembly lowering yet; it traces, "
                           "optimises and runs in modelc.interpret")

    def scratch(self, node: Node) -> tuple[Shape, ...]:
        """Shapes of the float32 temporaries ``lower`` needs, live only while ``node`` runs;
        ``plan_memory`` places them and ``LowerContext.scratch`` pushes their addresses."""
        return ()

    def input_slices(self, node: Node) -> dict[int, int]:
        """Inputs that may be computed straight into ``node``'s output, by input index: their
        byte offset there. ``plan_memory`` places each inside the output unless it must live
        on its own, and ``lower`` skips those it finds in place (``LowerContext.inside``)."""
        return {}

    def output_views(self, node: Node) -> dict[int, int]:
        """Outputs that are bytes of ``node``'s first input, by output index: their byte
        offset there. ``plan_memory`` lets each share the input's storage unless it must live
        on its own, and ``lower`` skips those it finds in place (``LowerContext.inside``)."""
        return {}

    def accepts_residual(self, residual: Shape, output: Shape) -> bool:
        """Whether a fused residual ``add`` (``fuse_epilogues``) of shape ``residual`` onto
        this op's ``output`` lowers; by default only a residual of the output's own shape."""
        return tuple(residual) == tuple(output)


def available() -> list[str]:
    """Every op with a definition file."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


@functools.cache
def get(op: str) -> OpDef:
    """The ``OpDef`` of ``op``, from ``modelc/ops/<op>.py``.

    Raises:
        UnsupportedOpError: there is no such file; the message lists the available ops.
    """
    if not op.isidentifier() or op not in available():
        raise UnsupportedOpError(f"unknown op {op!r}; available: {available()}")
    return importlib.import_module(f"{__name__}.{op}").OP
