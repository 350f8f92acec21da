"""Memory maps that hold no file descriptor, as Kafka's index files are kept.

Kafka maps each index file and closes its channel: a mapping keeps the file's pages, not a
descriptor, so a broker with thousands of partitions holds one descriptor per segment (its
`.log`). Python's `mmap.mmap` keeps a duplicate of the descriptor for as long as the map lives
(two per index file), so on POSIX the maps are made with the C library's own mmap(2) through
ctypes, and the descriptor is closed right after. Where that is not available (Windows), the
`mmap` module is used and its descriptor kept.

A map is a writable buffer (struct.pack_into, the compiled index loop) of exactly the mapped
length; its pages are unmapped when the last reference to it goes, so a buffer someone still
holds never points at unmapped memory.
"""
from __future__ import annotations

import mmap
import os

try:
    import ctypes

    _libc = ctypes.CDLL(None, use_errno=True)
    _mmap, _munmap, _msync = _libc.mmap, _libc.munmap, _libc.msync
    _mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    _mmap.restype = ctypes.c_void_p
    _munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    _msync.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    _MAP_FAILED = ctypes.c_void_p(-1).value
    _MS_SYNC = getattr(mmap, "MS_SYNC", 4)
    _OWN_MAPS = os.name == "posix"
except (ImportError, OSError, AttributeError):  # no ctypes or no C library with mmap(2)
    _OWN_MAPS = False

__all__ = ["map_file", "sync", "holds_descriptor"]


class _Pages:
    """The mapped pages, unmapped when the buffer that refers to them is collected."""
    __slots__ = ("addr", "length")

    def __init__(self, addr: int, length: int):
        self.addr, self.length = addr, length

    def __del__(self):
        _munmap(self.addr, self.length)


def holds_descriptor() -> bool:
    """True when maps keep a descriptor open (the `mmap` module's fallback)."""
    return not _OWN_MAPS


def map_file(fd: int, length: int, writable: bool = True):
    """A shared map of the first `length` bytes of the file open on `fd` (the caller may close fd
    once this returns). None for length 0."""
    if length <= 0:
        return None
    if not _OWN_MAPS:
        return mmap.mmap(fd, length, access=mmap.ACCESS_WRITE if writable else mmap.ACCESS_READ)
    prot = mmap.PROT_READ | (mmap.PROT_WRITE if writable else 0)
    addr = _mmap(None, length, prot, mmap.MAP_SHARED, fd, 0)
    if addr is None or addr == _MAP_FAILED:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    buf = (ctypes.c_char * length).from_address(addr)
    buf.mapped_pages = _Pages(addr, length)
    return buf


def sync(buf) -> None:
    """Write a map's dirty pages to its file (msync)."""
    if buf is None:
        return
    if isinstance(buf, mmap.mmap):
        buf.flush()
        return
    pages = buf.mapped_pages
    if _msync(pages.addr, pages.length, _MS_SYNC) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
