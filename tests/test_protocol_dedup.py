"""Deduplication (docs/protocol.md, "Deduplication"): a dedup id held while its job is live or its
TTL runs, `extend`, `replace` (debounce), `keepLastIfActive`, the `deduplicated` event, and the
id released when its job completes, fails or is removed.

A TTL is Redis's own (PX): the scenarios that need one to run out make it short with PEXPIRE and
wait for Redis to drop the key, as it would at its time.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Literal

import pytest

from echomq_scripts import generated as g
from echomq_scripts.runtime import LuaError
from tests.support.invariants import NOW, add_delayed, add_prioritized, add_standard, text
from tests.support.queue_harness import Queue

DOCS = Path(__file__).parent.parent / "docs"


def dedup(**options: Any) -> dict[str, Any]:
    return {"deduplication": options}


def holder(q: Queue, dedup_id: str = "d") -> str | None:
    held = q.r.get(q.key(f"de:{dedup_id}"))
    return None if held is None else text(held)


def ttl(q: Queue, dedup_id: str = "d") -> int:
    return int(q.r.pttl(q.key(f"de:{dedup_id}")))


def run_out(q: Queue, dedup_id: str = "d") -> None:
    """The key's TTL runs out, as Redis runs it: made 1 ms, then waited for."""
    assert q.r.pexpire(q.key(f"de:{dedup_id}"), 1)
    deadline = time.monotonic() + 5
    while q.r.exists(q.key(f"de:{dedup_id}")) and time.monotonic() < deadline:
        time.sleep(0.005)
    assert holder(q, dedup_id) is None
    q.check()


def deduplicated(q: Queue) -> list[dict[str, str]]:
    return [e for e in q.events() if e["event"] == "deduplicated"]


def test_a_ttl_holds_the_id_after_its_job_completed_until_it_runs_out(q: Queue) -> None:
    q.add("a", dedup_id="d", opts=dedup(ttl=60_000))
    assert 0 < ttl(q) <= 60_000
    assert q.take_id() == "a"
    q.complete("a")
    # Completed, and still held: the TTL is what the add asked for.
    assert holder(q) == "a"
    assert add_standard(q.r, q.name, job_id="b", dedup_id="d") == ("a", 0)
    run_out(q)
    assert add_standard(q.r, q.name, job_id="b", dedup_id="d") == ("b", 1)
    assert q.check() == {"a": "completed", "b": "wait"}


def test_without_a_ttl_the_id_is_held_while_its_job_lives(q: Queue) -> None:
    q.add("a", dedup_id="d")
    assert ttl(q) == -1
    assert q.take_id() == "a"
    assert add_standard(q.r, q.name, dedup_id="d") == ("a", 0)
    q.complete("a")
    assert holder(q) is None
    assert add_standard(q.r, q.name, job_id="b", dedup_id="d") == ("b", 1)


def test_extend_starts_the_ttl_again_at_each_deduplicated_add(q: Queue) -> None:
    q.add("a", dedup_id="d", opts=dedup(ttl=60_000, extend=True))
    q.r.pexpire(q.key("de:d"), 1000)  # most of it gone
    assert add_standard(q.r, q.name, dedup_id="d", opts=dedup(ttl=60_000, extend=True)) == ("a", 0)
    assert ttl(q) > 50_000
    # Without extend, a deduplicated add leaves the TTL alone.
    q.r.pexpire(q.key("de:d"), 1000)
    assert add_standard(q.r, q.name, dedup_id="d", opts=dedup(ttl=60_000)) == ("a", 0)
    assert ttl(q) <= 1000


