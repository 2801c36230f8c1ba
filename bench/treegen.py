"""A generated source tree for the growth rows: N scripts that build clean and share includes.

How to read it: the tree stands in for a large script library, so the growth rows measure the
toolchain on code shaped like the real thing, not on empty files. Every script has a header in
the documented format (docs/authoring.md, lua_src/extendLock-2.lua), reads every key and argument
it declares, declares every failure code it can return, and is unique (its name is in its text),
so the analysis cache cannot share entries between scripts. About 70% of the scripts pull in
shared includes (some of which include others), and half use the include of their "family" of 25
scripts. Resolved scripts run from 8 to about 260 lines, about 60 on average. The same `count`
and `seed` always give the same bytes.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from string import Template

# Shared includes: path under lua_src/ (without .lua) -> text. `$` never occurs in Lua here.
SHARED_INCLUDES: dict[str, str] = {
    "includes/listContains": """\
-- True when the list at `key` holds `value` (LPOS answers nil, seen in Lua as false, if not).
local function listContains(key, value)
  return redis.call("LPOS", key, value) ~= false
end
""",
    "includes/jobState": """\
-- Finds the state that holds a job: the first of the given keys that contains its id.
--- @include "listContains"

local function jobState(jobId, listStates, sortedSetStates)
  for _, state in ipairs(sortedSetStates) do
    if redis.call("ZSCORE", state[2], jobId) then
      return state[1]
    end
  end
  for _, state in ipairs(listStates) do
    if listContains(state[2], jobId) then
      return state[1]
    end
  end
  return "unknown"
end
""",
    "includes/lock/checkLock": """\
-- 0 when `token` holds the lock at `lockKey`; otherwise the failure code to return.
local function checkLock(lockKey, token)
  local holder = redis.call("GET", lockKey)
  if not holder then
    return -2
  end
  if holder ~= token then
    return -6
  end
  return 0
end
""",
    "includes/lock/releaseLock": """\
-- Deletes the lock at `lockKey` when `token` holds it; 0 on success, else the failure code.
--- @include "checkLock"

local function releaseLock(lockKey, token)
  local code = checkLock(lockKey, token)
  if code == 0 then
    redis.call("DEL", lockKey)
  end
  return code
end
""",
    "includes/time/nowMillis": """\
-- The server's clock in milliseconds (TIME answers seconds and microseconds).
local function nowMillis()
  local time = redis.call("TIME")
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
""",
    "includes/events/emitEvent": """\
-- Appends an event to the queue's stream, trimmed to about `maxLen` entries.
local function emitEvent(streamKey, maxLen, event, jobId, ...)
  redis.call("XADD", streamKey, "MAXLEN", "~", maxLen, "*", "event", event, "jobId", jobId, ...)
end
""",
    "includes/queue/addToWait": """\
-- Puts a job at the head of the wait list, or of the paused list while the queue is paused.
local function addToWait(waitKey, pausedKey, metaKey, jobId)
  local target = waitKey
  if redis.call("HEXISTS", metaKey, "paused") == 1 then
    target = pausedKey
  end
  redis.call("LPUSH", target, jobId)
  return target
end
""",
    "includes/queue/removeFromAll": """\
-- Removes a job id from every list and sorted set given; the number of removals.
local function removeFromAll(jobId, lists, sortedSets)
  local removed = 0
  for _, key in ipairs(lists) do
    removed = removed + redis.call("LREM", key, 0, jobId)
  end
  for _, key in ipairs(sortedSets) do
    removed = removed + redis.call("ZREM", key, jobId)
  end
  return removed
end
""",
    "includes/util/batches": """\
