"""Job schedulers (docs/protocol.md, "Job schedulers"): addJobScheduler-10, updateJobScheduler-10,
removeJobScheduler-8, getJobScheduler-2 and getJobSchedulers-1 through echomq_scripts.schedulers
and the wrappers; `every` and cron patterns, limits and end dates, workers that race, and the
codes -8, -10 and -11 raised as their exceptions."""

from __future__ import annotations

import threading
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from echomq_scripts import generated as g
from echomq_scripts.generated import errors
from echomq_scripts.runtime import ArgumentError, LuaError
from echomq_scripts.schedulers import next_run, schedule_next, upsert_job_scheduler
from tests.support.invariants import NOW
from tests.support.queue_harness import Queue

DOCS = Path(__file__).parent.parent / "docs"
EVERY = 60_000


def upsert(q: Queue, scheduler_id: str = "s", **settings: Any) -> tuple[str, int]:
    settings.setdefault("now", NOW)
    settings.setdefault("name", "tick")
    try:
        return upsert_job_scheduler(q.r, q.name, scheduler_id, **settings)
    finally:
        q.check()


def scheduler(q: Queue, scheduler_id: str = "s") -> dict[str, str]:
    return g.get_job_scheduler(q.r, queue=q.name, scheduler_id=scheduler_id)


def iteration(scheduler_id: str, run_at: int) -> str:
    return f"repeat-{scheduler_id}-{run_at}"


def run_iteration(q: Queue, now: int, workers: int = 3) -> list[str]:
    """`workers` threads race for the queue at `now`: each picks a job up, schedules the next
    iteration if it picked one (and, as a re-sent call would, once more), and completes it.
    Returns the ids the workers picked, in no order."""
    picked: list[str] = []
    errors_seen: list[BaseException] = []
    start = threading.Barrier(workers)

    # Raw wrapper calls: the harness's take and complete check the queue after each step, and
    # that check is no snapshot while other threads move jobs.
    def work(index: int) -> None:
        try:
            start.wait()
            job_id, fields, _, _ = g.move_to_active(
                q.r,
                queue=q.name,
                token=f"w{index}-{now}",
                lock_duration=30_000,
                now=now,
                limit_max=0,
                limit_duration=0,
                concurrency=0,
            )
            if not job_id:
                return
            picked.append(job_id)
            schedule_next(q.r, q.name, job_id, fields, now=now)
            schedule_next(q.r, q.name, job_id, fields, now=now)  # sent twice: no second job
            g.move_to_finished(
                q.r,
                queue=q.name,
                job_id=job_id,
                token=f"w{index}-{now}",
                now=now,
                outcome="completed",
                result='"ok"',
                stacktrace="",
                jitter=0.0,
                fetch_next=False,
                lock_duration=30_000,
                limit_max=0,
                limit_duration=0,
                concurrency=0,
                max_metrics=0,
                backoff_delay=0,
            )
        except BaseException as failure:  # reported below, on the test's thread
            errors_seen.append(failure)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors_seen, errors_seen
    q.check()
    return picked


def test_an_every_scheduler_runs_five_iterations_once_each_with_three_workers_racing(
    q: Queue,
) -> None:
    first, run_at = upsert(q, every=EVERY, start_date=NOW + EVERY)
    assert (first, run_at) == (iteration("s", NOW + EVERY), NOW + EVERY)
    assert q.check() == {first: "delayed"}
    ran: list[str] = []
    for k in range(1, 6):
        now = NOW + k * EVERY
        assert run_iteration(q, now - 1) == []  # not due yet
        picked = run_iteration(q, now)
        assert picked == [iteration("s", now)]
        ran += picked
    states = q.check()
    assert ran == [iteration("s", NOW + k * EVERY) for k in range(1, 6)]
    assert states == {
        **dict.fromkeys(ran, "completed"),
        iteration("s", NOW + 6 * EVERY): "delayed",
    }
    assert q.scores("delayed") == {iteration("s", NOW + 6 * EVERY): NOW + 6 * EVERY}
    assert scheduler(q)["ic"] == "6"
    assert scheduler(q)["next"] == str(NOW + 6 * EVERY)


