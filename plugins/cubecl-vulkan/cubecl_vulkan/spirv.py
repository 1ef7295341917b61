"""A SPIR-V module written word by word: ids, the sections in the order the
specification fixes, types and constants declared once each, and the binary.

Only what the vulkan backend's emitter (:mod:`cubecl_vulkan.emitter`) needs is here:
the opcodes and enumerants it uses (numbered as in the SPIR-V 1.3 specification and
the GLSL.std.450 extended instruction set), and :class:`Module`. No library writes
SPIR-V from Python with structured control flow and this small a footprint; the
format is a flat list of 32-bit words, which :mod:`struct` writes at C speed.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

__all__ = ["Module", "Op", "GLSL", "Cap", "Deco", "Storage", "Scope", "Sem", "BuiltIn",
           "VERSION", "TARGET_ENV", "listing"]

MAGIC = 0x07230203
VERSION = 0x00010300
"""SPIR-V 1.3: the first with subgroup operations; every Vulkan 1.1 device takes it."""
TARGET_ENV = "vulkan1.1"
"""The environment ``spirv-val`` checks modules for."""


class Op:
    """Opcodes."""

    ExtInstImport = 11
    ExtInst = 12
    MemoryModel = 14
    EntryPoint = 15
    ExecutionMode = 16
    Capability = 17
    Extension = 10
    TypeVoid = 19
    TypeBool = 20
    TypeInt = 21
    TypeFloat = 22
    TypeVector = 23
    TypeArray = 28
    TypeRuntimeArray = 29
    TypeStruct = 30
    TypePointer = 32
    TypeFunction = 33
    ConstantTrue = 41
    ConstantFalse = 42
    Constant = 43
    ConstantNull = 46
    SpecConstantFalse = 49
    Function = 54
    FunctionEnd = 56
    Variable = 59
    Load = 61
    Store = 62
    AccessChain = 65
    Decorate = 71
    MemberDecorate = 72
    CompositeConstruct = 80
    CompositeExtract = 81
    ConvertFToU = 109
    ConvertFToS = 110
    ConvertSToF = 111
    ConvertUToF = 112
    UConvert = 113
    SConvert = 114
    FConvert = 115
    Bitcast = 124
    SNegate = 126
    FNegate = 127
    IAdd = 128
    FAdd = 129
    ISub = 130
    FSub = 131
    IMul = 132
    FMul = 133
    UDiv = 134
    SDiv = 135
    FDiv = 136
    UMod = 137
    SRem = 138
    UMulExtended = 151
    SMulExtended = 152
    IsNan = 156
    IsInf = 157
    LogicalEqual = 164
    LogicalNotEqual = 165
    LogicalOr = 166
    LogicalAnd = 167
    LogicalNot = 168
    Select = 169
    IEqual = 170
    INotEqual = 171
    UGreaterThan = 172
    SGreaterThan = 173
    UGreaterThanEqual = 174
    SGreaterThanEqual = 175
    ULessThan = 176
    SLessThan = 177
    ULessThanEqual = 178
    SLessThanEqual = 179
    FOrdEqual = 180
    FUnordNotEqual = 183
    FOrdLessThan = 184
    FOrdGreaterThan = 186
    FOrdLessThanEqual = 188
    FOrdGreaterThanEqual = 190
    ShiftRightLogical = 194
    ShiftRightArithmetic = 195
    ShiftLeftLogical = 196
    BitwiseOr = 197
    BitwiseXor = 198
    BitwiseAnd = 199
    Not = 200
    BitReverse = 204
    BitCount = 205
    ControlBarrier = 224
    MemoryBarrier = 225
    AtomicLoad = 227
    AtomicExchange = 229
    AtomicCompareExchange = 230
    AtomicIAdd = 234
    AtomicISub = 235
    AtomicSMin = 236
    AtomicUMin = 237
    AtomicSMax = 238
    AtomicUMax = 239
    AtomicAnd = 240
    AtomicOr = 241
    AtomicXor = 242
    LoopMerge = 246
    SelectionMerge = 247
    Label = 248
    Branch = 249
    BranchConditional = 250
    Return = 253
    ReturnValue = 254
    Unreachable = 255
    GroupNonUniformAll = 334
    GroupNonUniformAny = 335
    GroupNonUniformBallot = 339
    GroupNonUniformShuffle = 345
    GroupNonUniformShuffleXor = 346
    GroupNonUniformIAdd = 349
    GroupNonUniformFAdd = 350
    GroupNonUniformIMul = 351
    GroupNonUniformFMul = 352
    GroupNonUniformSMin = 353
    GroupNonUniformUMin = 354
    GroupNonUniformFMin = 355
    GroupNonUniformSMax = 356
    GroupNonUniformUMax = 357
    GroupNonUniformFMax = 358
    AtomicFMinEXT = 5614
    AtomicFMaxEXT = 5615
    AtomicFAddEXT = 6035


class GLSL:
    """GLSL.std.450 extended instructions."""

    RoundEven = 2
    Trunc = 3
    FAbs = 4
    Floor = 8
    Ceil = 9
    Sqrt = 31
    InverseSqrt = 32
    UMin = 38
    Fma = 50
    FindILsb = 73
    FindUMsb = 75


class Cap:
    """Capabilities."""

    Shader = 1
    Float16 = 9
    Float64 = 10
    Int64 = 11
    Int64Atomics = 12
    Int16 = 22
    Int8 = 39
    GroupNonUniform = 61
    GroupNonUniformVote = 62
    GroupNonUniformArithmetic = 63
    GroupNonUniformBallot = 64
    GroupNonUniformShuffle = 65
    StorageBuffer16BitAccess = 4433
    StorageBuffer8BitAccess = 4448
    AtomicFloat32MinMaxEXT = 5612
    AtomicFloat32AddEXT = 6033


class Deco:
    """Decorations."""

    SpecId = 1
    Block = 2
    ArrayStride = 6
    BuiltIn = 11
    NonWritable = 24
    Binding = 33
    DescriptorSet = 34
    Offset = 35
    NoContraction = 42


class Storage:
    """Storage classes."""

    Input = 1
    Uniform = 2
    Workgroup = 4
    Function = 7
    StorageBuffer = 12


class Scope:
    """Scopes."""

    Device = 1
    Workgroup = 2
    Subgroup = 3


class Sem:
    """Memory semantics."""

    Relaxed = 0
    AcquireRelease = 0x8
    UniformMemory = 0x40
    WorkgroupMemory = 0x100
    ImageMemory = 0x800


class BuiltIn:
    """Built-in variables."""

    NumWorkgroups = 24
    WorkgroupId = 26
    LocalInvocationId = 27
    LocalInvocationIndex = 29
    SubgroupSize = 36
    SubgroupLocalInvocationId = 41


_EXTENSION_OF = {Cap.StorageBuffer8BitAccess: "SPV_KHR_8bit_storage",
                 Cap.AtomicFloat32AddEXT: "SPV_EXT_shader_atomic_float_add",
                 Cap.AtomicFloat32MinMaxEXT: "SPV_EXT_shader_atomic_float_min_max"}


def _string(text: str) -> list[int]:
    """A literal string: UTF-8, NUL-terminated, padded to whole words."""
    raw = text.encode() + b"\0"
    raw += b"\0" * (-len(raw) % 4)
    return list(struct.unpack(f"<{len(raw) // 4}I", raw))


class Module:
    """One SPIR-V module being written: allots ids, declares each type and constant
    once, and writes the binary (:meth:`to_bytes`) with the sections in order."""

    def __init__(self) -> None:
        self.bound = 1
        self.capabilities: dict[int, None] = {Cap.Shader: None}
        self.glsl = self.id()
        self.entry: list[int] = []
        self.modes: list[int] = []
        self.annotations: list[int] = []
        self.globals: list[int] = []
        """Types, constants and module-scope variables, each after what it uses."""
        self.functions: list[int] = []
        self._types: dict[tuple[int, ...], int] = {}
        self._constants: dict[tuple[int, ...], int] = {}

    def id(self) -> int:
        """A fresh result id."""
        self.bound += 1
        return self.bound - 1

    def capability(self, cap: int) -> None:
        """Declare that the module uses ``cap``."""
        self.capabilities[cap] = None

    @staticmethod
    def inst(out: list[int], op: int, *operands: int) -> None:
        """Append one instruction to ``out``."""
        out.append((len(operands) + 1) << 16 | op)
        out.extend(operands)

    # ------------------------------------------------------------ types

    def type(self, op: int, *operands: int) -> int:
        """The id of type ``op operands`` (declared on first use)."""
        key = (op, *operands)
        found = self._types.get(key)
        if found is None:
            found = self._types[key] = self.id()
            self.inst(self.globals, op, found, *operands)
        return found

    def void(self) -> int:
        """``void``."""
        return self.type(Op.TypeVoid)

    def bool(self) -> int:
        """``bool``."""
        return self.type(Op.TypeBool)

    def int(self, bits: int, signed: bool) -> int:
        """An integer type (8, 16, 32 or 64 bits), declaring the capability it needs."""
        if bits == 64:
            self.capability(Cap.Int64)
        elif bits == 16:
            self.capability(Cap.Int16)
        elif bits == 8:
            self.capability(Cap.Int8)
        return self.type(Op.TypeInt, bits, int(signed))

    def float(self, bits: int) -> int:
        """A float type (16, 32 or 64 bits), declaring the capability it needs."""
        if bits == 64:
            self.capability(Cap.Float64)
        elif bits == 16:
            self.capability(Cap.Float16)
        return self.type(Op.TypeFloat, bits)

    def vector(self, component: int, count: int) -> int:
        """A vector type."""
        return self.type(Op.TypeVector, component, count)

    def array(self, element: int, length: int) -> int:
        """An array of ``length`` (a u32 constant is declared for it)."""
        return self.type(Op.TypeArray, element, self.constant(self.int(32, False), length))

    def pointer(self, storage: int, pointee: int) -> int:
        """A pointer type."""
        return self.type(Op.TypePointer, storage, pointee)

    def function_type(self, ret: int, *params: int) -> int:
        """A function type."""
        return self.type(Op.TypeFunction, ret, *params)

    def struct(self, *members: int) -> int:
        """A new struct type (never shared: each block gets its own decorations)."""
        sid = self.id()
        self.inst(self.globals, Op.TypeStruct, sid, *members)
        return sid

    # ------------------------------------------------------------ constants

    def constant(self, type_id: int, *words: int) -> int:
        """The constant of ``type_id`` whose literal is ``words`` (low word first)."""
        key = (Op.Constant, type_id, *words)
        found = self._constants.get(key)
        if found is None:
            found = self._constants[key] = self.id()
            self.inst(self.globals, Op.Constant, type_id, found, *words)
        return found

    def boolean(self, value: bool) -> int:
        """``true`` or ``false``."""
        op = Op.ConstantTrue if value else Op.ConstantFalse
        key = (op,)
        found = self._constants.get(key)
        if found is None:
            found = self._constants[key] = self.id()
            self.inst(self.globals, op, self.bool(), found)
        return found

    def spec_false(self, spec_id: int) -> int:
        """A bool specialization constant, false unless the pipeline sets ``spec_id``."""
        found = self.id()
        self.inst(self.globals, Op.SpecConstantFalse, self.bool(), found)
        self.decorate(found, Deco.SpecId, spec_id)
        return found

    def null(self, type_id: int) -> int:
        """The all-zero constant of ``type_id`` (any type)."""
        key = (Op.ConstantNull, type_id)
        found = self._constants.get(key)
        if found is None:
            found = self._constants[key] = self.id()
            self.inst(self.globals, Op.ConstantNull, type_id, found)
        return found

    # ------------------------------------------------------------ the rest

    def decorate(self, target: int, decoration: int, *operands: int) -> None:
        """``OpDecorate``."""
        self.inst(self.annotations, Op.Decorate, target, decoration, *operands)

    def member_decorate(self, struct_id: int, member: int, decoration: int,
                        *operands: int) -> None:
        """``OpMemberDecorate``."""
        self.inst(self.annotations, Op.MemberDecorate, struct_id, member, decoration, *operands)

    def variable(self, ptr_type: int, storage: int, vid: int | None = None) -> int:
        """A module-scope variable (``vid``: an id allotted before its type was known)."""
        vid = self.id() if vid is None else vid
        self.inst(self.globals, Op.Variable, ptr_type, vid, storage)
        return vid

    def entry_point(self, function: int, name: str, interface: Iterable[int],
                    local_size: tuple[int, int, int]) -> None:
        """The GLCompute entry point and its work-group size."""
        self.entry = []
        self.inst(self.entry, Op.EntryPoint, 5, function, *_string(name), *interface)
        self.modes = []
        self.inst(self.modes, Op.ExecutionMode, function, 17, *local_size)

    def to_bytes(self) -> bytes:
        """The module's binary."""
        words: list[int] = [MAGIC, VERSION, 0, self.bound, 0]
        for cap in self.capabilities:
            self.inst(words, Op.Capability, cap)
        for cap, ext in _EXTENSION_OF.items():
            if cap in self.capabilities:
                self.inst(words, Op.Extension, *_string(ext))
        self.inst(words, Op.ExtInstImport, self.glsl, *_string("GLSL.std.450"))
        self.inst(words, Op.MemoryModel, 0, 1)
        words += self.entry + self.modes + self.annotations + self.globals + self.functions
        return struct.pack(f"<{len(words)}I", *words)


