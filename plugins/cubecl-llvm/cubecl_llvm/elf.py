"""Object code linked into the process without LLVM: a loader of the ELF relocatable
objects LLVM writes for x86-64, what :func:`cubecl_llvm.native.compile_object` gives on
Linux.

A process whose kernels all come from the store would otherwise load llvmlite's LLVM
(a 180 MB library, 35-45 ms to import with its bytecode cached) only to link a few
kilobytes of code. Linking such an object is small work: its allocated sections are
copied into fresh pages, each relocation patched (the handful of kinds LLVM emits for
position-independent code), calls to the process's own functions (``memset``,
``printf``) sent through jumps placed beside the code, and the code's pages made
executable and no longer writable.

The bytes come from the store, whose checksum they passed: they are the code this host
compiled. They are read as outside input all the same - every offset, size, index and
count checked before use - and what this loader does not do (another format or
machine, a relocation of another kind, a symbol the process lacks) raises
:class:`Unsupported`, for the caller to link the object with LLVM instead.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import struct
import weakref
from functools import cache
from typing import NamedTuple

__all__ = ["Image", "Malformed", "Unsupported", "link"]


class Unsupported(Exception):
    """The object needs what this loader does not do: link it with LLVM instead."""


class Malformed(RuntimeError):
    """The bytes are not a well-formed object: an offset, size or index out of range."""


_HEADER = struct.Struct("<16sHHIQQQIHHHHHH")
_SECTION = struct.Struct("<IIQQQQIIQQ")
_SYMBOL = struct.Struct("<IBBHQQ")
_RELA = struct.Struct("<QQq")
_IDENT = b"\x7fELF\x02\x01\x01"  # 64-bit, little-endian, ELF version 1
_REL, _X86_64 = 1, 62
_PROGBITS, _SYMTAB, _RELA_T, _NOBITS = 1, 2, 4, 8
_WRITE, _ALLOC, _TLS = 0x1, 0x2, 0x400
_UNDEF, _ABS, _RESERVED = 0, 0xFFF1, 0xFF00
_MAX_SECTIONS = 1 << 12
_MAX_ALIGN = mmap.PAGESIZE
# Relocation kinds (the x86-64 psABI's numbers) and the width each writes.
_R64, _PC32, _PLT32, _GOTPCREL, _PC64, _GOTPCRELX, _REX_GOTPCRELX = 1, 2, 4, 9, 24, 41, 42
_WIDTH = {_R64: 8, _PC32: 4, _PLT32: 4, _GOTPCREL: 4, _PC64: 8, _GOTPCRELX: 4,
          _REX_GOTPCRELX: 4}
_GOT = frozenset({_GOTPCREL, _GOTPCRELX, _REX_GOTPCRELX})
_SLOT = 16  # a jump through the pointer at its byte 8, which is also a GOT entry
_MAX_IMAGE = 1 << 28


class _Section(NamedTuple):  # a NamedTuple: a dataclass costs a warm start 0.7 ms to make
    name: str
    type: int
    flags: int
    offset: int
    size: int
    link: int
    info: int
    align: int


def _unpack(layout: struct.Struct, data: bytes, offset: int) -> tuple[int, ...]:
    if not 0 <= offset <= len(data) - layout.size:
        raise Malformed(f"a record at byte {offset} runs past the object's {len(data)} bytes")
    return layout.unpack_from(data, offset)


def _name(table: bytes, offset: int) -> str:
    end = table.find(b"\0", offset)
    if not 0 <= offset < len(table) or end < 0:
        raise Malformed(f"a name at {offset} lies outside its string table")
    return table[offset:end].decode("utf-8", "replace")


def _sections(data: bytes) -> list[_Section]:
    """The object's section headers, each checked to lie within ``data``."""
    ident, etype, machine, _, _, _, shoff, _, _, _, _, shentsize, shnum, shstrndx = \
        _unpack(_HEADER, data, 0)
    if not ident.startswith(_IDENT) or etype != _REL or machine != _X86_64:
        raise Unsupported("not an x86-64 ELF relocatable object")
    if shentsize != _SECTION.size or not 0 < shnum <= _MAX_SECTIONS or shstrndx >= shnum:
        raise Malformed(f"section headers of {shentsize} bytes, {shnum} of them, "
                        f"names in section {shstrndx}")
    raw = [_unpack(_SECTION, data, shoff + k * _SECTION.size) for k in range(shnum)]
    for _, kind, _, _, offset, size, _, _, align, _ in raw:
        if kind != _NOBITS and not 0 <= offset <= offset + size <= len(data):
            raise Malformed(f"a section of {size} bytes at {offset} runs past the object")
        if align > _MAX_ALIGN or align & (align - 1):
            raise Malformed(f"a section aligned to {align} bytes")
    names = raw[shstrndx]
    table = data[names[4]:names[4] + names[5]]
    return [_Section(_name(table, r[0]) if k else "", r[1], r[2], r[4], r[5], r[6], r[7],
                     max(r[8], 1)) for k, r in enumerate(raw)]


