"""A TCP forwarder: accepts on LISTEN_HOST:LISTEN_PORT, connects each client to
TARGET_HOST:TARGET_PORT and copies bytes both ways until either side closes.

    python -m tests.support.forwarder LISTEN_HOST LISTEN_PORT TARGET_HOST TARGET_PORT

The partition test runs it in a process of its own so that the worker hosts (network
namespaces) reach this machine's PostgreSQL, which listens on 127.0.0.1 only, through
the test network's address. Prints "ready" once it listens.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            writer.close()


async def main(listen_host: str, listen_port: int, target_host: str, target_port: int) -> None:
    async def handle(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            target_r, target_w = await asyncio.open_connection(target_host, target_port)
        except OSError:
            client_w.close()
            return
        await asyncio.gather(_pipe(client_r, target_w), _pipe(target_r, client_w))

    server = await asyncio.start_server(handle, listen_host, listen_port)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    host, port, target, target_port = sys.argv[1:5]
    asyncio.run(main(host, int(port), target, int(target_port)))
