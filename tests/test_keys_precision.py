"""The KEYS check against Redis itself: a read it reports out of range fails on Redis, one it
accepts runs there, and what it cannot follow it says so (issue 16's cases, each one script).

Each script takes two keys and is built by the tool; then Redis runs it with two keys. A read of
a third key hands `nil` to `redis.call`, which Redis refuses.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

from echomq_scripts.toolchain.diagnostics import format_text
from tests.support.projects import run_build

HEADER = "--- Reads its keys.\n--- @key a  first\n--- @key b  second\n--- @return int  1\n"
TOUCH_BOTH = 'redis.call("INCR", KEYS[1]) redis.call("INCR", KEYS[2])\n'

RANGE = "error: KEYS[3] is out of range: 'k-2.lua' takes 2 keys [keys-range]"
ESCAPE = (
    "error: KEYS is stored or passed where the check cannot follow it, so its reads there go"
    " unchecked: index it here, pass it to a local function, or declare a variable key list"
    " with '@key...' in the header [keys-escape]"
)

# (code after the header, the finding at line 5 (column: finding) or None, whether Redis runs it)
CASES = {
    "folded": ('redis.call("INCR", KEYS[1 + 1]) redis.call("INCR", KEYS[2 - 1])', None, True),
    "local": (
        'local i = 1 redis.call("INCR", KEYS[i]) redis.call("INCR", KEYS[i + 1])',
        None,
        True,
    ),
    "loop": ('for i = 1, 2 do redis.call("INCR", KEYS[i]) end', None, True),
    "dead": ('if false then redis.call("INCR", KEYS[3]) end ' + TOUCH_BOTH, None, True),
    "rawget": ('redis.call("INCR", rawget(KEYS, 3)) ' + TOUCH_BOTH, f"27: {RANGE}", False),
    "global": ('redis.call("INCR", _G.KEYS[3]) ' + TOUCH_BOTH, f"20: {RANGE}", False),
    "select": ('redis.call("INCR", select(3, unpack(KEYS))) ' + TOUCH_BOTH, f"37: {RANGE}", False),
    "table": (
        'local t = { k = KEYS } redis.call("INCR", t.k[3]) ' + TOUCH_BOTH,
        f"17: {ESCAPE}",
        False,
    ),
    "vararg": (
        'local function third(...) local k = ... return k[3] end redis.call("INCR", third(KEYS)) '
        + TOUCH_BOTH,
        f"82: {ESCAPE}",
        False,
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_keys_check_agrees_with_redis(case: str, tmp_path: Path, r: redis.Redis) -> None:
    code, finding, runs = CASES[case]
    src = tmp_path / "lua_src"
    src.mkdir()
    script = HEADER + code + "\nreturn 1\n"
    (src / "k-2.lua").write_text(script, encoding="utf-8")
    result = run_build(src, tmp_path / "build")
    found = format_text(result.diagnostics).replace(f"{src.as_posix()}/", "")
    assert found == ("" if finding is None else f"k-2.lua:5:{finding}\n")
    if runs:
        assert r.eval(script, 2, "a", "b") == 1
    else:
        with pytest.raises(redis.ResponseError):
            r.eval(script, 2, "a", "b")


def test_unpack_into_two_locals_leaves_a_third_key_unused(tmp_path: Path) -> None:
    src = tmp_path / "lua_src"
    src.mkdir()
    header = HEADER.replace("--- @return", "--- @key c  third\n--- @return")
    code = 'local a, b = unpack(KEYS) redis.call("INCR", a) redis.call("INCR", b)\nreturn 1\n'
    (src / "k-3.lua").write_text(header + code, encoding="utf-8")
    found = format_text(run_build(src, tmp_path / "build").diagnostics)
    assert found.replace(f"{src.as_posix()}/", "") == (
        "k-3.lua:4:10: error: key 3 'c' is never read; remove it or mark it (unused) [key-unused]\n"
    )
