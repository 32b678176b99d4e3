"""A test's witness of a video replay sent: walks an AVI's RIFF chunks by
Microsoft's layout (not loadtrace's reader), checks the sizes add up, the
stream is 'vids' 'MJPG', movi holds as many '00dc' frames as avih and strh
say and idx1 points at each of them, writes frame i to PREFIX.i.jpg (for
imgdecode) and prints "FRAMES W H US_PER_FRAME". Exit 1 on any mismatch.
Run as: avicheck.py FILE PREFIX."""
import struct
import sys


def fail(why):
    print("avicheck: " + why, file=sys.stderr)
    sys.exit(1)


def chunks(b, at, end):
    while at + 8 <= end:
        cid, size = b[at:at + 4], struct.unpack("<I", b[at + 4:at + 8])[0]
        if at + 8 + size > end:
            fail("chunk %r at %d runs past its parent" % (cid, at))
        yield cid, at, size
        at += 8 + size + (size & 1)


def main():
    path, prefix = sys.argv[1], sys.argv[2]
    b = open(path, "rb").read()
    if b[:4] != b"RIFF" or b[8:12] != b"AVI ":
        fail("no RIFF AVI header")
    if struct.unpack("<I", b[4:8])[0] != len(b) - 8:
        fail("RIFF size is not the file's")
    top = {cid if cid != b"LIST" else b[at + 8:at + 12]: (at, size) for cid, at, size in chunks(b, 12, len(b))}
    for need in (b"hdrl", b"movi", b"idx1"):
        if need not in top:
            fail("no %r" % need)
    at, size = top[b"hdrl"]
    hd = {cid if cid != b"LIST" else b[a + 8:a + 12]: (a, s) for cid, a, s in chunks(b, at + 12, at + 8 + size)}
    a, _ = hd[b"avih"]
    us, _, _, _, frames, _, streams, _, w, h = struct.unpack("<10I", b[a + 8:a + 48])
    if streams != 1:
        fail("streams %d" % streams)
    sa, ss = hd[b"strl"]
    sl = {cid: (x, s) for cid, x, s in chunks(b, sa + 12, sa + 8 + ss)}
    x, _ = sl[b"strh"]
    if b[x + 8:x + 12] != b"vids" or b[x + 12:x + 16] != b"MJPG":
        fail("stream is not vids/MJPG")
    scale, rate, _, length = struct.unpack("<4I", b[x + 28:x + 44])
    if length != frames or rate == 0 or abs(scale * 1e6 / rate - us) > 1:
        fail("strh says %d frames at %d/%d, avih %d at %d us" % (length, scale, rate, frames, us))
    x, _ = sl[b"strf"]
    bw, bh = struct.unpack("<ii", b[x + 12:x + 20])
    if (bw, bh) != (w, h) or b[x + 24:x + 28] != b"MJPG":
        fail("strf says %dx%d %r" % (bw, bh, b[x + 24:x + 28]))
    ma, ms = top[b"movi"]
    got = [(a, s) for cid, a, s in chunks(b, ma + 12, ma + 8 + ms) if cid == b"00dc"]
    if len(got) != frames:
        fail("movi holds %d frames, the header says %d" % (len(got), frames))
    ia, isz = top[b"idx1"]
    if isz != 16 * frames:
        fail("idx1 has %d bytes for %d frames" % (isz, frames))
    for i, (a, s) in enumerate(got):
        cid, flags, off, n = struct.unpack("<4sIII", b[ia + 8 + 16 * i:ia + 24 + 16 * i])
        if cid != b"00dc" or not flags & 0x10 or ma + 8 + off != a or n != s:
            fail("idx1 entry %d does not point at frame %d" % (i, i))
        open("%s.%d.jpg" % (prefix, i), "wb").write(b[a + 8:a + 8 + s])
    print(frames, w, h, us)


main()
