"""The asyncio <-> engine-thread bridge on its own (no HTTP)."""

from __future__ import annotations

import asyncio

import pytest

from deltaserve.engine import InvalidRequestError, SamplingParams
from deltaserve.engine.async_engine import AsyncEngine, EngineOverloadedError, EngineStepError


@pytest.fixture()
def bridge(tiny_llama):
    from deltaserve.engine import Engine

    engine = Engine.from_pretrained(str(tiny_llama), dtype="float32", device="cpu", num_blocks=256,
                                    max_num_seqs=2)
    aeng = AsyncEngine(engine, max_waiting=1)
    yield aeng
    aeng.shutdown()


def request(prompt, max_tokens=8):
    return prompt, SamplingParams(max_tokens=max_tokens, ignore_eos=True)


async def settle(aeng: AsyncEngine):
    for _ in range(400):
        stats = await aeng.stats()
        if aeng.num_unfinished == 0 and stats.num_running == 0 and stats.num_waiting == 0:
            return stats
        await asyncio.sleep(0.02)
    raise AssertionError("engine did not settle")


def test_outputs_arrive_in_order_and_requests_batch(bridge):
    async def main():
        streams = [await bridge.add_request(*request([1, 2, 3, i + 4])) for i in range(3)]

        async def drain(stream):
            return [out async for out in stream]

        results = await asyncio.gather(*(drain(s) for s in streams))
        return results, await settle(bridge)

    results, stats = asyncio.run(main())
    for outs in results:
        assert outs[-1].finished and outs[-1].finish_reason == "length"
        assert sum(len(o.new_token_ids) for o in outs) == 8 == len(outs[-1].token_ids)
        assert not any(o.finished for o in outs[:-1])
    assert stats.blocks_in_use == 0


def test_invalid_request_raises_in_caller_only(bridge):
    async def main():
        with pytest.raises(InvalidRequestError):
            await bridge.add_request(*request([]))
        ok = await bridge.add_request(*request([5, 6]))
        outs = [o async for o in ok]
        return outs

    assert asyncio.run(main())[-1].finish_reason == "length"
    assert bridge.num_unfinished == 0


def test_overload_is_refused_and_abort_frees_blocks(bridge):
    async def main():
        # 2 run + 1 waits
        held = [await bridge.add_request(*request([7, 8, 9], max_tokens=1500)) for _ in range(3)]
        with pytest.raises(EngineOverloadedError):
            await bridge.add_request(*request([1]))
        for stream in held:
            stream.abort()
        return await settle(bridge)

    stats = asyncio.run(main())
    assert stats.blocks_in_use == 0 and bridge.num_unfinished == 0


def test_caller_cancelled_while_submitting_leaks_nothing(bridge):
    async def main():
        for delay in (0, 0, 0.001):  # cancelled before or after the worker took the request in
            task = asyncio.create_task(bridge.add_request(*request([3, 4, 5], max_tokens=1500)))
            await asyncio.sleep(delay)
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
            else:  # it got in before the cancel: its caller owns it
                task.result().abort()
        return await settle(bridge)

    stats = asyncio.run(main())
    assert stats.blocks_in_use == 0 and bridge.num_unfinished == 0


def test_shutdown_fails_in_flight_streams(bridge):
    async def main():
        stream = await bridge.add_request(*request([1, 2], max_tokens=1500))
        await asyncio.to_thread(bridge.shutdown)
        with pytest.raises(EngineStepError, match="shutting down"):
            async for _ in stream:
                pass

    asyncio.run(main())
    assert not bridge._thread.is_alive()
