#!/usr/bin/env python3
"""Small helpers for the Soft-RoCE VM harness (used by lib.sh).

  vmtool.py extract-vmlinux VMLINUZ OUT
      Finds the compressed payload inside a bzImage (xz, zstd, gzip, lz4 ...)
      and writes the uncompressed ELF vmlinux (PVH-bootable) to OUT.
  vmtool.py moddeps MODDIR NAME...
      Prints the .ko files (relative to MODDIR) needed for NAME..., in load
      order (dependencies first), read from each module's .modinfo "depends=".
  vmtool.py mkcpio OUT SPEC...
      Writes an uncompressed newc cpio archive.  SPEC is one of
        dir:ARCHIVE_PATH  file:ARCHIVE_PATH=HOST_PATH[:MODE]  chr:ARCHIVE_PATH=MAJ,MIN
        link:ARCHIVE_PATH=TARGET
"""
import bz2
import gzip
import lzma
import os
import subprocess
import sys
import zlib


def _try_xz(data, off):
    d = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
    return d.decompress(data[off:])


def _try_gzip(data, off):
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    return d.decompress(data[off:])


def _try_bz2(data, off):
    return bz2.BZ2Decompressor().decompress(data[off:])


def _try_tool(cmd):
    def run(data, off):
        p = subprocess.run(cmd, input=data[off:], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL)
        return p.stdout  # trailing garbage makes the tools complain: ignore rc
    return run


MAGICS = [
    (b"\xfd7zXZ\x00", _try_xz),
    (b"\x28\xb5\x2f\xfd", _try_tool(["zstd", "-dcq"])),
    (b"\x1f\x8b\x08", _try_gzip),
    (b"\x02\x21\x4c\x18", _try_tool(["lz4", "-dcq"])),
    (b"BZh", _try_bz2),
]


def extract_vmlinux(src, out):
    data = open(src, "rb").read()
    for magic, fn in MAGICS:
        off = data.find(magic)
        while off >= 0:
            try:
                res = fn(data, off)
            except (lzma.LZMAError, zlib.error, OSError, EOFError, ValueError):
                res = b""
            if res[:4] == b"\x7fELF":
                tmp = out + ".tmp"
                with open(tmp, "wb") as f:
                    f.write(res)
                os.replace(tmp, out)
                print(f"vmlinux: {len(res)} bytes ({magic!r} payload at offset {off})")
                return 0
            off = data.find(magic, off + 1)
    print(f"vmtool: no compressed ELF payload found in {src}", file=sys.stderr)
    return 1


def modinfo_depends(path):
    data = open(path, "rb").read()
    key = b"\x00depends="
    i = data.find(key)
    if i < 0:
        return []
    j = data.index(b"\x00", i + 1)
    val = data[i + len(key):j].decode()
    return [d for d in val.split(",") if d]


def moddeps(moddir, names):
    index = {}
    for root, _dirs, files in os.walk(os.path.join(moddir, "kernel")):
        for f in files:
            if f.endswith(".ko"):
                name = f[:-3]
                rel = os.path.relpath(os.path.join(root, f), moddir)
                index[name] = rel
                index[name.replace("-", "_")] = rel
    builtin = set()
    bpath = os.path.join(moddir, "modules.builtin")
    if os.path.exists(bpath):
        for line in open(bpath):
            builtin.add(os.path.basename(line.strip())[:-3].replace("-", "_"))
    order, seen = [], set()

    def visit(name, chain):
        key = name.replace("-", "_")
        if key in seen:
            return
        if key not in index:
            if key in builtin:
                seen.add(key)
                return
            raise SystemExit(f"vmtool: module {name} not found in {moddir} (needed by {' <- '.join(chain) or 'request'})")
        seen.add(key)
        for dep in modinfo_depends(os.path.join(moddir, index[key])):
            visit(dep, chain + [name])
        order.append(index[key])

    for n in names:
        visit(n, [])
    print("\n".join(order))
    return 0


def mkcpio(out, specs):
    entries = []
    for spec in specs:
        kind, rest = spec.split(":", 1)
        entries.append((kind, rest))
    ino = [1000]

    def header(name, mode, size, nlink=1, rmaj=0, rmin=0):
        ino[0] += 1
        nb = name.encode() + b"\x00"
        fields = [ino[0], mode, 0, 0, nlink, 0, size, 0, 0, rmaj, rmin, len(nb), 0]
        h = b"070701" + b"".join(b"%08X" % v for v in fields) + nb
        h += b"\x00" * (-len(h) % 4)
        return h

    with open(out + ".tmp", "wb") as f:
        for kind, rest in entries:
            if kind == "dir":
                f.write(header(rest.lstrip("/"), 0o040755, 0, nlink=2))
            elif kind == "file":
                apath, hpath = rest.split("=", 1)
                mode = 0o644
                if ":" in hpath:
                    hpath, m = hpath.rsplit(":", 1)
                    mode = int(m, 8)
                data = open(hpath, "rb").read()
                f.write(header(apath.lstrip("/"), 0o100000 | mode, len(data)))
                f.write(data + b"\x00" * (-len(data) % 4))
            elif kind == "link":
                apath, target = rest.split("=", 1)
                data = target.encode()
                f.write(header(apath.lstrip("/"), 0o120777, len(data)))
                f.write(data + b"\x00" * (-len(data) % 4))
            elif kind == "chr":
                apath, mm = rest.split("=", 1)
                maj, mi = (int(x) for x in mm.split(","))
                f.write(header(apath.lstrip("/"), 0o020600, 0, rmaj=maj, rmin=mi))
            else:
                raise SystemExit(f"vmtool: bad cpio spec {kind}:{rest}")
        f.write(header("TRAILER!!!", 0, 0, nlink=1))
        pad = -f.tell() % 512
        f.write(b"\x00" * pad)
    os.replace(out + ".tmp", out)
    return 0


def main(argv):
    if len(argv) >= 3 and argv[0] == "extract-vmlinux":
        return extract_vmlinux(argv[1], argv[2])
    if len(argv) >= 2 and argv[0] == "moddeps":
        return moddeps(argv[1], argv[2:])
    if len(argv) >= 2 and argv[0] == "mkcpio":
        return mkcpio(argv[1], argv[2:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