def test_missed_runs_are_skipped_to_the_next_slot_that_keeps_the_offset(q: Queue) -> None:
    first, _ = upsert(q, every=EVERY, offset=5_000, now=NOW)
    slot = (NOW // EVERY) * EVERY + 5_000
    slot = slot if slot > NOW else slot + EVERY
    assert first == iteration("s", slot)
    late = slot + 3 * EVERY + 10  # three periods missed
    assert run_iteration(q, late) == [first]
    assert q.scores("delayed") == {iteration("s", slot + 4 * EVERY): slot + 4 * EVERY}


def test_upserting_the_same_settings_changes_nothing_and_new_ones_replace_the_iteration(
    q: Queue,
) -> None:
    first, run_at = upsert(q, every=EVERY, data={"v": 1})
    before = q.events()
    assert upsert(q, every=EVERY, data={"v": 1}, now=NOW + 10) == (first, run_at)
    assert q.events() == before
    # New data, the same period: the pending iteration is replaced, at its time.
    assert upsert(q, every=EVERY, data={"v": 2}, now=NOW + 10) == (first, run_at)
    assert q.job(first)["data"] == '{"v":2}'
    assert q.events()[len(before)] == {"event": "removed", "jobId": first, "prev": "wait"}
    # A new period: a new first run, now.
    again, at = upsert(q, every=2 * EVERY, now=NOW + 20)
    assert (again, at) == (iteration("s", NOW + 20), NOW + 20)
    assert q.check() == {again: "wait"}
    assert scheduler(q)["ic"] == "1"


def test_limit_and_end_date_stop_a_scheduler(q: Queue) -> None:
    upsert(q, "limited", every=EVERY, limit=2)
    assert run_iteration(q, NOW) == [iteration("limited", NOW)]
    assert run_iteration(q, NOW + EVERY) == [iteration("limited", NOW + EVERY)]
    assert q.scores("delayed") == {}
    assert scheduler(q, "limited")["ic"] == "2"
    upsert(q, "ending", every=EVERY, end_date=NOW + EVERY + 1, now=NOW + 2 * EVERY)
    ending = iteration("ending", NOW + 2 * EVERY)
    assert q.state(ending) == "unknown"  # past its end date at once: nothing scheduled
    assert upsert(q, "dated", every=EVERY, end_date=NOW + EVERY) == (iteration("dated", NOW), NOW)
    assert run_iteration(q, NOW) == [iteration("dated", NOW)]
    assert run_iteration(q, NOW + EVERY) == [iteration("dated", NOW + EVERY)]
    assert run_iteration(q, NOW + 2 * EVERY) == []


def test_a_pattern_scheduler_across_a_change_of_clocks(q: Queue) -> None:
    """Every day at 09:00 in New York, across 8 March 2026, when clocks went forward: 14:00 UTC
    before, 13:00 after."""
    start = int(datetime(2026, 3, 6, 12, 0, tzinfo=ZoneInfo("UTC")).timestamp() * 1000)
    first, run_at = upsert(q, pattern="0 9 * * *", tz="America/New_York", now=start)
    runs = [run_at]
    for _ in range(3):
        assert run_iteration(q, runs[-1]) == [iteration("s", runs[-1])]
        runs.append(int(scheduler(q)["next"]))
    utc = [datetime.fromtimestamp(t / 1000, ZoneInfo("UTC")).strftime("%m-%d %H:%M") for t in runs]
    assert utc == ["03-06 14:00", "03-07 14:00", "03-08 13:00", "03-09 13:00"]
    assert first == iteration("s", runs[0])
    assert scheduler(q)["tz"] == "America/New_York"


def test_remove_a_scheduler_mid_run(q: Queue) -> None:
    upsert(q, every=EVERY)
    assert run_iteration(q, NOW) == [iteration("s", NOW)]
    pending = iteration("s", NOW + EVERY)
    assert q.check()[pending] == "delayed"
    assert g.remove_job_scheduler(q.r, queue=q.name, scheduler_id="s") == 1
    assert q.check() == {iteration("s", NOW): "completed"}
    assert q.events()[-1] == {"event": "removed", "jobId": pending, "prev": "delayed"}
    assert scheduler(q) == {}
    assert g.remove_job_scheduler(q.r, queue=q.name, scheduler_id="s") == 0
    # An iteration picked up runs on, and schedules nothing once its scheduler is gone.
    upsert(q, "t", every=EVERY)
    job_id, fields, _ = q.take()
    g.remove_job_scheduler(q.r, queue=q.name, scheduler_id="t")
    assert schedule_next(q.r, q.name, job_id, fields, now=NOW) == ""
    assert q.check()[job_id] == "active"


def test_removing_the_pending_iteration_directly_is_minus_8(q: Queue) -> None:
    pending, _ = upsert(q, every=EVERY, start_date=NOW + EVERY)
    with pytest.raises(errors.JobBelongsToJobScheduler) as refused:
        g.remove_job(q.r, queue=q.name, job_id=pending, remove_children=False, limit=100)
    assert refused.value.code == -8
    assert q.check() == {pending: "delayed"}


def test_a_pattern_run_whose_id_is_taken_is_minus_10(q: Queue) -> None:
    """The next run's id is held by a job of its own (a runtime gave that custom id): the pattern
    scheduler cannot take the slot."""
    run_at = next_run("0 * * * *", "UTC", NOW - 1)
    q.add(iteration("s", run_at))
    with pytest.raises(errors.SchedulerJobIdCollision) as refused:
        upsert(q, pattern="0 * * * *")
    assert refused.value.code == -10
    assert scheduler(q) == {}
    assert q.check() == {iteration("s", run_at): "wait"}


def test_every_slot_taken_is_minus_11_and_a_free_one_is_found_past_a_few(q: Queue) -> None:
    """Earlier runs kept by their retention hold the slots a scheduler made again would take:
    it walks past them, up to 32, then gives up."""
    for k in range(3):
        q.add(iteration("s", NOW + k * EVERY))
    assert upsert(q, every=EVERY, start_date=NOW) == (
        iteration("s", NOW + 3 * EVERY),
        NOW + 3 * EVERY,
    )
    g.remove_job_scheduler(q.r, queue=q.name, scheduler_id="s")
    for k in range(3, 33):
        q.add(iteration("s", NOW + k * EVERY))
    before = q.check()
    with pytest.raises(errors.SchedulerJobSlotsBusy) as refused:
        upsert(q, every=EVERY, start_date=NOW)
    assert refused.value.code == -11
    assert q.check() == before
    assert scheduler(q) == {}


def test_schedulers_are_listed_by_next_run_and_counted(q: Queue) -> None:
    upsert(q, "late", every=EVERY, start_date=NOW + 3 * EVERY)
    upsert(q, "soon", every=EVERY, start_date=NOW + EVERY)
    upsert(q, "cron", pattern="*/5 * * * *")
    count, page = g.get_job_schedulers(q.r, queue=q.name, start=0, count=2, asc=True)
    assert count == 3
    # The pattern's next run is 22:15:00 UTC, 100 s after NOW (22:13:20).
    assert [s["id"] for s in page] == ["soon", "cron"]
    assert page[0]["next"] == str(NOW + EVERY)
    assert page[1]["next"] == str(NOW + 100_000)
    count, page = g.get_job_schedulers(q.r, queue=q.name, start=0, count=10, asc=False)
    assert [s["id"] for s in page] == ["late", "cron", "soon"]
    assert page[1]["pattern"] == "*/5 * * * *"


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({}, "either every N ms or on a pattern"),
        ({"every": EVERY, "pattern": "* * * * *"}, "either every N ms or on a pattern"),
        ({"every": EVERY, "offset": EVERY}, "offset must be less than every"),
        ({"every": EVERY, "opts": {"deduplication": {"ttl": 5}}}, "needs a dedup_id"),
    ],
)
def test_bad_settings_are_refused_before_any_write(
    q: Queue, settings: dict[str, Any], message: str
) -> None:
    with pytest.raises(LuaError, match=message):
        upsert(q, **settings)
    assert q.check() == {}
    assert scheduler(q) == {}