-- Calls `fn` on consecutive slices of `items`, at most `size` at a time (unpack's stack limit).
local function batches(items, size, fn)
  for first = 1, #items, size do
    local last = math.min(first + size - 1, #items)
    fn(unpack(items, first, last))
  end
end
""",
    "includes/util/splitList": """\
-- The comma-separated parts of `text`, in order, without empty ones.
local function splitList(text)
  local parts = {}
  for part in string.gmatch(text, "[^,]+") do
    parts[#parts + 1] = part
  end
  return parts
end
""",
    "includes/metrics/recordMetric": """\
-- Counts one event in the per-minute metrics hash and records the oldest minute to keep.
--- @include "../time/nowMillis"

local function recordMetric(metricsKey, name, keep)
  local minute = math.floor(nowMillis() / 60000)
  redis.call("HINCRBY", metricsKey, name .. ":" .. minute, 1)
  redis.call("HSET", metricsKey, "oldest", minute - keep)
end
""",
    "includes/rate/rateLimited": """\
-- The milliseconds until the limiter at `limiterKey` lets the next job through, 0 when now.
local function rateLimited(limiterKey, max, windowMs)
  local count = redis.call("INCR", limiterKey)
  if count == 1 then
    redis.call("PEXPIRE", limiterKey, windowMs)
  end
  if count > max then
    return redis.call("PTTL", limiterKey)
  end
  return 0
end
""",
    "includes/job/jobExists": """\
-- True when the job's hash exists.
local function jobExists(jobKey)
  return redis.call("EXISTS", jobKey) == 1
end
""",
}

_CODE_NAMES = {-1: "JobNotExist", -2: "JobLockNotExist", -3: "JobNotInState", -6: "JobLockMismatch"}
_FAMILY_SIZE = 25  # scripts per family include
_VERBS = "add move get update remove promote retry extend clean pause drain count".split()
_NOUNS = "Job Jobs Lock State Event Metric Parent Child Delayed Limiter Queue Repeat".split()
_FIELDS = "attempts progress priority delay stalled retries finished failed processed".split()


def family_include(family: int) -> tuple[str, str]:
    """The include shared by the scripts of one family: (path without .lua, text)."""
    name = f"family{family:03d}"
    text = (
        f"-- Keys of the {name} feature, shared by its scripts.\n"
        f"local function {name}Key(prefix, jobId)\n"
        f'  return prefix .. "{name}:" .. jobId\n'
        "end\n"
    )
    return f"includes/families/{name}", text


@dataclass
class _Slot:
    name: str
    description: str
    type: str = ""


@dataclass
class ScriptBuilder:
    """Collects one script's keys, arguments, includes, codes and body lines, then renders it."""

    summary: str
    keys: list[_Slot] = field(default_factory=list)
    args: list[_Slot] = field(default_factory=list)
    rest_arg: _Slot | None = None
    includes: list[str] = field(default_factory=list)
    codes: set[int] = field(default_factory=set)
    body: list[str] = field(default_factory=list)
    _names: int = 0

    def key(self, name: str, description: str) -> str:
        """`KEYS[i]` for the key called `name`, declaring it on first use."""
        return f"KEYS[{self._slot(self.keys, name, description, '') + 1}]"

    def arg(self, name: str, type_: str, description: str) -> str:
        """`ARGV[i]` for the argument called `name`, declaring it on first use."""
        return f"ARGV[{self._slot(self.args, name, description, type_) + 1}]"

    def include(self, path: str, codes: tuple[int, ...] = ()) -> None:
        if path not in self.includes:
            self.includes.append(path)
        self.codes.update(codes)

    def fresh(self, base: str) -> str:
        """A local name no other statement of this script uses."""
        self._names += 1
        return f"{base}{self._names}"

    def emit(self, template: str, **values: object) -> None:
        self.body.extend(Template(template).substitute(values).rstrip("\n").split("\n"))

    def render(self, returns: str, return_line: str) -> str:
        lines = [f"--- {self.summary}"]
        width = max([len(s.name) for s in [*self.keys, *self.args]] + [1]) + 2
        lines += [f"--- @key {s.name.ljust(width)}{s.description}" for s in self.keys]
        lines += [
            f"--- @arg {s.name.ljust(width)}{s.type.ljust(7)} {s.description}" for s in self.args
        ]
        if self.rest_arg is not None:
            rest = self.rest_arg
            lines.append(f"--- @arg... {rest.name}  {rest.type} {rest.description}")
        lines.append(f"--- @return {returns}")
        lines += [f"--- @error {c} {_CODE_NAMES[c]}" for c in sorted(self.codes, reverse=True)]
        lines += [f'--- @include "{path}"' for path in self.includes]
        return "\n".join([*lines, "", *self.body, return_line, ""])

    def _slot(self, slots: list[_Slot], name: str, description: str, type_: str) -> int:
        for index, slot in enumerate(slots):
            if slot.name == name:
                return index
        slots.append(_Slot(name, description, type_))
        return len(slots) - 1


# -- features that call a shared include ------------------------------------------------------


def _job_id(b: ScriptBuilder) -> str:
    return b.arg("job_id", "string", "the job's id")


def _lock_check(b: ScriptBuilder, rng: random.Random) -> None:
    release = rng.random() < 0.4
    b.include("includes/lock/releaseLock" if release else "includes/lock/checkLock", (-2, -6))
    b.emit(
        "local $code = $fn($lock, $token)\nif $code ~= 0 then\n  return $code\nend",
        code=b.fresh("lockCode"),
        fn="releaseLock" if release else "checkLock",
        lock=b.key("lock", "the job's lock, emq:{q}:<id>:lock"),
        token=b.arg("token", "string", "the token the worker took the lock with"),
    )


def _job_exists(b: ScriptBuilder, rng: random.Random) -> None:
    b.include("includes/job/jobExists", (-1,))
    b.emit(
        "if not jobExists($job) then\n  return -1\nend",
        job=b.key("job", "the job's hash, emq:{q}:<id>"),
    )


def _emit_event(b: ScriptBuilder, rng: random.Random) -> None:
    b.include("includes/events/emitEvent")
    b.emit(
        'emitEvent($events, $max, "$event", $job, "at", $stamp)',
        events=b.key("events", "the queue's event stream, emq:{q}:events"),
        max=rng.choice((1000, 10000, 100000)),
        event=rng.choice(("added", "active", "completed", "failed", "progress", "removed")),
        job=_job_id(b),
        stamp=b.arg("timestamp", "int", "the caller's clock, in milliseconds"),
    )


def _now_millis(b: ScriptBuilder, rng: random.Random) -> None:
    b.include("includes/time/nowMillis")
    b.emit(
        'local $now = nowMillis()\nredis.call("ZADD", $set, $now, $job)',
        now=b.fresh("now"),
        set=b.key("completed", "the completed sorted set, emq:{q}:completed"),
        job=_job_id(b),
    )


def _add_to_wait(b: ScriptBuilder, rng: random.Random) -> None:
    b.include("includes/queue/addToWait")
    b.emit(
        'local $target = addToWait($wait, $paused, $meta, $job)\nredis.call("PUBLISH", $target'
        ' .. ":added", $job)',
        target=b.fresh("target"),
        wait=b.key("wait", "the wait list, emq:{q}:wait"),
        paused=b.key("paused", "the paused list, emq:{q}:paused"),
        meta=b.key("meta", "the queue's settings hash, emq:{q}:meta"),
        job=_job_id(b),
    )


def _remove_from_all(b: ScriptBuilder, rng: random.Random) -> None:
    b.include("includes/queue/removeFromAll", (-3,))
    b.emit(
        "local $removed = removeFromAll($job, { $wait, $active }, { $delayed })\n"
        "if $removed == 0 then\n  return -3\nend",
        removed=b.fresh("removed"),
        job=_job_id(b),
        wait=b.key("wait", "the wait list, emq:{q}:wait"),
        active=b.key("active", "the active list, emq:{q}:active"),
        delayed=b.key("delayed", "the delayed sorted set, emq:{q}:delayed"),
    )


def _batches(b: ScriptBuilder, rng: random.Random) -> None:
    b.include("includes/util/batches")
    b.emit(
        "local $ids = cjson.decode($arg)\nbatches($ids, $size, function(...)\n"
        '  redis.call("SREM", $set, ...)\nend)',
        ids=b.fresh("ids"),
        arg=b.arg("ids", "json", "the job ids to drop, as a JSON array"),
        size=rng.choice((1000, 5000, 7000)),
        set=b.key("stalled", "the queue's stalled set, emq:{q}:stalled"),
    )


def _split_list(b: ScriptBuilder, rng: random.Random) -> None:
    b.include("includes/util/splitList")
    b.emit(
        "local $fields = splitList($arg)\nif #$fields > 0 then\n"
        '  redis.call("HDEL", $job, unpack($fields))\nend',
        fields=b.fresh("fields"),
        arg=b.arg("fields", "string", "the hash fields to clear, comma-separated"),
        job=b.key("job", "the job's hash, emq:{q}:<id>"),
    )


def _record_metric(b: ScriptBuilder, rng: random.Random) -> None:
    b.include("includes/metrics/recordMetric")
    b.emit(
        'recordMetric($metrics, "$name", tonumber($keep))',
        metrics=b.key("metrics", "the per-minute metrics hash, emq:{q}:metrics"),
        name=rng.choice(_FIELDS),
        keep=b.arg("keep", "int", "how many minutes of metrics to keep"),
    )


def _rate_limited(b: ScriptBuilder, rng: random.Random) -> None:
    b.include("includes/rate/rateLimited")
    b.emit(
        "local $delay = rateLimited($limiter, tonumber($max), tonumber($window))\n"
        'if $delay > 0 then\n  redis.call("HSET", $meta, "limitedUntil", $delay)\nend',
        delay=b.fresh("delay"),
        limiter=b.key("limiter", "the rate limiter's counter, emq:{q}:limiter"),
        max=b.arg("max", "int", "the jobs the limiter lets through per window"),
        window=b.arg("window", "int", "the limiter's window, in milliseconds"),
        meta=b.key("meta", "the queue's settings hash, emq:{q}:meta"),
    )


def _job_state(b: ScriptBuilder, rng: random.Random) -> None:
    b.include("includes/jobState", (-1,))
    b.emit(
        "local $state = jobState($job, {\n"
        '  { "wait", $wait },\n  { "active", $active },\n}, {\n'
        '  { "delayed", $delayed },\n  { "failed", $failed },\n})\n'
        'if $state == "unknown" then\n  return -1\nend',
        state=b.fresh("state"),
        job=_job_id(b),
        wait=b.key("wait", "the wait list, emq:{q}:wait"),
        active=b.key("active", "the active list, emq:{q}:active"),
        delayed=b.key("delayed", "the delayed sorted set, emq:{q}:delayed"),
        failed=b.key("failed", "the failed sorted set, emq:{q}:failed"),
    )


Feature = Callable[[ScriptBuilder, random.Random], None]
_INCLUDE_FEATURES: tuple[Feature, ...] = (
    _lock_check,
    _job_exists,
    _emit_event,
    _now_millis,
    _add_to_wait,
    _remove_from_all,
    _batches,
    _split_list,
    _record_metric,
    _rate_limited,
    _job_state,
)

# -- plain steps: realistic code without includes --------------------------------------------

_STEPS: tuple[str, ...] = (
    """\
local $v = tonumber(redis.call("HGET", $hash, "$field") or "0")
if $v >= $limit then
  redis.call("HSET", $hash, "$field", 0)
else
  redis.call("HINCRBY", $hash, "$field", 1)
end""",
    """\
local $v = redis.call("LLEN", $list)
if $v > $limit then
  redis.call("LTRIM", $list, 0, $limit - 1)
end""",
    """\
local $v = redis.call("SMEMBERS", $set)
for _, $w in ipairs($v) do
  if string.find($w, "$field", 1, true) then
    redis.call("SREM", $set, $w)
  end
end""",
    """\
local $v = {}
for $w = 1, $limit do
  $v[#$v + 1] = string.format("%s:%d", $arg, $w)
end
redis.call("SADD", $set, unpack($v))""",
    """\
local $v = redis.call("ZRANGEBYSCORE", $zset, "-inf", $arg, "LIMIT", 0, $limit)
if #$v > 0 then
  redis.call("ZREM", $zset, unpack($v))
end""",
    """\
local $v = cjson.decode(redis.call("HGET", $hash, "data") or "{}")
$v["$field"] = ($v["$field"] or 0) + 1
redis.call("HSET", $hash, "data", cjson.encode($v))""",
)


def _step(b: ScriptBuilder, rng: random.Random) -> None:
    template = Template(rng.choice(_STEPS))
    # Only what the chosen step reads is declared: a declared key that is never read fails.
    values: dict[str, Callable[[], object]] = {
        "v": lambda: b.fresh(rng.choice(_FIELDS)),
        "w": lambda: b.fresh("item"),
        "field": lambda: rng.choice(_FIELDS),
        "limit": lambda: rng.choice((10, 100, 1000, 5000)),
        "hash": lambda: b.key("job", "the job's hash, emq:{q}:<id>"),
        "list": lambda: b.key(rng.choice(("wait", "active")), "a job list, emq:{q}:<state>"),
        "set": lambda: b.key("stalled", "the queue's stalled set, emq:{q}:stalled"),
        "zset": lambda: b.key("delayed", "the delayed sorted set, emq:{q}:delayed"),
        "arg": lambda: b.arg("timestamp", "int", "the caller's clock, in milliseconds"),
    }
    b.emit(template.template, **{name: values[name]() for name in template.get_identifiers()})


def _family(b: ScriptBuilder, family: int) -> None:
    path, _ = family_include(family)
    b.include(path)
    b.emit(
        'redis.call("INCR", family${n}Key($prefix, $job))',
        n=f"{family:03d}",
        prefix=b.key("prefix", "the queue's key prefix, emq:{q}:"),
        job=_job_id(b),
    )


def _rest_args(b: ScriptBuilder) -> None:
    """A loop over the variable argument list; it must come after every fixed argument."""
    index = b.fresh("i")
    b.rest_arg = _Slot("job_ids", "the ids of the jobs to mark", "string")
    b.emit(
        'for $i = $first, #ARGV do\n  redis.call("SADD", $set, ARGV[$i])\nend',
        i=index,
        first=len(b.args) + 1,
        set=b.key("marked", "the marked set, emq:{q}:marked"),
    )


_RETURNS: tuple[tuple[str, str], ...] = (
    ("int  1 when the job was handled", "return 1"),
    ('status  "OK"', 'return redis.status_reply("OK")'),
    ("tuple[int, string]  the count and the outcome", 'return { 1, "done" }'),
    ("list[string] | nil  the ids touched, or nil when there were none", "return nil"),
)


def _step_count(rng: random.Random) -> int:
    roll = rng.random()
    if roll < 0.70:
        return rng.randint(0, 5)
    if roll < 0.95:
        return rng.randint(6, 15)
    return rng.randint(25, 40)


def make_script(index: int, rng: random.Random) -> tuple[str, str]:
    """One script: (file name, text)."""
    name = f"{rng.choice(_VERBS)}{rng.choice(_NOUNS)}{index:04d}"
    b = ScriptBuilder(f"Script {index} of the generated benchmark tree ({name}).")
    features = rng.sample(_INCLUDE_FEATURES, k=rng.choice((0, 0, 1, 1, 2, 3, 4)))
    for feature in features:
        feature(b, rng)
    if rng.random() < 0.5:
        _family(b, index // _FAMILY_SIZE)
    for _ in range(_step_count(rng)):
        _step(b, rng)
    if not b.keys:
        _step(b, rng)
    if rng.random() < 0.1:
        _rest_args(b)
    returns, return_line = rng.choice(_RETURNS)
    text = b.render(returns, return_line)
    return f"{name}-{len(b.keys)}.lua", text


@dataclass(frozen=True)
class GeneratedTree:
    """Where a generated tree lives; `src` is what `--src` takes."""

    root: Path
    src: Path
    scripts: int
    includes: int


def write_tree(root: Path, count: int, seed: int = 20260) -> GeneratedTree:
    """Write `count` scripts, their includes and a pyproject.toml under `root`."""
    rng = random.Random(seed)
    src = root / "lua_src"
    files: dict[str, str] = {f"{p}.lua": text for p, text in SHARED_INCLUDES.items()}
    for family in range((count + _FAMILY_SIZE - 1) // _FAMILY_SIZE):
        path, text = family_include(family)
        files[f"{path}.lua"] = text
    for index in range(count):
        name, text = make_script(index, rng)
        files[name] = text
    for rel, text in files.items():
        target = src / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    # The same rule as this repository: every script must carry a header.
    (root / "pyproject.toml").write_text(
        '[project]\nname = "bench-tree"\nversion = "1.0.0"\n\n'
        "[tool.echomq-scripts]\nrequire-header = true\n",
        encoding="utf-8",
    )
    return GeneratedTree(root, src, count, len(files) - count)