def _names(cls: type, prefix: str = "") -> dict[int, str]:
    return {v: prefix + k for k, v in vars(cls).items() if not k.startswith("_")}


_NAMES = _names(Op, "Op")
_ENUMS = {Op.Capability: (0, _names(Cap)), Op.Decorate: (1, _names(Deco)),
          Op.MemberDecorate: (2, _names(Deco)), Op.ExtInst: (3, _names(GLSL)),
          Op.TypePointer: (1, _names(Storage)), Op.Variable: (2, _names(Storage))}
"""Per opcode: the operand that is an enumerant, and its names."""
_STRINGS = {Op.ExtInstImport: 1, Op.Extension: 0, Op.EntryPoint: 2}
"""Per opcode: the operand where a literal string starts."""
_RESULT_ONLY = frozenset({Op.ExtInstImport, Op.Label, Op.TypeVoid, Op.TypeBool, Op.TypeInt,
                          Op.TypeFloat, Op.TypeVector, Op.TypeArray, Op.TypeRuntimeArray,
                          Op.TypeStruct, Op.TypePointer, Op.TypeFunction})
_NO_RESULT = frozenset({Op.Capability, Op.Extension, Op.MemoryModel, Op.EntryPoint,
                        Op.ExecutionMode, Op.Decorate, Op.MemberDecorate, Op.Store,
                        Op.Branch, Op.BranchConditional, Op.LoopMerge, Op.SelectionMerge,
                        Op.Return, Op.ReturnValue, Op.Unreachable, Op.FunctionEnd,
                        Op.ControlBarrier, Op.MemoryBarrier})


