"""Large buffers in mappings of their own, given back to the system when freed.

glibc's malloc raises its mmap threshold to the size of the largest block freed
(up to 32 MiB), so after one large message (a jobspec near its limit) every
later buffer up to that size is carved from the heap, whose pages are kept
after they are freed. Fixing the threshold turns that off: a process handles a
large message and is left as it was, less the pages its caches hold.
"""

from __future__ import annotations

import ctypes

M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter
LARGE = 1 << 20  # bytes: blocks this long or longer are mapped alone


def release_large_buffers() -> None:
    """Set glibc's mmap threshold to ``LARGE`` (call at start-up); another C library's
    malloc is left as it is."""
    try:
        libc = ctypes.CDLL(None)
    except OSError:
        return
    if not hasattr(libc, "gnu_get_libc_version"):
        return  # another C library, whose malloc has no such threshold
    libc.mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    libc.mallopt.restype = ctypes.c_int
    libc.mallopt(M_MMAP_THRESHOLD, LARGE)
