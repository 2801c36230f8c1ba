"""Integrity: bad ids, bad arguments and re-sent calls, each on a real Redis (and a Cluster).

Every defect these tests name was reproduced before its fix: an id that named one of the queue's
keys turned that key into a job hash; a parent completed while a child was pending; a child
finishing after its parent was removed wrote the parent's :processed again; removeOnComplete -1
deleted every completed job; lock_duration 0 moved a job to active and then failed; a finish
re-sent after it landed answered -2. The protocol's answers are in docs/protocol.md.
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Callable
from typing import Any

import hypothesis.strategies as st
import pytest
import redis
import redis.cluster
from hypothesis import HealthCheck, given, settings

from echomq_scripts import flows
from echomq_scripts import generated as g
from echomq_scripts.generated import errors
from echomq_scripts.runtime import ArgumentError, LuaError, keys
from tests.support.environment import REPO
from tests.support.invariants import HOSTILE_IDS, NOW, Client, add_standard, key
from tests.support.queue_harness import LOCK_MS, RETRY, Queue

ADDS: dict[str, tuple[Callable[..., Any], Callable[[str], Any], list[str]]] = {
    "addStandardJob": (g.add_standard_job, g.add_standard_job_keys, []),
    "addDelayedJob": (g.add_delayed_job, g.add_delayed_job_keys, ["10"]),
    "addPrioritizedJob": (g.add_prioritized_job, g.add_prioritized_job_keys, ["1"]),
}
EXTRA = {
    "addStandardJob": {},
    "addDelayedJob": {"delay": 10},
    "addPrioritizedJob": {"priority": 1},
}


def nowhere() -> redis.Redis:
    """A client of a port nothing listens on: a wrapper that sent anything would fail to
    connect, so an ArgumentError from it proves the call was refused before sending."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return redis.Redis(port=port, socket_connect_timeout=0.2)


def snapshot(r: Client, queue: str) -> dict[object, object]:
    """Every key of the queue with its type and value (DUMP), to see that nothing changed."""
    found: dict[object, object] = {}
    for name in r.scan_iter(match=re.sub(r"([*?[\]\\{}])", r"\\\1", keys.prefix(queue)) + "*"):
        found[name] = r.dump(name)
    return found


def raw(script: str, r: Client, call_keys: Any, args: list[str]) -> Any:
    """The script sent as another runtime sends it: text arguments, no wrapper checks."""
    found = next(s for s in g.SCRIPTS if s.spec.name == script)
    return found.result(found.run(r, call_keys, args))


# -- ids -----------------------------------------------------------------------------------


def test_the_scripts_reserve_the_names_keys_py_reserves() -> None:
    """The one rule for job ids is written twice, in keys.py and in the add scripts' include:
    the two lists of reserved names are the same."""
    source = (REPO / "lua_src" / "includes" / "checkJobId.lua").read_text()
    listed = re.search(r'RESERVED_JOB_IDS = "([^"]*)"', source)
    assert listed is not None
    assert set(listed[1].split()) == keys.RESERVED_IDS


@pytest.mark.parametrize("script", sorted(ADDS))
@pytest.mark.parametrize("hostile", HOSTILE_IDS)
def test_an_id_that_could_name_another_key_is_refused_before_any_write(
    q: Queue, script: str, hostile: str
) -> None:
    wrapper, keys_of, extra = ADDS[script]
    q.add("7")  # a job whose companion keys a hostile id would name
    before = snapshot(q.r, q.name)
    with pytest.raises(ArgumentError, match="job id"):
        wrapper(
            nowhere(),
            queue=q.name,
            job_id=hostile,
            name="n",
            data={},
            opts={},
            now=NOW,
            dedup_id="",
            **EXTRA.get(script, {}),
        )
    with pytest.raises(LuaError, match=re.escape(f"job id '{hostile}'")):
        raw(script, q.r, keys_of(q.name), [hostile, "n", "{}", "{}", str(NOW), "d", *extra])
    assert snapshot(q.r, q.name) == before
    assert q.check() == {"7": "wait"}


