"""The messages between the model server and its workers: length-prefixed pickles over the worker's socket pair.

Both ends are smneuron's, so the format is too (an 8-byte big-endian length, then the pickle), and neither end relies
on ``multiprocessing.Connection`` reading a whole message from a blocking descriptor. That reliance is what failed:
uvloop's ``add_reader`` leaves the server's end non-blocking (asyncio's does not), so ``Connection.recv()`` raised
``BlockingIOError`` on a reply larger than the socket's buffer that had not fully arrived, and the pool took a live
worker for a dead one (PLATFORM.md, "uvloop"). Here every read and write works in either mode:

- ``send`` / ``recv``: whole messages, for the worker (its end is blocking) and for the server before its event loop
  runs (the ready message); a descriptor found non-blocking is waited on with ``select``;
- ``Reader``: the server's incremental reader, fed on each readable event until a message is whole;
- ``send_async``: the server's write of a batch, waiting for the socket to drain instead of blocking the loop.

The end of the stream (``EOFError``) is the only sign of a dead worker a reader gives.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import select
import struct
import time
from typing import Any

HEADER = struct.Struct("!Q")
CHUNK = 1 << 20


def encode(message: Any) -> bytes:
    """``message`` as one frame: its pickle's length, then the pickle."""
    payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(payload)) + payload


def send(fd: int, message: Any) -> None:
    """Write ``message`` whole to ``fd`` (blocking or not).

    Raises:
        OSError: the other end is gone (BrokenPipeError) or the descriptor failed.
    """
    view = memoryview(encode(message))
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            select.select([], [fd], [])


def recv(fd: int, timeout: float | None = None) -> Any:
    """Read one whole message from ``fd`` (blocking or not).

    Raises:
        EOFError: the other end closed before a whole message arrived.
        TimeoutError: nothing whole within ``timeout`` seconds.
    """
    reader = Reader()
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            raise TimeoutError(f"no message within {timeout} s")
        done, message = reader.feed(fd)
        if done:
            return message


class Reader:
    """One message read in parts, as they arrive: ``feed`` reads what a non-blocking ``fd`` has now (a blocking one
    until the message is whole)."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._size: int | None = None

    def feed(self, fd: int) -> tuple[bool, Any]:
        """Read what is available; ``(True, message)`` once the message is whole, else ``(False, None)``.

        Raises:
            EOFError: the other end closed (the worker died).
        """
        while True:
            want = CHUNK if self._size is None else max(CHUNK, self._size + HEADER.size - len(self._buffer))
            try:
                data = os.read(fd, want)
            except BlockingIOError:
                return False, None
            except ConnectionResetError:
                raise EOFError("the worker's socket was reset") from None
            if not data:
                raise EOFError("the worker closed its socket")
            self._buffer += data
            if self._size is None and len(self._buffer) >= HEADER.size:
                (self._size,) = HEADER.unpack_from(self._buffer)
            if self._size is not None and len(self._buffer) >= HEADER.size + self._size:
                end = HEADER.size + self._size
                message = pickle.loads(memoryview(self._buffer)[HEADER.size : end])
                if len(self._buffer) > end:  # a worker sends one reply per batch: nothing may follow it
                    raise EOFError(f"{len(self._buffer) - end} unexpected bytes after the worker's reply")
                return True, message


async def send_async(fd: int, message: Any) -> None:
    """Write ``message`` whole to the non-blocking ``fd`` from the running event loop, waiting (not blocking) while
    the socket's buffer is full.

    Raises:
        OSError: the other end is gone.
    """
    loop = asyncio.get_running_loop()
    view = memoryview(encode(message))
    while view:
        try:
            view = view[os.write(fd, view) :]
            continue
        except BlockingIOError:
            pass
        writable = loop.create_future()
        loop.add_writer(fd, _set_once, writable)
        try:
            await writable
        finally:
            loop.remove_writer(fd)


def _set_once(future: asyncio.Future) -> None:
    if not future.done():
        future.set_result(None)
