"""The WebAssembly binary format: one opcode table (encoding and stack signature of each
instruction) drives the builder (``Code``, checked against the value stack as it is built;
``ModuleBuilder``, which names the module and its functions in a name section), the
interface reader, the whole-module decoder and the text printer (``text.module_text``).

It lives in ``wasm_kernels`` because every other package may depend on ``wasm_kernels``
(the kernel generator, the compiler's code generator and the runtime's linker all use it),
while ``wasm_kernels`` depends on nothing of ours.
"""

from .builder import ModuleBuilder
from .code import Code
from .decode import Export, Import, ModuleInfo, WasmFormatError, read_module
from .encode import instruction
from .opcodes import OPCODES, Op
from .types import ExternType, FuncType, GlobalType, Limits, MemoryType, TableType, is_subtype
from .validate import WasmTypeError

__all__ = [
                    "OPCODES",
                    "Code",
                    "Export",
                    "ExternType",
                    "FuncType",
                    "GlobalType",
                    "Import",
                    "Limits",
                    "MemoryType",
                    "ModuleBuilder",
                    "ModuleInfo",
                    "Op",
                    "TableType",
                    "WasmFormatError",
                    "WasmTypeError",
                    "instruction",
                    "is_subtype",
                    "read_module",
]
