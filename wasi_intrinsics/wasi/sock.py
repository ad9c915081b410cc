"""WASI socket calls. The sandbox grants no network, so no fd is ever a socket: a closed fd is
EBADF and any other fd ENOTSOCK."""

from __future__ import annotations

from ..intrinsic import HostContext, IntrinsicModule, i32
from .descriptors import Descriptor
from .errno import Errno, WasiError
from .syscall import syscall

sock = IntrinsicModule("wasi_sock")


def _not_a_socket(ctx: HostContext, file: int) -> None:
    ctx.state.fds.get(file, Descriptor)
    raise WasiError(Errno.ENOTSOCK, f"fd {file} is not a socket")


@syscall(sock)
def sock_accept(ctx: HostContext, file: i32, flags: i32, accepted: i32) -> None:
    """Accept a connection: there are no sockets."""
    _not_a_socket(ctx, file)


@syscall(sock)
def sock_recv(ctx: HostContext, file: i32, ri_data: i32, ri_data_len: i32, ri_flags: i32,
              ro_datalen: i32, ro_flags: i32) -> None:
    """Receive from a socket: there are no sockets."""
    _not_a_socket(ctx, file)


@syscall(sock)
def sock_send(ctx: HostContext, file: i32, si_data: i32, si_data_len: i32, si_flags: i32,
              so_datalen: i32) -> None:
    """Send to a socket: there are no sockets."""
    _not_a_socket(ctx, file)


@syscall(sock)
def sock_shutdown(ctx: HostContext, file: i32, how: i32) -> None:
    """Shut a socket down: there are no sockets."""
    _not_a_socket(ctx, file)
