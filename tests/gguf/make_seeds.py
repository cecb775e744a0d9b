#!/usr/bin/env python3
"""make_seeds.py: writes the tiny GGUF seed files of the fuzz corpus
(tests/gguf/seeds/), byte by byte, so the fuzzer starts from inputs that
reach every part of the reader: all value types, string and nested arrays,
tensors of several types, a custom alignment, version 2. Each is < 4 KB.
Usage: python3 tests/gguf/make_seeds.py [OUT_DIR]
"""
import os
import struct
import sys

U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
FMT = {U8: '<B', I8: '<b', U16: '<H', I16: '<h', U32: '<I', I32: '<i', F32: '<f',
       BOOL: '<B', U64: '<Q', I64: '<q', F64: '<d'}


def s(b):
    b = b.encode() if isinstance(b, str) else b
    return struct.pack('<Q', len(b)) + b


def val(t, v):
    """Encodes value v of type t (without the type tag). Arrays: (elem, [items])."""
    if t == STR:
        return s(v)
    if t == ARR:
        elem, items = v
        return struct.pack('<IQ', elem, len(items)) + b''.join(val(elem, x) for x in items)
    return struct.pack(FMT[t], v)


def kv(key, t, v):
    return s(key) + struct.pack('<I', t) + val(t, v)


# ggml type id -> (block elements, block bytes)
TYPES = {0: (1, 4), 1: (1, 2), 8: (32, 34), 12: (256, 144), 26: (1, 4), 30: (1, 2)}


def gguf(kvs, tensors, version=3, align=32):
    """tensors: list of (name, type, ne list); data is a deterministic pattern."""
    out = b'GGUF' + struct.pack('<IQQ', version, len(tensors), len(kvs)) + b''.join(kvs)
    offs, off, sizes = [], 0, []
    for name, t, ne in tensors:
        blk, size = TYPES[t]
        n = ne[0] // blk * size
        for d in ne[1:]:
            n *= d
        offs.append(off)
        sizes.append(n)
        off += (n + align - 1) // align * align
    for (name, t, ne), o in zip(tensors, offs):
        out += s(name) + struct.pack('<I', len(ne)) + b''.join(struct.pack('<Q', d) for d in ne)
        out += struct.pack('<IQ', t, o)
    out += b'\0' * (-len(out) % align)
    for n in sizes:
        out += bytes((i * 37 + 11) & 255 for i in range(n))
        out += b'\0' * (-len(out) % align)
    return out


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), 'seeds')
    os.makedirs(out_dir, exist_ok=True)
    scalars = [kv('s.u8', U8, 200), kv('s.i8', I8, -5), kv('s.u16', U16, 60000),
               kv('s.i16', I16, -300), kv('s.u32', U32, 4000000000), kv('s.i32', I32, -7),
               kv('s.f32', F32, 1.5), kv('s.bool', BOOL, 1), kv('s.str', STR, 'qwen35'),
               kv('s.u64', U64, 1 << 63), kv('s.i64', I64, -1), kv('s.f64', F64, 0.25),
               kv('s.empty', STR, '')]
    arrays = [kv('a.i32', ARR, (I32, [1, -2, 3])), kv('a.f32', ARR, (F32, [0.5, 2.0])),
              kv('a.bool', ARR, (BOOL, [1, 0])), kv('a.u64', ARR, (U64, [9])),
              kv('a.empty', ARR, (U8, [])),
              kv('tokenizer.ggml.tokens', ARR, (STR, ['<|im_start|>', 'a', b'\xff', ''])),
              kv('a.nested', ARR, (ARR, [(I32, [1, 2]), (STR, ['x', 'yz']), (ARR, [(U8, [7])])]))]
    seeds = {
        'all_values.gguf': gguf(scalars + arrays, []),
        'tensors.gguf': gguf([kv('general.architecture', STR, 'qwen35')],
                             [('token_embd.weight', 0, [4, 3]), ('blk.0.attn_q.weight', 8, [32, 2]),
                              ('output_norm.weight', 1, [6]), ('blk.0.ffn_down.weight', 12, [256, 1]),
                              ('x', 26, [1, 1, 2, 1])]),
        'align64_v2.gguf': gguf([kv('general.alignment', U32, 64), kv('n', U32, 3)],
                                [('a', 30, [3]), ('b', 0, [1, 2])], version=2, align=64),
        'mixed.gguf': gguf(arrays[:3] + [kv('general.alignment', U32, 16)],
                           [('t.0', 0, [2]), ('t.1', 8, [32])], align=16),
        'empty.gguf': gguf([], []),
    }
    for name, data in seeds.items():
        assert len(data) < 4096, name
        with open(os.path.join(out_dir, name), 'wb') as f:
            f.write(data)


if __name__ == '__main__':
    main()
