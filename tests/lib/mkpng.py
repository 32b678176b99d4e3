"""Write a PNG of W x H pixels to stdout, or its data URL with --url: made
here with zlib alone, so that tests check loadtrace's image reading against
images it did not make. --lie-height H2 writes H2 in the header (the data
stays that of H rows, CRC fixed: a header that lies)."""
import base64
import struct
import sys
import zlib


def png(w, h, head_h=None):
    raw = b"".join(b"\x00" + bytes(((x * 7 + y * 3) & 0xFF) for x in range(w * 3)) for y in range(h))

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", w, head_h or h, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def main():
    args = sys.argv[1:]
    url = "--url" in args
    lie = None
    if "--lie-height" in args:
        lie = int(args[args.index("--lie-height") + 1])
    w, h = int(args[0]), int(args[1])
    data = png(w, h, lie)
    if url:
        sys.stdout.write("data:image/png;base64," + base64.b64encode(data).decode())
    else:
        sys.stdout.buffer.write(data)


main()
