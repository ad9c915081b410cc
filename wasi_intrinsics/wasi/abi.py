"""Preview1 constants and flag sets (witx ``typenames``), one enum per witx type."""

from __future__ import annotations

from enum import IntEnum, IntFlag


class Filetype(IntEnum):
    UNKNOWN = 0
    BLOCK_DEVICE = 1
    CHARACTER_DEVICE = 2
    DIRECTORY = 3
    REGULAR_FILE = 4
    SOCKET_DGRAM = 5
    SOCKET_STREAM = 6
    SYMBOLIC_LINK = 7


class Rights(IntFlag):
    FD_DATASYNC = 1 << 0
    FD_READ = 1 << 1
    FD_SEEK = 1 << 2
    FD_FDSTAT_SET_FLAGS = 1 << 3
    FD_SYNC = 1 << 4
    FD_TELL = 1 << 5
    FD_WRITE = 1 << 6
    FD_ADVISE = 1 << 7
    FD_ALLOCATE = 1 << 8
    PATH_CREATE_DIRECTORY = 1 << 9
    PATH_CREATE_FILE = 1 << 10
    PATH_LINK_SOURCE = 1 << 11
    PATH_LINK_TARGET = 1 << 12
    PATH_OPEN = 1 << 13
    FD_READDIR = 1 << 14
    PATH_READLINK = 1 << 15
    PATH_RENAME_SOURCE = 1 << 16
    PATH_RENAME_TARGET = 1 << 17
    PATH_FILESTAT_GET = 1 << 18
    PATH_FILESTAT_SET_SIZE = 1 << 19
    PATH_FILESTAT_SET_TIMES = 1 << 20
    FD_FILESTAT_GET = 1 << 21
    FD_FILESTAT_SET_SIZE = 1 << 22
    FD_FILESTAT_SET_TIMES = 1 << 23
    PATH_SYMLINK = 1 << 24
    PATH_REMOVE_DIRECTORY = 1 << 25
    PATH_UNLINK_FILE = 1 << 26
    POLL_FD_READWRITE = 1 << 27
    SOCK_SHUTDOWN = 1 << 28
    SOCK_ACCEPT = 1 << 29


# What each kind of descriptor can ever hold; an open intersects these with what was granted.
FILE_RIGHTS = (Rights.FD_DATASYNC | Rights.FD_READ | Rights.FD_SEEK | Rights.FD_FDSTAT_SET_FLAGS
               | Rights.FD_SYNC | Rights.FD_TELL | Rights.FD_WRITE | Rights.FD_ADVISE
               | Rights.FD_ALLOCATE | Rights.FD_FILESTAT_GET | Rights.FD_FILESTAT_SET_SIZE
               | Rights.FD_FILESTAT_SET_TIMES | Rights.POLL_FD_READWRITE)
DIRECTORY_RIGHTS = (Rights.FD_FDSTAT_SET_FLAGS | Rights.FD_SYNC | Rights.FD_ADVISE
                    | Rights.PATH_CREATE_DIRECTORY | Rights.PATH_CREATE_FILE
                    | Rights.PATH_LINK_SOURCE | Rights.PATH_LINK_TARGET | Rights.PATH_OPEN
                    | Rights.FD_READDIR | Rights.PATH_READLINK | Rights.PATH_RENAME_SOURCE
                    | Rights.PATH_RENAME_TARGET | Rights.PATH_FILESTAT_GET
                    | Rights.PATH_FILESTAT_SET_SIZE | Rights.PATH_FILESTAT_SET_TIMES
                    | Rights.FD_FILESTAT_GET | Rights.FD_FILESTAT_SET_TIMES | Rights.PATH_SYMLINK
                    | Rights.PATH_REMOVE_DIRECTORY | Rights.PATH_UNLINK_FILE)
# Rights that change the file system: a read-only preopen withholds them.
WRITE_RIGHTS = (Rights.FD_DATASYNC | Rights.FD_WRITE | Rights.FD_ALLOCATE
                | Rights.FD_FILESTAT_SET_SIZE | Rights.FD_FILESTAT_SET_TIMES
                | Rights.PATH_CREATE_DIRECTORY | Rights.PATH_CREATE_FILE
                | Rights.PATH_LINK_SOURCE | Rights.PATH_LINK_TARGET | Rights.PATH_RENAME_SOURCE
                | Rights.PATH_RENAME_TARGET | Rights.PATH_FILESTAT_SET_SIZE
                | Rights.PATH_FILESTAT_SET_TIMES | Rights.PATH_SYMLINK
                | Rights.PATH_REMOVE_DIRECTORY | Rights.PATH_UNLINK_FILE)
ALL_RIGHTS = FILE_RIGHTS | DIRECTORY_RIGHTS


class FdFlags(IntFlag):
    APPEND = 1 << 0
    DSYNC = 1 << 1
    NONBLOCK = 1 << 2
    RSYNC = 1 << 3
    SYNC = 1 << 4


class OFlags(IntFlag):
    CREAT = 1 << 0
    DIRECTORY = 1 << 1
    EXCL = 1 << 2
    TRUNC = 1 << 3


class LookupFlags(IntFlag):
    SYMLINK_FOLLOW = 1 << 0


class FstFlags(IntFlag):
    ATIM = 1 << 0
    ATIM_NOW = 1 << 1
    MTIM = 1 << 2
    MTIM_NOW = 1 << 3


class Whence(IntEnum):
    SET = 0
    CUR = 1
    END = 2


class Clock(IntEnum):
    REALTIME = 0
    MONOTONIC = 1
    PROCESS_CPUTIME_ID = 2
    THREAD_CPUTIME_ID = 3


class EventType(IntEnum):
    CLOCK = 0
    FD_READ = 1
    FD_WRITE = 2


class Advice(IntEnum):
    NORMAL = 0
    SEQUENTIAL = 1
    RANDOM = 2
    WILLNEED = 3
    DONTNEED = 4
    NOREUSE = 5


U64 = (1 << 64) - 1