def test_replace_debounces_a_delayed_holder(q: Queue) -> None:
    """Each add replaces the one still waiting for its delay: the last one runs."""
    options = dedup(ttl=60_000, replace=True)
    first, _ = add_delayed(q.r, q.name, job_id="a", delay=500, dedup_id="d", opts=options)
    before = len(q.events())
    assert add_delayed(q.r, q.name, job_id="b", delay=500, dedup_id="d", opts=options) == ("b", 1)
    assert q.check() == {"b": "delayed"}
    assert holder(q) == "b"
    assert q.events()[before:] == [
        {"event": "removed", "jobId": "a", "prev": "delayed"},
        {"event": "deduplicated", "jobId": "b", "deduplicationId": "d", "deduplicatedJobId": "a"},
        {"event": "delayed", "jobId": "b", "delay": "500", "runAt": str(NOW + 500)},
    ]
    assert q.r.exists(q.key(first)) == 0
    # A holder that is no longer delayed (picked up) is not replaced: the add is deduplicated.
    assert q.take_id(now=NOW + 500) == "b"
    assert add_delayed(q.r, q.name, job_id="c", delay=500, dedup_id="d", opts=options) == ("b", 0)
    assert q.check() == {"b": "active"}


def test_replace_keeps_what_is_left_of_the_ttl_unless_extend(q: Queue) -> None:
    add_delayed(q.r, q.name, job_id="a", delay=500, dedup_id="d", opts=dedup(ttl=60_000))
    q.r.pexpire(q.key("de:d"), 1000)
    add_delayed(
        q.r, q.name, job_id="b", delay=500, dedup_id="d", opts=dedup(ttl=60_000, replace=True)
    )
    assert holder(q) == "b"
    assert 0 < ttl(q) <= 1000
    add_delayed(
        q.r,
        q.name,
        job_id="c",
        delay=500,
        dedup_id="d",
        opts=dedup(ttl=60_000, replace=True, extend=True),
    )
    assert holder(q) == "c"
    assert ttl(q) > 50_000


def test_replace_removes_no_delayed_child_and_nothing_for_an_existing_custom_id(
    q: Queue,
) -> None:
    q.add_flow(q.node("p", q.node("kid", delay=500, dedup_id="d")))
    options = dedup(replace=True)
    assert add_delayed(q.r, q.name, job_id="x", delay=5, dedup_id="d", opts=options) == ("kid", 0)
    q.add("e")
    add_delayed(q.r, q.name, job_id="solo", delay=500, dedup_id="s")
    # The custom id exists: nothing is added, so nothing is replaced; the id answers its holder.
    assert add_delayed(q.r, q.name, job_id="e", delay=5, dedup_id="s", opts=options) == ("solo", 0)
    assert q.check() == {"p": "waiting-children", "kid": "delayed", "e": "wait", "solo": "delayed"}
    assert holder(q, "s") == "solo"


@pytest.mark.parametrize("ending", ["complete", "fail", "stall"])
def test_keep_last_if_active_adds_the_last_deduplicated_add_when_the_holder_finishes(
    q: Queue, ending: str
) -> None:
    options = dedup(ttl=1000, keepLastIfActive=True)
    q.add("a", dedup_id="d", opts=options)
    assert ttl(q) == -1  # held until the job finishes, whatever the TTL
    assert q.take_id() == "a"
    add_standard(q.r, q.name, job_id="b", dedup_id="d", opts=options, name="second")
    assert add_prioritized(q.r, q.name, job_id="c", priority=3, dedup_id="d", opts=options) == (
        "a",
        0,
    )
    assert q.check() == {"a": "active"}
    assert q.hash("dn:d")["jid"] == "c"  # the last one wins
    if ending == "complete":
        q.complete("a")
    elif ending == "fail":
        q.fail("a")
    else:
        q.stalled_check(max_stalled=0)
        q.expire_lock("a")
        assert q.stalled_check(max_stalled=0) == ([], ["a"])
    finished = "completed" if ending == "complete" else "failed"
    assert q.check() == {"a": finished, "c": "prioritized"}
    assert holder(q) == "c"
    assert q.r.exists(q.key("dn:d")) == 0
    assert q.job("c")["priority"] == "3"
    assert q.events()[-1] == {"event": "prioritized", "jobId": "c", "priority": "3"}
    # The kept add holds the id in its turn, until it finishes.
    assert add_standard(q.r, q.name, dedup_id="d") == ("c", 0)
    assert q.take_id() == "c"
    q.complete("c")
    assert holder(q) is None