def _loaded(s: _Section) -> bool:
    """Whether a section is part of the running code (unwind tables are not: nothing
    unwinds through a kernel)."""
    if not s.flags & _ALLOC or s.name.startswith(".eh_frame"):
        return False
    if s.type not in (_PROGBITS, _NOBITS) or s.flags & _TLS:
        raise Unsupported(f"an allocated section {s.name!r} of type {s.type:#x}")
    return True


def _place(sections: list[_Section], place: dict[int, int], end: int, *,
           writable: bool) -> int:
    """Place the loaded sections that are (or are not) writable from ``end`` on; where
    they end."""
    for k, s in enumerate(sections):
        if _loaded(s) and bool(s.flags & _WRITE) == writable:
            place[k] = end = _round(end, s.align)
            end += s.size
    return end


@cache
def _libc() -> ctypes.CDLL:
    """The C library's mmap, mprotect and munmap, and the process's symbols."""
    if os.name != "posix":
        raise Unsupported("pages are mapped with the POSIX mmap")
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    return libc


def _round(n: int, to: int) -> int:
    return -(-n // to) * to


class Image:
    """An object linked into this process: its pages stay mapped while it is alive."""

    def __init__(self, symbols: dict[str, int], libc: ctypes.CDLL, base: int,
                 size: int) -> None:
        self._symbols = symbols
        weakref.finalize(self, libc.munmap, base, size)

    def address(self, symbol: str) -> int:
        """The address of ``symbol`` (0 where the object defines none of that name)."""
        return self._symbols.get(symbol, 0)


def link(data: bytes) -> Image:
    """``data``, an x86-64 ELF relocatable object, linked into this process.

    Raises :class:`Unsupported` for what only LLVM links, :class:`Malformed` for bytes
    that are not a well-formed object."""
    sections = _sections(data)
    symtab = [s for s in sections if s.type == _SYMTAB]
    if len(symtab) != 1 or symtab[0].link >= len(sections):
        raise Malformed(f"{len(symtab)} symbol tables")
    strtab = sections[symtab[0].link]
    names = data[strtab.offset:strtab.offset + strtab.size]
    symbols = [_unpack(_SYMBOL, data, symtab[0].offset + k * _SYMBOL.size)
               for k in range(symtab[0].size // _SYMBOL.size)]
    relocations = [r for s in sections if s.type == _RELA_T
                   for r in _relocations(data, s, sections, len(symbols))]
    process = _libc()

    # Layout: the code and its constants; a slot (a jump through a pointer, the pointer
    # also the symbol's GOT entry) for each symbol of the process the code uses and each
    # one it reaches through the GOT; then, on pages of their own, writable sections.
    place: dict[int, int] = {}
    end = _place(sections, place, 0, writable=False)
    slots: dict[int, int] = {}
    wanted = [k for k, (name, _, _, shndx, _, _) in enumerate(symbols)
              if shndx == _UNDEF and name]
    wanted += [r.symbol for r in relocations if r.kind in _GOT]
    for k in dict.fromkeys(wanted):
        slots[k] = end = _round(end, _SLOT)
        end += _SLOT
    code_end = _round(end, mmap.PAGESIZE)
    end = _place(sections, place, code_end, writable=True)
    size = max(_round(end, mmap.PAGESIZE), mmap.PAGESIZE)
    if size > _MAX_IMAGE:
        raise Malformed(f"sections of {size} bytes in all")
    where = [_symbol_address(sym, names, sections, place, process) for sym in symbols]
    image = bytearray(size)
    for k, at in place.items():
        if sections[k].type == _PROGBITS:
            image[at:at + sections[k].size] = \
                data[sections[k].offset:sections[k].offset + sections[k].size]

    prot_rw = mmap.PROT_READ | mmap.PROT_WRITE
    base = process.mmap(None, size, prot_rw, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
    if base in (None, ctypes.c_void_p(-1).value):
        raise MemoryError(f"mmap of {size} bytes: {os.strerror(ctypes.get_errno())}")
    try:
        address = [0 if w is None else w[0] + base if w[1] else w[0] for w in where]
        for k, at in slots.items():  # jmp *2(%rip), two bytes of padding, the address
            struct.pack_into("<HiHQ", image, at, 0x25FF, 2, 0, address[k])
        for r in relocations:
            if r.section in place:
                if where[r.symbol] is None:
                    raise Unsupported(f"a reference to symbol {r.symbol}, in a section "
                                      "that is not loaded")
                _relocate(r, place[r.section], image, base, address, slots)
        defined = {_name(names, name): address[k]
                   for k, (name, info, _, shndx, _, _) in enumerate(symbols)
                   if name and info >> 4 in (1, 2) and shndx != _UNDEF}  # global or weak
        ctypes.memmove(base, bytes(image), size)
        if process.mprotect(base, code_end, mmap.PROT_READ | mmap.PROT_EXEC):
            raise Unsupported("the system refuses to make the code's pages executable: "
                              + os.strerror(ctypes.get_errno()))
    except BaseException:
        process.munmap(base, size)
        raise
    return Image(defined, process, base, size)


def _symbol_address(symbol: tuple[int, ...], names: bytes, sections: list[_Section],
                    place: dict[int, int], process: ctypes.CDLL) -> tuple[int, bool] | None:
    """Where a symbol is, and whether that is an offset into the image (a loaded
    section's) rather than an address (the process's, or absolute); None for one in a
    section that is not loaded."""
    name, _, _, shndx, value, _ = symbol
    if shndx == _UNDEF:
        if not name:
            return 0, False
        label = _name(names, name)
        if not (label.isascii() and label.replace(".", "_").isidentifier()):
            raise Malformed(f"an undefined symbol named {label!r}")
        try:
            return ctypes.cast(process[label], ctypes.c_void_p).value or 0, False
        except AttributeError:
            raise Unsupported(f"the process has no symbol {label!r}") from None
    if shndx == _ABS:
        return value, False
    if shndx >= _RESERVED:
        raise Unsupported(f"a symbol in reserved section {shndx:#x}")
    if shndx >= len(sections):
        raise Malformed(f"a symbol in section {shndx} of {len(sections)}")
    if shndx not in place:
        return None
    if value > sections[shndx].size:
        raise Malformed(f"a symbol at {value} past its section's {sections[shndx].size} bytes")
    return place[shndx] + value, True


class _Relocation(NamedTuple):
    section: int  # the section patched
    offset: int  # where in it
    symbol: int
    kind: int
    addend: int


def _relocations(data: bytes, rela: _Section, sections: list[_Section],
                 count: int) -> list[_Relocation]:
    """The relocations of ``rela``, each checked to patch within its section and to name
    one of the ``count`` symbols."""
    if rela.info >= len(sections):
        raise Malformed(f"relocations of section {rela.info} of {len(sections)}")
    target = sections[rela.info]
    found = []
    for k in range(rela.size // _RELA.size):
        offset, info, addend = _unpack(_RELA, data, rela.offset + k * _RELA.size)
        index, kind = info >> 32, info & 0xFFFFFFFF
        width = _WIDTH.get(kind)
        if width is None:
            raise Unsupported(f"relocation of kind {kind}")
        if index >= count or target.type == _NOBITS or offset + width > target.size:
            raise Malformed(f"relocation {k} of {target.name!r}: symbol {index} of {count}, "
                            f"{width} bytes at {offset} of {target.size}")
        found.append(_Relocation(rela.info, offset, index, kind, addend))
    return found


def _relocate(r: _Relocation, at: int, image: bytearray, base: int, address: list[int],
              slots: dict[int, int]) -> None:
    """Patch the image (the relocation's section placed at ``at``) by ``r``."""
    here = base + at + r.offset
    s = address[r.symbol]
    if r.kind in _GOT:
        s = base + slots[r.symbol] + 8
    elif r.kind == _PLT32 and r.symbol in slots:
        s = base + slots[r.symbol]
    value = s + r.addend - (0 if r.kind == _R64 else here)
    if _WIDTH[r.kind] == 4:
        if not -(1 << 31) <= value < 1 << 31:
            raise Unsupported(f"a 32-bit relocation at {r.offset} out of reach")
        struct.pack_into("<i", image, at + r.offset, value)
    else:
        struct.pack_into("<Q", image, at + r.offset, value & (1 << 64) - 1)
