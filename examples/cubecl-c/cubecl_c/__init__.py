"""cubecl-c: a cubecl-server backend named ``c``: C99 built by ``cc``, run by ctypes."""