def _operands(op: int, ops: tuple[int, ...]) -> list[str]:
    """The operands as text: enumerants and strings by name, the rest as numbers."""
    out = [str(v) for v in ops]
    enum = _ENUMS.get(op)
    if enum is not None and enum[0] < len(ops):
        out[enum[0]] = enum[1].get(ops[enum[0]], out[enum[0]])
    at = _STRINGS.get(op)
    if at is not None:
        raw = struct.pack(f"<{len(ops) - at}I", *ops[at:])
        text = raw[:raw.index(0)].decode()
        words = (len(text) + 4) // 4
        out[at:at + words] = [f'"{text}"']
    return out


def listing(binary: bytes) -> str:
    """A module as text, one instruction a line: ``%result = OpName %type operands``
    (enumerants and strings by name where known, other operands as numbers, ids and
    literals alike), for people reading what a kernel became (``cubecl-server
    source``); ``spirv-dis`` gives the full disassembly."""
    words = struct.unpack(f"<{len(binary) // 4}I", binary)
    out = [f"; SPIR-V {words[1] >> 16 & 0xFF}.{words[1] >> 8 & 0xFF}, bound {words[3]}"]
    names, special = _NAMES, _ENUMS.keys() | _STRINGS.keys()
    at = 5
    while at < len(words):
        count, op = words[at] >> 16, words[at] & 0xFFFF
        ops = (_operands(op, words[at + 1:at + count]) if op in special
               else list(map(str, words[at + 1:at + count])))
        name = names.get(op) or f"Op{op}"
        if op in _RESULT_ONLY and ops:
            out.append(f"%{ops[0]} = {name} {' '.join(ops[1:])}".rstrip())
        elif op in _NO_RESULT or len(ops) < 2:
            out.append(f"{name} {' '.join(ops)}".rstrip())
        else:
            out.append(f"%{ops[1]} = {name} %{ops[0]} {' '.join(ops[2:])}".rstrip())
        at += count
    return "\n".join(out) + "\n"
