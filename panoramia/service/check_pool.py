"""Upload checks run a few at a time, in turn per contributor, without holding a thread.

``slots`` checks run at once, and no contributor holds more than ``per_owner`` of them
(``slots − 1`` by default): one slot is always left to the others, so a contributor who
completes 70 uploads at once queues them behind her own, and another's check starts at once
(or after at most one check per slot when several contributors are checking). The waiting
ones are served round robin over their owners, first come first served within each. A
waiting check is a coroutine on the event loop, not a thread of the request pool, so reads,
``/healthz`` and uploads' chunks keep their threads while checks wait; each check runs in a
child process at a lower scheduling priority
(:func:`panoramia.service.uploads.files.finish`).

The pool is one server process's: every coroutine that uses it runs on that process's event
loop (no locks needed). Several server processes each have their own.
"""

from __future__ import annotations

import asyncio
from collections import Counter, deque
from collections.abc import AsyncIterator, Hashable
from contextlib import asynccontextmanager


class CheckPool:
    """``slots`` checks at once, at most ``per_owner`` of them one owner's; the waiting ones
    are served round robin over their owners."""

    def __init__(self, slots: int, per_owner: int | None = None) -> None:
        if slots < 1:
            raise ValueError(f"slots: at least 1, got {slots}")
        self.slots = slots
        self.per_owner = per_owner if per_owner is not None else max(1, slots - 1)
        self.running = 0
        self.held: Counter[Hashable] = Counter()
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
            self._release(owner)

    async def _acquire(self, owner: Hashable) -> None:
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(owner, deque()).append(granted)
        if owner not in self._turns:
            self._turns.append(owner)
        self._dispatch()
        try:
            await granted
        except asyncio.CancelledError:
            if granted.done() and not granted.cancelled():
                self._release(owner)  # the slot came as the wait was cancelled: pass it on
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

    def _release(self, owner: Hashable) -> None:
        self.running -= 1
        self.held[owner] -= 1
        if self.held[owner] <= 0:
            del self.held[owner]
        self._dispatch()

    def _dispatch(self) -> None:
        """Give free slots to the owners in turn that have a check waiting and are under
        ``per_owner``; an owner served goes to the back of the turns if more of hers wait."""
        looked = 0
        while self.running < self.slots and looked < len(self._turns):
            owner = self._turns.popleft()
            if self.held[owner] >= self.per_owner:
                self._turns.append(owner)
                looked += 1
                continue
            queue = self._waiting[owner]
            granted = queue.popleft()
            if queue:
                self._turns.append(owner)
            else:
                del self._waiting[owner]
            if granted.done():  # cancelled while it waited: look at every owner again
                looked = 0
                continue
            self.running += 1
            self.held[owner] += 1
            granted.set_result(None)
            looked = 0
