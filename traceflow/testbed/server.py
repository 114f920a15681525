"""The testbed's file server (runs in the server namespace).

Protocol, one TCP connection per transfer: the client sends the size in bytes as a decimal line;
the server sends that many bytes and closes.

    python -m traceflow.testbed.server ADDRESS PORT
"""
import asyncio
import sys

CHUNK = b"x" * 65536


async def _serve_one(reader, writer):
    try:
        n = int((await reader.readline()).strip() or 0)
        while n > 0:
            k = min(n, len(CHUNK))
            writer.write(CHUNK[:k])
            n -= k
            await writer.drain()
    except (OSError, ValueError):
        pass                       # a client that went away or sent garbage ends its transfer
    finally:
        writer.close()


async def _main(address, port):
    server = await asyncio.start_server(_serve_one, address, port, backlog=4096,
                                        reuse_address=True)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    async with server:
        await server.serve_forever()


def main(argv=None):
    address, port = (argv or sys.argv[1:])[:2]
    asyncio.run(_main(address, int(port)))


if __name__ == "__main__":
    main()
