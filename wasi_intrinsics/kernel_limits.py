"""The host kernel provider under the caller's limits: a bad operand is a trap named after
the kernel, as it is in wasm, and the time and memory limits hold between and inside calls.

numpy work cannot be interrupted, so the deadline is checked before and after each kernel,
and temporaries that guest-chosen geometry (padding, dilation) could make larger than the
operands are checked against ``max_bytes`` before they are allocated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from .intrinsic import HostContext
from .wasi.deadline import DeadlineExceeded, remaining


class KernelFault(Exception):
    """A host kernel refused its operands: ``code`` is the trap code the wasm kernel gives
    for the same operands (``out_of_bounds``, ``unreachable``), or ``memory`` when a
    temporary would exceed the memory limit. The runtime raises it as ``Trap``."""

    def __init__(self, code: str, message: str):
        self.code = code
        super().__init__(message)


class OperandFault(Exception):
    """Raised inside a kernel; ``guarded`` names the kernel and raises ``KernelFault``."""

    def __init__(self, code: str, message: str):
        self.code = code
        super().__init__(message)


def _no_deadline() -> float | None:
    return None


@dataclass
class KernelState:
    """What host kernels know of their caller's limits: its deadline (as ``WasiState``'s)
    and the most bytes one temporary may take (``None``: no cap)."""

    deadline: Callable[[], float | None] = field(default=_no_deadline)
    max_bytes: int | None = None


def check_bytes(ctx: HostContext, nbytes: int, what: str) -> None:
    """Raises: OperandFault: ``memory``, when ``nbytes`` is over the caller's cap."""
    cap = getattr(ctx.state, "max_bytes", None)
    if cap is not None and nbytes > cap:
        raise OperandFault("memory", f"{what} would take {nbytes} bytes of host memory, over "
                                     f"the limit of {cap} bytes")


def guarded(module: str, name: str, run: Callable[..., None]) -> Callable[..., None]:
    """``run`` as kernel ``module!name``: faults become ``KernelFault`` naming it, and the
    caller's deadline is checked before and after."""
    where = f"{module}!{name}"

    def call(ctx: HostContext, *args: int) -> None:
        _check_deadline(ctx, where)
        try:
            run(ctx, *args)
        except OperandFault as fault:
            raise KernelFault(fault.code, f"{fault} in {where}") from None
        except ZeroDivisionError:  # NOTE: a zero size or group count, as i32.div_u traps
            raise KernelFault("division", f"integer divide by zero in {where}") from None
        except (ValueError, IndexError) as error:  # NOTE: numpy refusing guest geometry
            raise KernelFault("out_of_bounds", f"operands that do not fit ({error}) in "
                                               f"{where}") from None
        except MemoryError:
            raise KernelFault("memory", f"out of host memory in {where}") from None
        _check_deadline(ctx, where)

    return call


def _check_deadline(ctx: HostContext, where: str) -> None:
    if isinstance(ctx.state, KernelState) and remaining(ctx) == 0.0:
        raise DeadlineExceeded(where)