@pytest.mark.parametrize("as_parent", [False, True], ids=["job_id", "parent_id"])
@pytest.mark.parametrize("hostile", HOSTILE_IDS)
def test_a_flow_with_an_id_that_could_name_another_key_writes_nothing(
    q: Queue, as_parent: bool, hostile: str
) -> None:
    q.add("7")
    q.add("p")
    before = snapshot(q.r, q.name)
    # The bad id is the second node's, or the root's parent: the first node is fine, and is
    # not added either.
    root = q.node("", q.node("" if as_parent else hostile))
    with pytest.raises(ArgumentError, match="job id"):
        flows.add_flow(nowhere(), root, now=NOW, parent_id=hostile if as_parent else "")
    node = ["", "n", "{}", "{}", "d", "0", "0"]
    args = [str(NOW), hostile if as_parent else "p", *node, "1", *node, "0"]
    if not as_parent:
        args[2 + 8] = hostile
    what = "parent id" if as_parent else "job id"
    with pytest.raises(LuaError, match=re.escape(f"{what} '{hostile}'")):
        raw("addFlow", q.r, g.add_flow_keys(q.name), args)
    assert snapshot(q.r, q.name) == before
    assert q.check() == {"7": "wait", "p": "wait"}


def test_templated_ids_and_queue_names_follow_the_same_rules() -> None:
    calls: list[Callable[[], object]] = [
        lambda: g.extend_lock_keys("mail", "7:lock"),
        lambda: g.move_to_delayed_keys("mail", "wait"),
        lambda: g.move_to_delayed_keys("mail", ""),
        lambda: g.get_counts_keys("\udc80"),
        lambda: g.get_counts(nowhere(), queue="\udc80"),
        lambda: g.get_job_state(nowhere(), queue="mail", job_id="events"),
        lambda: g.move_to_finished_keys("mail", "complete"),  # type: ignore[arg-type]
    ]
    for call in calls:
        with pytest.raises(ArgumentError):
            call()
    # A custom id may be any other text: a number, spaces, non-ASCII.
    assert g.extend_lock_keys("mail", "order 7 ü").lock == "emq:{mail}:order 7 ü:lock"


# -- arguments -----------------------------------------------------------------------------


def test_lock_duration_0_is_refused_before_the_job_moves(q: Queue) -> None:
    q.add("a")
    with pytest.raises(ArgumentError, match="lock_duration' must be an int >= 1"):
        q.take(lock_ms=0)
    call_keys = g.move_to_active_keys(q.name)
    with pytest.raises(LuaError, match="lock_duration must be an integer from 1"):
        raw("moveToActive", q.r, call_keys, ["t", "0", str(NOW), "0", "0", "0"])
    assert q.check() == {"a": "wait"}
    assert q.lock("a") is None


