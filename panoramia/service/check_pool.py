"""Upload checks run a few at a time, in turn per contributor, without holding a thread.

A contributor who completes 70 uploads at once queues 70 checks behind her own; another's
check waits for at most one of hers per free slot (round robin over the contributors who
have checks waiting, first come first served within each). A waiting check is a coroutine
on the event loop, not a thread of the request pool, so reads, ``/healthz`` and uploads'
chunks keep their threads while checks wait; each check runs in a child process at a lower
scheduling priority (:func:`panoramia.service.uploads.files.finish_async`).

The pool is one server process's: every coroutine that uses it runs on that process's event
loop (no locks needed). Several server processes each have their own.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Hashable
from contextlib import asynccontextmanager


class CheckPool:
    """``slots`` checks at once; the waiting ones served round robin over their owners."""

    def __init__(self, slots: int) -> None:
        if slots < 1:
            raise ValueError(f"slots: at least 1, got {slots}")
        self.slots = slots
        self.running = 0
        self._waiting: dict[Hashable, deque[asyncio.Future[None]]] = {}
        self._turns: deque[Hashable] = deque()

    def waiting(self, owner: Hashable | None = None) -> int:
        """Checks waiting for a slot (``owner``'s only, when given)."""
        if owner is not None:
            return len(self._waiting.get(owner, ()))
        return sum(len(queue) for queue in self._waiting.values())

    @asynccontextmanager
    async def turn(self, owner: Hashable) -> AsyncIterator[None]:
        """Wait for a slot in ``owner``'s turn, hold it inside the block."""
        await self._acquire(owner)
        try:
            yield
        finally:
            self._release()

    async def _acquire(self, owner: Hashable) -> None:
        if self.running < self.slots and not self._turns:
            self.running += 1
            return
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(owner, deque()).append(granted)
        if owner not in self._turns:
            self._turns.append(owner)
        try:
            await granted
        except asyncio.CancelledError:
            if granted.done() and not granted.cancelled():
                self._release()  # the slot came as the wait was cancelled: pass it on
            else:
                self._forget(owner, granted)
            raise

    def _forget(self, owner: Hashable, granted: asyncio.Future[None]) -> None:
        queue = self._waiting.get(owner)
        if queue is not None and granted in queue:
            queue.remove(granted)
            if not queue:
                del self._waiting[owner]
                self._turns.remove(owner)

    def _release(self) -> None:
        """Pass the slot to the next owner in turn that has a check waiting, else free it."""
        while self._turns:
            owner = self._turns.popleft()
            queue = self._waiting[owner]
            granted = queue.popleft()
            if queue:
                self._turns.append(owner)  # her next check waits for her next turn
            else:
                del self._waiting[owner]
            if not granted.done():
                granted.set_result(None)
                return
        self.running -= 1