def test_keep_last_if_active_without_an_active_holder_deduplicates_as_usual(q: Queue) -> None:
    options = dedup(keepLastIfActive=True)
    q.add("a", dedup_id="d", opts=options)
    assert add_standard(q.r, q.name, job_id="b", dedup_id="d", opts=options) == ("a", 0)
    assert q.r.exists(q.key("dn:d")) == 0
    assert q.take_id() == "a"
    q.complete("a")
    assert q.check() == {"a": "completed"}
    assert holder(q) is None


@pytest.mark.parametrize("outcome", ["completed", "failed"])
def test_a_finishing_job_releases_its_id_and_a_removed_one_too(
    q: Queue, outcome: Literal["completed", "failed"]
) -> None:
    q.add("a", dedup_id="d")
    assert q.take_id() == "a"
    q.finish("a", outcome=outcome, result='"r"')
    assert holder(q) is None
    # Removed: a pending child taken away by removeUnprocessedChildren releases its id, TTL or not.
    q.add_flow(q.node("p", q.node("kid", dedup_id="k")))
    q.r.pexpire(q.key("de:k"), 60_000)
    assert g.remove_unprocessed_children(q.r, queue=q.name, job_id="p", limit=100) == (0, ["kid"])
    q.check()
    assert holder(q, "k") is None


def test_a_flow_node_takes_a_ttl_and_extends_it(q: Queue) -> None:
    q.add_flow(q.node("p", q.node("kid", dedup_id="d", opts=dedup(ttl=60_000))))
    assert 0 < ttl(q) <= 60_000
    q.r.pexpire(q.key("de:d"), 1000)
    ids = q.add_flow(
        q.node("p2", q.node("other", dedup_id="d", opts=dedup(ttl=60_000, extend=True)))
    )
    assert (ids.children[0].job_id, ids.children[0].added) == ("kid", 0)
    assert ttl(q) > 50_000
    assert deduplicated(q) == [
        {
            "event": "deduplicated",
            "jobId": "kid",
            "deduplicationId": "d",
            "deduplicatedJobId": "other",
        }
    ]


@pytest.mark.parametrize("option", ["replace", "keepLastIfActive"])
def test_a_flow_node_takes_no_replace_nor_keep_last(q: Queue, option: str) -> None:
    with pytest.raises(LuaError, match=r"a flow's job takes no opts\.deduplication\.replace"):
        q.add_flow(q.node("p", q.node("kid", dedup_id="d", opts=dedup(**{option: True}))))
    assert q.check() == {}


@pytest.mark.parametrize(
    ("opts", "dedup_id", "message"),
    [
        ('{"deduplication":5}', "d", "opts.deduplication must be an object"),
        ('{"deduplication":{"ttl":5}}', "", "opts.deduplication needs a dedup_id"),
        ('{"deduplication":{"id":"e"}}', "d", "opts.deduplication.id must be the dedup_id"),
        ('{"deduplication":{"ttl":-5}}', "d", "opts.deduplication.ttl must be an integer from 1"),
        ('{"deduplication":{"ttl":1.5}}', "d", "opts.deduplication.ttl must be an integer from 1"),
        ('{"deduplication":{"ttl":"5"}}', "d", "opts.deduplication.ttl must be a number"),
    ],
)
def test_bad_deduplication_options_are_refused_before_any_write(
    q: Queue, opts: str, dedup_id: str, message: str
) -> None:
    with pytest.raises(LuaError, match=message):
        q.raw(
            "addStandardJob",
            g.add_standard_job_keys(q.name),
            ["", "n", "{}", opts, str(NOW), dedup_id],
        )
    assert q.check() == {}
    assert q.r.exists(q.key("id"), q.key("events"), q.key("de:d")) == 0


