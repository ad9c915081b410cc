"""Declaring a WASI call: the body raises, the guest gets an errno; only ``proc_exit`` unwinds."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from ..intrinsic import HostContext, IntrinsicModule, NoMemory, i32
from .errno import Errno, WasiError, from_os_error

log = logging.getLogger("wasi_intrinsics.wasi")

F = TypeVar("F", bound=Callable[..., None])


def syscall(module: IntrinsicModule) -> Callable[[F], F]:
    """Decorator: declare ``fn(ctx, *params) -> None`` on ``module`` as a call returning errno.

    ``fn`` signals failure by raising ``WasiError`` (``GuestFault`` for bad pointers) or by
    letting a host ``OSError`` through; both become the errno the guest sees, as does
    ``NoMemory`` (EFAULT: a caller without memory can name no valid pointer) and
    ``OverflowError`` (EINVAL: an offset or size past what the host represents). ``ENOSYS`` is
    logged. Any other exception (``ProcExit``, or a bug) propagates and unwinds the guest.
    """
    def declare(fn: F) -> F:
        @functools.wraps(fn)
        def call(ctx: HostContext, *args: Any) -> int:
            try:
                fn(ctx, *args)
            except WasiError as error:
                if error.errno == Errno.ENOSYS:
                    log.warning("WASI call %s is not implemented; returned ENOSYS", fn.__name__)
                return int(error.errno)
            except OSError as error:
                return int(from_os_error(error))
            except OverflowError:
                # NOTE: a size or offset the host cannot represent (>= 2^63), as Linux does.
                return int(Errno.EINVAL)
            except NoMemory:
                return int(Errno.EFAULT)  # NOTE: no memory, so every pointer is outside it
            return int(Errno.SUCCESS)

        call.__annotations__ = {**fn.__annotations__, "return": i32}
        module.function(call, name=fn.__name__)
        return fn

    return declare
