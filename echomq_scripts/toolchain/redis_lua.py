"""What Redis's embedded Lua 5.1 offers a script: its globals and the fields of its libraries.

Read off a Redis 7.0 server (the oldest this project supports) by listing `_G` from inside a
script; later versions only add to it (7.2 adds `os.clock`), so a script that keeps to this list
runs on every supported server.
"""

from typing import Final

LIBRARY_FIELDS: Final[dict[str, frozenset[str]]] = {
    "bit": frozenset("arshift band bnot bor bswap bxor lshift rol ror rshift tobit tohex".split()),
    "cjson": frozenset(
        "_NAME _VERSION decode decode_invalid_numbers decode_max_depth encode"
        " encode_invalid_numbers encode_keep_buffer encode_max_depth encode_number_precision"
        " encode_sparse_array new null".split()
    ),
    "cmsgpack": frozenset(
        "_COPYRIGHT _DESCRIPTION _NAME _VERSION pack unpack unpack_limit unpack_one".split()
    ),
    "coroutine": frozenset("create resume running status wrap yield".split()),
    "math": frozenset(
        "abs acos asin atan atan2 ceil cos cosh deg exp floor fmod frexp huge ldexp log log10"
        " max min mod modf pi pow rad random randomseed sin sinh sqrt tan tanh".split()
    ),
    "redis": frozenset(
        "LOG_DEBUG LOG_NOTICE LOG_VERBOSE LOG_WARNING REDIS_VERSION REDIS_VERSION_NUM REPL_ALL"
        " REPL_AOF REPL_NONE REPL_REPLICA REPL_SLAVE acl_check_cmd breakpoint call debug"
        " error_reply log pcall replicate_commands set_repl setresp sha1hex status_reply".split()
    ),
    "string": frozenset(
        "byte char dump find format gfind gmatch gsub len lower match rep reverse sub upper".split()
    ),
    "struct": frozenset("pack size unpack".split()),
    "table": frozenset("concat foreach foreachi getn insert maxn remove setn sort".split()),
}

GLOBALS: Final[frozenset[str]] = frozenset(LIBRARY_FIELDS) | frozenset(
    "KEYS ARGV _G _VERSION assert collectgarbage error gcinfo getmetatable ipairs load"
    " loadstring next pairs pcall rawequal rawget rawset select setmetatable tonumber tostring"
    " type unpack xpcall".split()
)

# Names people reach for that Redis removed or never loaded, with the reason to print.
MISSING_GLOBALS: Final[dict[str, str]] = {
    "os": "Redis 7.0 has no 'os' library (7.2 adds only os.clock)",
    "io": "Redis scripts have no 'io' library: they cannot touch files",
    "print": "Redis scripts have no 'print': use redis.log(redis.LOG_NOTICE, ...)",
    "require": "Redis scripts cannot load modules: 'require' is not available",
    "loadfile": "Redis scripts cannot read files: 'loadfile' is not available",
    "dofile": "Redis scripts cannot read files: 'dofile' is not available",
    "debug": "Redis scripts have no 'debug' library (redis.debug is the script debugger's log)",
    "module": "Redis scripts cannot define modules: 'module' is not available",
    "setfenv": "'setfenv' is not available in Redis scripts",
    "getfenv": "'getfenv' is not available in Redis scripts",
    "newproxy": "'newproxy' is not available in Redis scripts",
}
