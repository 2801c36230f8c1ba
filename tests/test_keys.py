"""keys.py, the protocol's key builders, against the scripts' key templates and Cluster slots."""

from __future__ import annotations

import inspect
import random
import re
import string
import typing

import pytest
from redis.crc import key_slot

from echomq_scripts import generated as g
from echomq_scripts.runtime import keys
from echomq_scripts.toolchain.naming import snake_case

BY_QUEUE = [
    keys.wait,
    keys.paused,
    keys.active,
    keys.delayed,
    keys.prioritized,
    keys.completed,
    keys.failed,
    keys.waiting_children,
    keys.stalled,
    keys.events,
    keys.meta,
    keys.id_counter,
    keys.limiter,
    keys.priority_counter,
    keys.marker,
]
BY_JOB = [
    keys.job,
    keys.lock,
    keys.logs,
    keys.dependencies,
    keys.processed,
    keys.ignored,
    keys.unsuccessful,
]


def every_key(queue: str, job_id: str) -> set[str]:
    built = {f(queue) for f in BY_QUEUE} | {f(queue, job_id) for f in BY_JOB}
    built |= {keys.metrics(queue, o) for o in ("completed", "failed")}
    built |= {keys.metrics_data(queue, o) for o in ("completed", "failed")}
    built |= {keys.state(queue, s) for s in keys.STATES}
    built |= {keys.schedulers(queue), keys.scheduler(queue, "s1")}
    return built | {keys.dedup(queue, "d1"), keys.dedup_next(queue, "d1")}


def test_each_key_of_a_queue() -> None:
    assert [f("mail") for f in BY_QUEUE] == [
        "emq:{mail}:wait",
        "emq:{mail}:paused",
        "emq:{mail}:active",
        "emq:{mail}:delayed",
        "emq:{mail}:prioritized",
        "emq:{mail}:completed",
        "emq:{mail}:failed",
        "emq:{mail}:waiting-children",
        "emq:{mail}:stalled",
        "emq:{mail}:events",
        "emq:{mail}:meta",
        "emq:{mail}:id",
        "emq:{mail}:limiter",
        "emq:{mail}:pc",
        "emq:{mail}:marker",
    ]
    assert [f("mail", "7") for f in BY_JOB] == [
        "emq:{mail}:7",
        "emq:{mail}:7:lock",
        "emq:{mail}:7:logs",
        "emq:{mail}:7:dependencies",
        "emq:{mail}:7:processed",
        "emq:{mail}:7:failed",
        "emq:{mail}:7:unsuccessful",
    ]
    assert keys.metrics("mail", "failed") == "emq:{mail}:metrics:failed"
    assert keys.dedup("mail", "order-1") == "emq:{mail}:de:order-1"
    assert [keys.state("mail", s) for s in keys.STATES] == [f("mail") for f in BY_QUEUE[:8]]


@pytest.mark.parametrize("queue", ["", "a{b", "a}b", "{mail}"])
def test_queue_names_that_would_break_the_tag_are_refused(queue: str) -> None:
    with pytest.raises(keys.KeyNameError):
        keys.wait(queue)


@pytest.mark.parametrize(
    "job_id", ["", "a:b", "7:lock", "wait", "meta", "x{y}", "de", "dn", "repeat", "token"]
)
def test_job_ids_that_could_name_another_key_are_refused(job_id: str) -> None:
    with pytest.raises(keys.KeyNameError):
        keys.job("mail", job_id)


def test_other_mistakes_are_refused() -> None:
    with pytest.raises(keys.KeyNameError, match="no state"):
        keys.state("mail", "running")
    with pytest.raises(keys.KeyNameError):
        keys.metrics("mail", "delayed")
    with pytest.raises(keys.KeyNameError):
        keys.dedup("mail", "")


def test_every_script_template_is_a_key_keys_py_builds() -> None:
    """The headers' templates and keys.py describe one key layout."""
    known = every_key("mail", "7")
    for script in g.SCRIPTS:
        for template in script.spec.templates:
            for outcome in ("completed", "failed"):
                values = {
                    "job_id": "7",
                    "outcome": outcome,
                    "dedup_id": "d1",
                    "scheduler_id": "s1",
                    "state": "wait",
                    "part": "processed",
                }
                key = re.sub(r"<(\w+)>", lambda m: values[m[1]], template)  # noqa: B023
                assert key.replace("{q}", "{mail}") in known, (script.spec.script_id, template)


def queue_names(count: int) -> list[str]:
    rng = random.Random(20261129)
    alphabet = string.ascii_letters + string.digits + ":-_.<>|/ éü"
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 24))) for _ in range(count)]


@pytest.mark.parametrize("queue", queue_names(40))
def test_every_scripts_keys_share_one_slot(queue: str) -> None:
    for script in g.SCRIPTS:
        if not script.spec.templates:
            continue
        helper = getattr(g, snake_case(script.spec.name) + "_keys")
        parameters = list(inspect.signature(helper, eval_str=True).parameters.values())[1:]
        # An id is "7"; an enum placeholder (outcome) takes its first value.
        values = [(typing.get_args(p.annotation) or ("7",))[0] for p in parameters]
        built = helper(queue, *values)
        slots = {key_slot(k.encode()) for k in built}
        assert slots == {key_slot(keys.wait(queue).encode())}, script.spec.script_id
