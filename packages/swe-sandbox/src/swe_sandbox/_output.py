"""Bounded capture of command output: keep a head and a tail, count the rest, never buffer it."""

from __future__ import annotations

from collections import deque


class BoundedOutput:
    """Accumulates bytes up to `limit`: the first 3/4 as a head, the last 1/4 as a tail.

    Memory stays O(limit) however much a command prints (10 MB of output is
    truncated, not buffered whole); the text says how much was dropped.
    """

    def __init__(self, limit: int) -> None:
        self._head_limit = max(1, (limit * 3) // 4)
        self._tail_limit = max(0, limit - self._head_limit)
        self._head = bytearray()
        self._tail: deque[bytes] = deque()
        self._tail_size = 0
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if not chunk or self._tail_limit == 0:
            return
        self._tail.append(chunk[-self._tail_limit :])
        self._tail_size += len(self._tail[-1])
        while self._tail_size - len(self._tail[0]) >= self._tail_limit:
            self._tail_size -= len(self._tail.popleft())

    @property
    def truncated(self) -> bool:
        return self.total > self._head_limit + self._tail_limit

    def text(self) -> str:
        tail = b"".join(self._tail)
        if not self.truncated:
            return (bytes(self._head) + tail).decode(errors="replace")
        tail = tail[-self._tail_limit :]
        dropped = self.total - len(self._head) - len(tail)
        marker = f"\n[... output truncated: {dropped} of {self.total} bytes dropped ...]\n"
        return bytes(self._head).decode(errors="replace") + marker + tail.decode(errors="replace")