@pytest.mark.parametrize(
    ("pattern", "tz", "message"),
    [("not cron", "UTC", "pattern 'not cron'"), ("* * * * *", "Mars/Base", "no time zone")],
)
def test_a_bad_pattern_or_zone_is_refused_before_anything_is_sent(
    q: Queue, pattern: str, tz: str, message: str
) -> None:
    with pytest.raises(ArgumentError, match=message):
        upsert(q, pattern=pattern, tz=tz)
    assert scheduler(q) == {}


def test_the_worked_timeline_of_protocol_md_is_what_the_scripts_answer(q: Queue) -> None:
    """docs/protocol.md, "Job schedulers": its timeline run step by step, each reply written as
    the table writes it, and the table's reply column compared with them."""
    section = (DOCS / "protocol.md").read_text().split("\n## Job schedulers\n", 1)[1]
    table = section.split("| t (ms) | call | reply | after |\n", 1)[1].split("\n\n", 1)[0]
    documented = [row.strip("|").split("|")[2].strip() for row in table.splitlines()[1:]]

    def added(reply: tuple[str, int]) -> str:
        return f'`["{reply[0]}", {reply[1]}]`'

    def picked_and_updated(now: int, workers: int = 1) -> list[str]:
        job_id, fields, _ = q.take(now=now)
        return [
            f'`"{schedule_next(q.r, q.name, job_id, fields, now=now)}"`' for _ in range(workers)
        ]

    replies = [added(upsert(q, "report", every=60_000, now=1_000_000))]
    replies += picked_and_updated(1_000_000, workers=2)
    replies += picked_and_updated(1_200_000)
    replies.append(added(upsert(q, "report", every=60_000, now=1_200_000)))
    with pytest.raises(errors.JobBelongsToJobScheduler) as refused:
        g.remove_job(
            q.r, queue=q.name, job_id="repeat-report-1240000", remove_children=False, limit=100
        )
    replies.append(str(refused.value.code))
    replies.append(added(upsert(q, "report", every=120_000, now=1_200_000)))
    assert q.state("repeat-report-1240000") == "unknown"
    replies.append(f"`{g.remove_job_scheduler(q.r, queue=q.name, scheduler_id='report')}`")
    assert q.state("repeat-report-1200000") == "unknown"
    assert replies == documented