def test_remove_deduplication_key_releases_only_for_its_holder(q: Queue) -> None:
    q.add("a", dedup_id="d", opts=dedup(ttl=60_000, keepLastIfActive=True))
    assert g.get_deduplication_job_id(q.r, queue=q.name, dedup_id="d") == "a"
    assert q.take_id() == "a"
    add_standard(q.r, q.name, job_id="b", dedup_id="d", opts=dedup(keepLastIfActive=True))
    assert g.remove_deduplication_key(q.r, queue=q.name, dedup_id="d", job_id="other") == 0
    assert holder(q) == "a"
    assert g.remove_deduplication_key(q.r, queue=q.name, dedup_id="d", job_id="a") == 1
    q.check()
    assert q.r.exists(q.key("de:d"), q.key("dn:d")) == 0
    assert g.get_deduplication_job_id(q.r, queue=q.name, dedup_id="d") == ""
    # The kept add went with it: a finishing holder adds nothing, and the next add goes through.
    q.complete("a")
    assert q.check() == {"a": "completed"}
    assert add_standard(q.r, q.name, job_id="c", dedup_id="d") == ("c", 1)


def test_keys_of_another_dedup_id_are_refused(q: Queue) -> None:
    """Built by a runtime that gets them wrong: refused, nothing released."""
    q.add("a", dedup_id="d")
    other = (q.key("de:x"), q.key("dn:x"))
    with pytest.raises(LuaError, match="are not the keys of deduplication id 'd'"):
        q.raw("removeDeduplicationKey", other, ["d", "a"])
    with pytest.raises(LuaError, match="is not the key of deduplication id 'd'"):
        q.raw("getDeduplicationJobId", other[:1], ["d"])
    assert holder(q) == "a"


def test_the_worked_timeline_of_protocol_md_is_what_the_scripts_answer(q: Queue) -> None:
    """docs/protocol.md, "Deduplication": its timeline run step by step, each reply written as
    the table writes it, and the table's reply column compared with them."""
    section = (DOCS / "protocol.md").read_text().split("\n## Deduplication\n", 1)[1]
    table = section.split("| t (ms) | call | reply | after |\n", 1)[1].split("\n\n", 1)[0]
    documented = [row.strip("|").split("|")[2].strip() for row in table.splitlines()[1:]]

    def added(reply: tuple[str, int]) -> str:
        return f'`["{reply[0]}", {reply[1]}]`'

    extend = dedup(ttl=5000, extend=True)
    keep = dedup(keepLastIfActive=True)
    replies = [added(add_standard(q.r, q.name, job_id="a", dedup_id="mail-7", opts=extend))]
    events = len(q.events())
    replies.append(added(add_standard(q.r, q.name, job_id="b", dedup_id="mail-7", opts=extend)))
    (event,) = q.events()[events:]
    replies[-1] += (
        f", `{event['event']}` (`{event['jobId']}`, `{event['deduplicationId']}`,"
        f" `{event['deduplicatedJobId']}`)"
    )
    assert 4000 < ttl(q, "mail-7") <= 5000
    assert q.take_id() == "a"
    replies.append(f"`{q.complete('a')[0]}`")
    assert holder(q, "mail-7") == "a"
    run_out(q, "mail-7")
    replies.append("")
    replies.append(added(add_standard(q.r, q.name, job_id="c", dedup_id="mail-7", opts=extend)))
    replies.append(added(add_standard(q.r, q.name, job_id="d", dedup_id="sync", opts=keep)))
    assert q.take_id() == "c"
    q.complete("c")
    assert q.take_id() == "d"
    assert ttl(q, "sync") == -1
    twice = {add_standard(q.r, q.name, job_id=j, dedup_id="sync", opts=keep) for j in "ef"}
    (once,) = twice
    replies.append(f"{added(once)} twice")
    assert q.hash("dn:sync")["jid"] == "f"
    replies.append(f"`{q.complete('d')[0]}`")
    assert q.check()["f"] == "wait"
    assert holder(q, "sync") == "f"
    assert q.r.exists(q.key("dn:sync")) == 0
    assert replies == documented


def test_a_dedup_next_key_of_another_name_is_refused(q: Queue) -> None:
    q.add("h", dedup_id="d")
    with pytest.raises(LuaError, match="are not the keys of deduplication id 'd'"):
        q.raw("removeDeduplicationKey", (q.key("de:d"), q.key("wait")), ["d", "h"])
    assert q.check() == {"h": "wait"}
    assert holder(q) == "h"


