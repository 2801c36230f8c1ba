"""Reading a queue's event stream (`emq:{q}:events`, docs/protocol.md, "Events"): what happened
to its jobs, in order, as the scripts appended it.

`QueueEvents` reads with `XREAD BLOCK`, so a reader waits for the next event rather than polling;
each `Event` carries the stream entry's id, which a reader keeps to go on where it stopped. The
stream is trimmed to about `max-events` entries: a reader that falls further behind misses the
oldest. `AsyncQueueEvents` is the same on a redis.asyncio client.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any, NamedTuple

from .runtime import keys
from .runtime.clients import AsyncClient, SyncClient
from .runtime.replies import text


class Event(NamedTuple):
    """One entry of the stream: its id, the event's name, its job (`""` for a queue's own event,
    such as `paused`) and its other fields, all as text."""

    id: str
    event: str
    job_id: str
    fields: Mapping[str, str]


def _events(reply: Any) -> list[Event]:
    """XREAD's reply for one stream, as events."""
    found = []
    for _stream, entries in reply or ():
        for entry_id, raw in entries:
            fields = {text(k): text(v) for k, v in raw.items()}
            event, job_id = fields.pop("event", ""), fields.pop("jobId", "")
            found.append(Event(text(entry_id), event, job_id, fields))
    return found


class _Cursor:
    """Where a reader of a queue's stream is: after `last_id`."""

    def __init__(self, queue: str, last_id: str) -> None:
        self.key = keys.events(queue)  # checks the queue's name
        self.last_id = last_id

    def _took(self, found: list[Event]) -> list[Event]:
        if found:
            self.last_id = found[-1].id
        return found


class QueueEvents(_Cursor):
    """The events of `queue` after `last_id`: "$" (the default) for those to come, "0" for every
    one the stream still holds, or the id of the last event read."""

    def __init__(self, client: SyncClient, queue: str, last_id: str = "$") -> None:
        super().__init__(queue, last_id)
        self.client = client

    def read(self, block: float = 1.0, count: int = 100) -> list[Event]:
        """The next events, at most `count`; waits up to `block` s for one ([] when none came).
        A reader from "$" starts after the stream's last entry at its first read, so no event
        between two reads is missed."""
        if self.last_id == "$":
            self.last_id = _after(self.client.xrevrange(self.key, count=1))
        reply = self.client.xread({self.key: self.last_id}, count=count, block=int(block * 1000))
        return self._took(_events(reply))

    def __iter__(self) -> Iterator[Event]:
        """Every event as it comes, for ever."""
        while True:
            yield from self.read()


class AsyncQueueEvents(_Cursor):
    """`QueueEvents` on a redis.asyncio client."""

    def __init__(self, client: AsyncClient, queue: str, last_id: str = "$") -> None:
        super().__init__(queue, last_id)
        self.client = client

    async def read(self, block: float = 1.0, count: int = 100) -> list[Event]:
        """`QueueEvents.read`, awaited."""
        if self.last_id == "$":
            self.last_id = _after(await self.client.xrevrange(self.key, count=1))
        reply = await self.client.xread(
            {self.key: self.last_id}, count=count, block=int(block * 1000)
        )
        return self._took(_events(reply))

    async def __aiter__(self) -> AsyncIterator[Event]:
        while True:
            for event in await self.read():
                yield event


def _after(newest: Any) -> str:
    """Where a reader from "$" starts: after the newest entry, or at the start of an empty
    stream."""
    return text(newest[0][0]) if newest else "0"