def schedulers_of(q: Queue) -> dict[str, dict[str, str]]:
    count, page = g.get_job_schedulers(q.r, queue=q.name, start=0, count=100, asc=True)
    assert count == len(page)
    return {s["id"]: s for s in page}


def test_new_settings_while_the_iteration_runs_leave_it_its_slot(q: Queue) -> None:
    """The current iteration was picked up (here, and handed over to wait for children): it is
    not replaced, and its id holds its slot, so the new settings' first run takes the next."""
    first, _ = upsert(q, every=EVERY)
    assert q.take_id() == first
    assert upsert(q, every=EVERY, data={"v": 2}) == (iteration("s", NOW + EVERY), NOW + EVERY)
    assert q.check() == {first: "active", iteration("s", NOW + EVERY): "delayed"}
    # The running one is no longer the current iteration: it schedules nothing.
    assert schedule_next(q.r, q.name, first, {"rjk": "s"}, now=NOW) == ""


def test_a_scheduler_iteration_joins_no_flow_minus_8(q: Queue) -> None:
    """A flow that names a pending iteration's id as a child is refused: the iteration is its
    scheduler's, which may replace or remove it."""
    pending, _ = upsert(q, every=EVERY, start_date=NOW + EVERY)
    with pytest.raises(errors.JobBelongsToJobScheduler):
        q.add_flow(q.node("p", q.node(pending)))
    assert q.check() == {pending: "delayed"}
    # As a flow's own root, with no parent named, it is a duplicate as any existing job.
    assert q.add_flow(q.node(pending)).added == 0


def test_a_scheduler_whose_iteration_is_gone_is_scheduled_again_by_the_same_upsert(
    q: Queue,
) -> None:
    """Its iteration deleted by hand, as a runtime could: the same upsert schedules the next."""
    first, _ = upsert(q, every=EVERY, start_date=NOW + EVERY)
    q.r.delete(q.key(first))
    q.r.zrem(q.key("delayed"), first)
    q.check()
    assert upsert(q, every=EVERY, start_date=NOW + EVERY) == (
        iteration("s", NOW + 2 * EVERY),
        NOW + 2 * EVERY,
    )


