"""Job schedulers: a job every N ms, or on a cron pattern in a time zone (docs/protocol.md, "Job
schedulers").

The scripts take time in ARGV, so a pattern's runs are computed here and sent as `next_millis`:
with cronsim (the `cron` extra: `pip install 'echomq-scripts[cron]'`), Healthchecks.io's cron
evaluator, in the scheduler's time zone (zoneinfo). A pattern has cron's five fields (minute,
hour, day of month, month, day of week); across a change of clocks it follows cron's rules: a
time that does not exist that day runs at the first one that does, and an hourly pattern runs in
both of a repeated hour.

`upsert_job_scheduler` creates or updates a scheduler and returns its pending iteration. A worker
that picks up an iteration (its fields have "rjk") calls `schedule_next`, as the Worker does:
only the pick of the current iteration schedules the next one, however many workers race.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from . import calls
from .runtime import ArgumentError
from .runtime.clients import AsyncClient, SyncClient

if TYPE_CHECKING:
    from cronsim import CronSim

_SCRIPT = "addJobScheduler-10"


def upsert_job_scheduler(
    client: SyncClient,
    queue: str,
    scheduler_id: str,
    *,
    now: int,
    name: str,
    every: int = 0,
    pattern: str = "",
    tz: str = "UTC",
    limit: int = 0,
    start_date: int = 0,
    end_date: int = 0,
    offset: int = 0,
    data: object = None,
    opts: Mapping[str, object] | None = None,
    priority: int = 0,
) -> tuple[str, int]:
    """Create or update the scheduler `scheduler_id` of `queue` (addJobScheduler-10): `every` ms
    or the cron `pattern` in `tz`, from `start_date` to `end_date` (ms, 0 for none), at most
    `limit` iterations (0 for none). Its iterations are jobs named `name` with `data`, `opts` and
    `priority`. Returns the pending iteration's id ("" when the limit or the end date is reached)
    and when it runs."""
    steps = _upserting(
        queue,
        scheduler_id,
        now=now,
        name=name,
        every=every,
        pattern=pattern,
        tz=tz,
        limit=limit,
        start_date=start_date,
        end_date=end_date,
        offset=offset,
        data=data,
        opts=opts,
        priority=priority,
    )
    return calls.run(client, steps)


async def upsert_job_scheduler_async(
    client: AsyncClient, queue: str, scheduler_id: str, *, now: int, name: str, **settings: Any
) -> tuple[str, int]:
    """`upsert_job_scheduler` on a redis.asyncio client, with the same settings."""
    steps = _upserting(queue, scheduler_id, now=now, name=name, **settings)
    return await calls.run_async(client, steps)


def _upserting(
    queue: str, scheduler_id: str, *, now: int, name: str, **settings: Any
) -> calls.Steps[tuple[str, int]]:
    """addJobScheduler-10 with `settings` (upsert_job_scheduler's), a pattern's next run
    computed here; a setting left out takes the wrapper's default."""
    pattern = settings.setdefault("pattern", "")
    settings.setdefault("every", 0)
    settings.setdefault("data", None)
    tz = settings.pop("tz", "UTC")
    next_millis = 0
    if pattern:
        next_millis = next_run(pattern, tz, max(now, settings.get("start_date", 0)) - 1)
    if settings.get("opts") is None:
        settings.pop("opts", None)
    arguments = {"queue": queue, "scheduler_id": scheduler_id, "now": now, "name": name}
    added: tuple[str, int] = yield (
        "add_job_scheduler",
        {**arguments, **settings, "tz": tz if pattern else "", "next_millis": next_millis},
    )
    return added


def schedule_next(
    client: SyncClient, queue: str, job_id: str, fields: Mapping[str, str], *, now: int
) -> str:
    """After a worker picked up `job_id` (with its `fields`, as moveToActive-11 gives them): when
    the job is a scheduler's iteration, schedule the next one (updateJobScheduler-10). Returns
    the next iteration's id, or "" when none was added (not an iteration, not the current one,
    or the scheduler has run its course)."""
    return calls.run(client, scheduling_next(queue, job_id, fields, now=now))


def scheduling_next(
    queue: str, job_id: str, fields: Mapping[str, str], *, now: int
) -> calls.Steps[str]:
    """`schedule_next`'s calls (calls.py), for a Worker to drive on its own client."""
    scheduler_id = fields.get("rjk")
    if not scheduler_id:
        return ""
    scheduler = yield "get_job_scheduler", {"queue": queue, "scheduler_id": scheduler_id}
    if not scheduler:
        return ""
    next_millis = 0
    if scheduler.get("pattern"):
        # Runs missed while nobody picked the iteration up are skipped: the next is after now.
        after = max(int(scheduler["next"]), now)
        next_millis = next_run(scheduler["pattern"], scheduler.get("tz") or "UTC", after)
    next_id: str = yield (
        "update_job_scheduler",
        {
            "queue": queue,
            "scheduler_id": scheduler_id,
            "job_id": job_id,
            "now": now,
            "next_millis": next_millis,
        },
    )
    return next_id


def next_run(pattern: str, tz: str, after: int) -> int:
    """The first run of the cron `pattern` in the time zone `tz` strictly after `after` (ms since
    the epoch), in ms."""
    try:
        zone = ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError) as bad:
        raise ArgumentError(f"{_SCRIPT}: no time zone {tz!r}: {bad}") from None
    start = datetime.fromtimestamp(after / 1000, UTC).astimezone(zone)
    # A cron time has whole minutes: what is left of a millisecond does not move it.
    return int(next(_cron(pattern, start)).timestamp() * 1000)


def _cron(pattern: str, start: datetime) -> CronSim:
    try:
        from cronsim import CronSim, CronSimError
    except ModuleNotFoundError:
        raise ArgumentError(
            f"{_SCRIPT}: a pattern needs the cron evaluator: pip install 'echomq-scripts[cron]'"
        ) from None
    try:
        return CronSim(pattern, start)
    except CronSimError as bad:
        raise ArgumentError(f"{_SCRIPT}: pattern {pattern!r}: {bad}") from None