def test_extend_does_not_put_a_ttl_on_an_id_held_for_its_active_holder(q: Queue) -> None:
    """keepLastIfActive holds the id without a TTL while its holder runs; a later add with ttl
    and extend leaves it so, and the kept add is still added when the holder finishes."""
    keep = dedup(keepLastIfActive=True)
    q.add("h", dedup_id="d", opts=keep)
    assert q.take_id() == "h"
    add_standard(q.r, q.name, job_id="k", dedup_id="d", opts=keep)
    assert add_standard(q.r, q.name, job_id="x", dedup_id="d", opts=dedup(ttl=50, extend=True)) == (
        "h",
        0,
    )
    assert ttl(q) == -1
    q.complete("h")
    assert q.check() == {"h": "completed", "k": "wait"}
    assert holder(q) == "k"


def test_replace_drops_an_add_kept_before_the_holder_was_retried(q: Queue) -> None:
    keep = dedup(keepLastIfActive=True, replace=True)
    q.add("h", dedup_id="d", opts={**keep, "attempts": 2, "backoff": {"delay": 100}})
    assert q.take_id() == "h"
    add_standard(q.r, q.name, job_id="k", dedup_id="d", opts=keep)
    assert q.fail("h")[0] == "delayed"  # back for a retry, and so replaceable
    assert add_standard(q.r, q.name, job_id="r", dedup_id="d", opts=keep) == ("r", 1)
    assert q.r.exists(q.key("dn:d")) == 0
    assert q.take_id() == "r"
    q.complete("r")
    assert q.check() == {"r": "completed"}  # k, kept before the retry, went with h


def test_a_kept_add_whose_custom_id_was_taken_adds_nothing_and_says_so(q: Queue) -> None:
    keep = dedup(keepLastIfActive=True)
    q.add("h", dedup_id="d", opts=keep)
    assert q.take_id() == "h"
    add_standard(q.r, q.name, job_id="k", dedup_id="d", opts=keep)
    q.add("k")  # the kept add's custom id, taken by a job of its own
    q.complete("h")
    assert q.events()[-1] == {"event": "duplicated", "jobId": "k"}
    assert q.check() == {"h": "completed", "k": "wait"}
    assert holder(q) is None


def test_a_kept_delayed_add_goes_to_delayed_even_with_no_delay(q: Queue) -> None:
    keep = dedup(keepLastIfActive=True)
    q.add("h", dedup_id="d", opts=keep)
    assert q.take_id() == "h"
    add_delayed(q.r, q.name, job_id="k", delay=0, dedup_id="d", opts=keep)
    q.complete("h", now=NOW + 7)
    assert q.check()["k"] == "delayed"
    assert q.events()[-1] == {"event": "delayed", "jobId": "k", "delay": "0", "runAt": str(NOW + 7)}


def test_a_job_that_took_a_gone_holders_id_is_not_replaced_nor_kept_for(q: Queue) -> None:
    """A's dedup id runs on its TTL after A was removed; a new job takes the id A. The key names
    A, but that A does not hold the id: replace removes nothing, keepLastIfActive keeps nothing."""
    q.add("A", dedup_id="x", opts=dedup(ttl=600_000) | {"removeOnComplete": True})
    assert q.take_id() == "A"
    q.complete("A")
    assert q.check() == {}
    add_delayed(q.r, q.name, job_id="A", delay=500, dedup_id="y")
    options = dedup(replace=True, keepLastIfActive=True)
    assert add_delayed(q.r, q.name, job_id="B", delay=5, dedup_id="x", opts=options) == ("A", 0)
    assert q.check() == {"A": "delayed"}
    assert holder(q, "y") == "A"
    assert q.r.exists(q.key("dn:x")) == 0


def test_crafted_keys_that_name_other_keys_are_refused(q: Queue) -> None:
    """Keys whose prefix is a job's (emq:{q}:code:) rather than the queue's: refused."""
    q.add("code")
    assert q.take_id() == "code"
    with pytest.raises(LuaError, match="are not the keys of deduplication id 'lock'"):
        q.raw(
            "removeDeduplicationKey",
            (q.key("code:lock"), q.key("codn:lock")),
            ["lock", q.lock("code") or ""],
        )
    assert q.lock("code") is not None