def test_an_unknown_outcome_is_a_typed_error_naming_the_allowed_values(q: Queue) -> None:
    q.add("a")
    q.take_id()
    with pytest.raises(ArgumentError, match="'outcome' must be one of 'completed', 'failed'"):
        q.finish("a", outcome="complete", result="1")  # type: ignore[arg-type]
    assert q.check() == {"a": "active"}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=6,
)
option_texts = st.one_of(
    json_values.map(json.dumps),
    st.text(max_size=12),
    st.sampled_from(['{"a":"\\ud800"}', '{"a":NaN}', "\t{}", "{}x", " [1]", '{"a":"\\udc80x"}']),
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(opts=option_texts)
def test_options_the_script_refuses_no_wrapper_call_can_send(r: redis.Redis, opts: str) -> None:
    """The wrapper takes a mapping and sends it as JSON text: a text the script refuses (not
    a JSON object) is one no mapping encodes to, and the wrapper refuses the text itself."""
    r.flushall()
    call_keys = g.add_standard_job_keys("opts")
    try:
        raw("addStandardJob", r, call_keys, ["", "n", "{}", opts, str(NOW), ""])
        refused = ""
    except LuaError as exc:
        refused = str(exc)
    try:
        value = json.loads(opts)
    except ValueError:
        value = None
    if refused:
        assert "opts must be a JSON object" in refused
        assert not isinstance(value, dict) or "\\ud" in opts  # a lone surrogate's escape
    with pytest.raises(ArgumentError, match="'opts' must be a mapping"):
        g.add_standard_job(
            nowhere(),
            queue="opts",
            job_id="",
            name="n",
            data={},
            opts=opts,  # type: ignore[arg-type]
            now=NOW,
            dedup_id="",
        )


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(opts=st.dictionaries(st.text(max_size=3), json_values, max_size=3))
def test_options_a_wrapper_sends_the_script_takes(r: redis.Redis, opts: dict[str, Any]) -> None:
    r.flushall()
    try:
        job_id, added = g.add_standard_job(
            r,
            queue="opts",
            job_id="",
            name="n",
            data={},
            opts=opts,
            now=NOW,
            dedup_id="",
        )
    except ArgumentError:
        # Refused only what JSON cannot say (an infinity): nothing was sent.
        with pytest.raises(ValueError, match="not JSON compliant"):
            json.dumps(opts, allow_nan=False)
        assert r.dbsize() == 0
        return
    assert added == 1
    assert r.lrange(keys.wait("opts"), 0, -1) == [job_id.encode()]
    stored = r.hget(keys.job("opts", job_id), "opts")
    assert stored is not None
    assert json.loads(stored) == opts  # the options as the caller gave them


# -- parents and retention -----------------------------------------------------------------


def test_a_parent_with_a_pending_child_cannot_complete(q: Queue) -> None:
    q.add("1")
    q.add_child("1", "2")
    assert q.take_id() == "1"
    events = len(q.events())
    with pytest.raises(errors.JobPendingChildren):
        q.complete("1")
    assert q.check() == {"1": "active", "2": "wait"}
    assert q.lock("1") == q.token_of("1")
    assert (len(q.events()), q.metric("completed")) == (events, 0)
    # Once the child has completed, the parent can.
    assert q.take_id() == "2"
    assert q.complete("2", '"two"')[0] == "completed"
    assert q.hash("1:processed") == {key(q.name, "2"): '"two"'}
    assert q.complete("1")[0] == "completed"


def test_a_child_finishing_after_its_parent_was_removed_leaves_no_key(q: Queue) -> None:
    q.add("1", opts={"removeOnFail": True})
    q.add_child("1", "2")
    assert q.take_id() == "1"
    assert q.fail("1")[0] == "failed"  # failing is allowed with children pending
    assert q.check() == {"2": "wait"}
    assert q.take_id() == "2"
    assert q.complete("2")[0] == "completed"
    assert q.r.exists(q.key("1"), q.key("1:processed"), q.key("1:dependencies")) == 0


@pytest.mark.parametrize("option", ["removeOnComplete", "removeOnFail"])
@pytest.mark.parametrize("rule", [-1, {"count": -1}, {"age": -5}])
def test_a_negative_retention_rule_keeps_every_job(q: Queue, option: str, rule: object) -> None:
    outcome = "completed" if option == "removeOnComplete" else "failed"
    for job_id in ("a", "b", "c"):
        q.add(job_id, opts={option: rule})
        assert q.take_id() == job_id
        q.finish(job_id, outcome=outcome, result="1")  # type: ignore[arg-type]
    assert q.check() == {"a": outcome, "b": outcome, "c": outcome}


# -- re-sent calls -------------------------------------------------------------------------


def resend(q: Queue, first: Callable[[], Any]) -> Any:
    """Run a call, then the same call again as a client that lost the reply would: the second
    answers what the first did and changes nothing, events and metrics included."""
    reply = first()
    before = (snapshot(q.r, q.name), q.events(), q.check())
    assert first() == reply
    assert (snapshot(q.r, q.name), q.events(), q.check()) == before
    return reply


def test_a_pickup_sent_twice_takes_one_job(q: Queue) -> None:
    q.add("a")
    q.add("b")
    job_id, fields, _ = resend(q, lambda: q.take(token="t-1"))
    assert (job_id, fields["processedOn"]) == ("a", str(NOW))
    assert q.check() == {"a": "active", "b": "wait"}
    # Another token takes the next job; t-1 still answers its own.
    assert q.take_id(token="t-2") == "b"
    assert q.take_id(token="t-1") == "a"
    # A pickup that found nothing finds nothing again.
    assert resend(q, lambda: q.take(token="t-3")) == ("", {}, 0)


@pytest.mark.parametrize(
    ("opts", "outcome", "went"),
    [
        ({}, "completed", "completed"),
        ({}, "failed", "failed"),
        (RETRY, "failed", "delayed"),
        ({"removeOnComplete": True}, "completed", "completed"),
        ({"removeOnFail": True}, "failed", "failed"),
    ],
)
@pytest.mark.parametrize("fetch_next", [False, True])
def test_a_finish_sent_twice_lands_once(
    q: Queue, opts: dict[str, object], outcome: str, went: str, fetch_next: bool
) -> None:
    q.add("a", opts=opts, dedup_id="d")
    q.add("b")
    q.take_id(token="t-1")
    reply = resend(
        q,
        lambda: q.finish("a", outcome=outcome, result="1", fetch_next=fetch_next),  # type: ignore[arg-type]
    )
    assert reply[:2] == (went, "b" if fetch_next else "")
    assert q.metric(outcome) == (0 if went == "delayed" else 1)
    # The job the token went on to stays its own: the re-send did not take another.
    assert q.lock("b") == ("t-1" if fetch_next else None)


def test_a_finish_re_sent_after_its_job_was_retried_and_taken_again(q: Queue) -> None:
    q.add("a", opts={"attempts": 2})
    q.take_id(token="t-1")
    assert q.fail("a")[0] == "waiting"  # no backoff: ready again at once
    assert q.take_id(token="t-2") == "a"
    # t-1's re-sent finish answers where its own call sent the job.
    assert q.fail("a", token="t-1") == ("waiting", "", {}, 0)
    assert q.check() == {"a": "active"}
    assert q.lock("a") == "t-2"


def test_a_finish_re_sent_after_another_token_finished_the_job_again(q: Queue) -> None:
    """The other token's finish (or the job's removal by retention) leaves the first token's
    record as it was: it still answers."""
    for job_id, first, second in (("a", "t-1", "t-2"), ("b", "t-3", "t-4")):
        q.add(job_id, opts={"attempts": 2, "removeOnComplete": job_id == "a"})
        assert q.take_id(token=first) == job_id
        assert q.fail(job_id)[0] == "waiting"
        assert q.take_id(token=second) == job_id
        assert q.complete(job_id)[0] == "completed"
        assert q.fail(job_id, token=first) == ("waiting", "", {}, 0)
    assert q.check() == {"b": "completed"}  # a was removed by its retention rule


CLOCK_CALLS = {
    "moveToFinished": [
        *["a", "t-1", "5 ", "completed", "1", "", "0", "0", "1000", "0", "0", "0", "0", "0"]
    ],
    "moveStalledJobsToWait": ["0", " 5"],
    "moveToActive": ["t-2", "1000", "5.0", "0", "0", "0"],
    "moveToDelayed": ["a", "t-1", "1e3", "0", "0"],
}


@pytest.mark.parametrize("script", sorted(CLOCK_CALLS))
def test_a_clock_not_in_decimal_digits_is_refused_before_any_write(q: Queue, script: str) -> None:
    """The scripts hand `now` to Redis as it came; Redis would refuse "5 " after the first
    write, so the scripts refuse it first."""
    q.add("a")
    q.add("b")
    q.take_id(token="t-1")
    q.stalled_check()
    q.expire_lock("a")  # a stalled job for the stalled check; t-1 answers -2 then
    before = snapshot(q.r, q.name)
    keys_of: dict[str, list[str]] = {
        "moveToFinished": list(g.move_to_finished_keys(q.name, "completed")),
        "moveStalledJobsToWait": list(g.move_stalled_jobs_to_wait_keys(q.name)),
        "moveToActive": list(g.move_to_active_keys(q.name)),
        "moveToDelayed": list(g.move_to_delayed_keys(q.name, "a")),
    }
    with pytest.raises(LuaError, match=r"now must be an integer from 0 to 2\^53 - 1 in decimal"):
        raw(script, q.r, keys_of[script], CLOCK_CALLS[script])
    assert snapshot(q.r, q.name) == before


def test_a_fetch_next_never_takes_back_the_job_it_retried(q: Queue) -> None:
    q.add("a", opts={"attempts": 3})  # no backoff: the retry is ready at once
    q.take_id(token="t-1")
    assert q.fail("a", fetch_next=True) == ("waiting", "", {}, 0)
    assert q.check() == {"a": "wait"}
    # A new pickup takes it; re-sent, the first finish still answers the same.
    assert q.take_id(token="t-2") == "a"
    assert q.fail("a", token="t-1", fetch_next=True) == ("waiting", "", {}, 0)


def test_a_retry_sent_twice_backs_off_once(q: Queue) -> None:
    q.add("a")
    q.take_id()
    assert resend(q, lambda: q.retry("a", base=100)) == 100
    assert q.job("a")["atm"] == "1"


def test_the_other_scripts_sent_twice(q: Queue) -> None:
    q.add("a")
    q.take_id(token="t-1")
    assert resend(q, lambda: q.extend("a")) == 1
    assert q.pause() == 1
    assert q.pause() == 0  # the state is the same; the second call says it changed nothing
    assert q.resume() == 1
    # A custom id or a deduplication id makes an add safe to send again.
    assert [add_standard(q.r, q.name, job_id="c") for _ in range(2)] == [("c", 1), ("c", 0)]
    first = add_standard(q.r, q.name, dedup_id="d")
    assert add_standard(q.r, q.name, dedup_id="d") == (first[0], 0)
    q.expire_lock("a")
    q.stalled_check()
    assert q.stalled_check() == (["a"], [])
    assert q.stalled_check() == ([], [])  # a second run recovers nothing twice
    assert q.check() == {"a": "wait", "c": "wait", first[0]: "wait"}


def test_a_finish_of_a_job_whose_lock_expired_is_still_refused(q: Queue) -> None:
    """The records answer only calls that landed: a late finish after the lock expired (the
    token's record ends with it) and stalled recovery moved the job is refused as before."""
    q.add("a", opts={"removeOnFail": True})
    q.take_id(token="t-1")
    q.expire_lock("a")
    q.stalled_check()
    assert q.stalled_check(max_stalled=0) == ([], ["a"])  # failed for good, and removed
    assert q.check() == {}
    with pytest.raises(errors.JobLockNotExist):
        q.complete("a", token="t-1")


def test_re_sent_calls_on_a_cluster_queue_use_its_slot(rc: redis.cluster.RedisCluster) -> None:
    """The token's record carries the queue's hash tag: a re-send works on any primary."""
    q = Queue(rc, "elsewhere")
    q.add("a", opts={"removeOnComplete": True})
    q.take_id(token="t-1")
    assert resend(q, lambda: q.complete("a", lock_ms=LOCK_MS)) == ("completed", "", {}, 0)
    assert q.check() == {}
