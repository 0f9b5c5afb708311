#!/usr/bin/env python3
"""Copies a file-mode perf.data keeping every record that is not a sample, and the samples
at the given file offsets (as `perf report -D` prints them). Attrs and feature sections are
copied as they are, moved to follow the shorter data section."""
import struct, sys

src, dst = sys.argv[1], sys.argv[2]
keep = {int(x, 0) for x in sys.argv[3:]}
b = open(src, 'rb').read()
magic, hsize, attr_size = struct.unpack_from('<8sQQ', b, 0)
assert magic == b'PERFILE2'
attrs_off, attrs_size, data_off, data_size, et_off, et_size = struct.unpack_from('<6Q', b, 24)
features = struct.unpack_from('<4Q', b, 72)
nfeat = sum(bin(w).count('1') for w in features)
sections = [struct.unpack_from('<2Q', b, data_off + data_size + 16 * i) for i in range(nfeat)]

out = bytearray()
pos = data_off
while pos < data_off + data_size:
    typ, misc, size = struct.unpack_from('<IHH', b, pos)
    assert size >= 8
    if typ != 9 or pos in keep:
        out += b[pos:pos + size]
    pos += size

new = bytearray(b[:data_off])
new += out
table_at = len(new)
new += bytes(16 * nfeat)
for i, (off, size) in enumerate(sections):
    struct.pack_into('<2Q', new, table_at + 16 * i, len(new), size)
    new += b[off:off + size]
struct.pack_into('<2Q', new, 24 + 16, data_off, len(out))
open(dst, 'wb').write(new)
