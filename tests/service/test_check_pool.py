"""The pool upload checks wait and run in: slots, a share per contributor, turns, cancels."""

from __future__ import annotations

import asyncio

import pytest

from panoramia.service.check_pool import CheckPool


def run(coroutine):  # type: ignore[no-untyped-def]
    return asyncio.run(coroutine)


def test_a_flood_leaves_a_slot_to_the_others() -> None:
    async def scenario() -> list[str]:
        pool, order, release = CheckPool(2), [], asyncio.Event()

        async def check(owner: str, name: str) -> None:
            async with pool.turn(owner):
                order.append(name)
                await release.wait()

        flood = [asyncio.create_task(check("mallory", f"m{i}")) for i in range(5)]
        await asyncio.sleep(0)
        assert (pool.running, pool.waiting("mallory")) == (1, 4)  # she holds one slot of two
        alice = asyncio.create_task(check("alice", "a"))
        await asyncio.sleep(0)
        assert order == ["m0", "a"]  # Alice started at once, beside Mallory's one
        release.set()
        await asyncio.gather(*flood, alice)
        return order

    assert run(scenario()) == ["m0", "a", "m1", "m2", "m3", "m4"]


def test_waiting_checks_are_served_round_robin_over_their_owners() -> None:
    async def scenario() -> list[str]:
        pool, order = CheckPool(1), []
        gate = asyncio.Event()

        async def check(owner: str, name: str) -> None:
            async with pool.turn(owner):
                order.append(name)
                await gate.wait()

        first = asyncio.create_task(check("z", "z0"))  # holds the one slot
        await asyncio.sleep(0)
        tasks = [asyncio.create_task(check(o, f"{o}{i}"))
                 for o, n in (("a", 3), ("b", 2), ("c", 1)) for i in range(n)]  # fmt: skip
        await asyncio.sleep(0)
        gate.set()
        await asyncio.gather(first, *tasks)
        return order

    assert run(scenario()) == ["z0", "a0", "b0", "c0", "a1", "b1", "a2"]


def test_a_cancelled_wait_gives_its_place_up() -> None:
    async def scenario() -> list[str]:
        pool, order, gate = CheckPool(1), [], asyncio.Event()

        async def check(owner: str, name: str) -> None:
            async with pool.turn(owner):
                order.append(name)
                await gate.wait()

        holder = asyncio.create_task(check("a", "a0"))
        await asyncio.sleep(0)
        gone = asyncio.create_task(check("b", "b0"))
        later = asyncio.create_task(check("c", "c0"))
        await asyncio.sleep(0)
        gone.cancel()
        with pytest.raises(asyncio.CancelledError):
            await gone
        assert pool.waiting() == 1
        gate.set()
        await asyncio.gather(holder, later)
        assert (pool.running, pool.waiting()) == (0, 0)
        return order

    assert run(scenario()) == ["a0", "c0"]