def test_a_new_offset_moves_the_pending_iteration_once(q: Queue) -> None:
    upsert(q, every=EVERY, offset=10_000)
    moved = upsert(q, every=EVERY, offset=20_000)
    slot = NOW // EVERY * EVERY + 20_000
    assert moved == (iteration("s", slot if slot > NOW else slot + EVERY), moved[1])
    assert scheduler(q)["offset"] == "20000"
    events = len(q.events())
    assert upsert(q, every=EVERY, offset=20_000) == moved
    assert len(q.events()) == events  # the same settings: nothing moved again


def test_an_iteration_not_yet_picked_up_schedules_nothing(q: Queue) -> None:
    first, _ = upsert(q, every=EVERY, start_date=NOW + EVERY)
    assert schedule_next(q.r, q.name, first, {"rjk": "s"}, now=NOW) == ""
    assert q.check() == {first: "delayed"}


@pytest.mark.parametrize("script", ["addJobScheduler", "updateJobScheduler", "removeJobScheduler"])
@pytest.mark.parametrize("wrong", ["a job's key", "the wait list", "another scheduler's key"])
def test_a_scheduler_key_of_another_name_is_refused_before_any_write(
    q: Queue, script: str, wrong: str
) -> None:
    """Sent as a runtime that builds its keys wrong might: refused, nothing written or deleted."""
    upsert(q, "t", every=EVERY, start_date=NOW + EVERY)
    q.add("1")
    before = q.check()
    call_keys = list(g.add_job_scheduler_keys(q.name, "s"))
    call_keys[1] = {"a job's key": q.key("1"), "the wait list": q.key("wait")}.get(
        wrong, q.key("repeat:t")
    )
    args = {
        "addJobScheduler": [
            "s",
            str(NOW),
            str(EVERY),
            "",
            "",
            "0",
            "0",
            "0",
            "0",
            "0",
            "n",
            "{}",
            "{}",
            "0",
        ],
        "updateJobScheduler": ["s", iteration("s", NOW), str(NOW), "0"],
        "removeJobScheduler": ["s"],
    }[script]
    if script == "removeJobScheduler":
        call_keys = [*call_keys[:6], q.key("events"), q.key("meta")]
    with pytest.raises(LuaError, match="are not the keys of scheduler 's'"):
        q.raw(script, call_keys, args)
    assert q.check() == before
    assert q.job("1")["name"] == "job"
    assert scheduler(q, "t")["ic"] == "1"


def test_an_empty_scheduler_id_is_refused(q: Queue) -> None:
    call_keys = list(g.add_job_scheduler_keys(q.name, "x"))
    call_keys[1] = q.key("repeat:")
    args = ["", str(NOW), str(EVERY), "", "", "0", "0", "0", "0", "0", "n", "{}", "{}", "0"]
    with pytest.raises(LuaError, match="scheduler id must not be empty"):
        q.raw("addJobScheduler", call_keys, args)
    assert q.check() == {}


def test_a_job_of_its_own_that_took_an_ended_schedulers_slot_is_not_its_iteration(
    q: Queue,
) -> None:
    """The scheduler ran its one iteration, which retention removed; a job of its own then takes
    that id. Removing the scheduler leaves it, and an upsert does not answer it as an
    iteration."""
    first, _ = upsert(q, every=EVERY, limit=1, opts={"removeOnComplete": True})
    assert run_iteration(q, NOW) == [first]
    assert q.check() == {}
    q.add(first, name="mine")
    assert upsert(q, every=EVERY, limit=1, opts={"removeOnComplete": True}) == ("", NOW)
    assert g.remove_job_scheduler(q.r, queue=q.name, scheduler_id="s") == 1
    assert q.check() == {first: "wait"}
    assert q.job(first)["name"] == "mine"


def test_a_finished_current_iteration_can_be_removed(q: Queue) -> None:
    first, _ = upsert(q, every=EVERY, limit=1)
    assert run_iteration(q, NOW) == [first]
    assert q.check() == {first: "completed"}
    assert g.remove_job(q.r, queue=q.name, job_id=first, remove_children=False, limit=100) == 1
    assert q.check() == {}
