"""The runtime half of echomq-scripts: what a service needs to run the protocol's scripts.

It imports the standard library and redis-py only (tests/test_architecture.py holds it to that),
so `pip install echomq-scripts` without the `[build]` extra is enough to import a generated
package and call its wrappers. The wrappers dispatch through `Script`; everything they name is
exported here.

The exports load on first use (PEP 562): the toolchain reads `grammar` and `codes` without
importing redis-py, which costs a build more than a tenth of a second.


- errors.py     the exceptions, all `ScriptError`s
- keys.py       the protocol's key names and the rules for queue names and job ids
- codes.py      the closed table of failure codes -1..-11
- grammar.py    the header's types (`TYPES`: annotation, encoder, decoder) and return shapes
- arguments.py  one encoder per argument type, the checks of queue names and keys
- replies.py    one decoder per reply type
- clients.py    the redis-py clients and pipelines a wrapper takes
- script.py     `Script`, `ScriptSpec`, `load_all`, the check of Cluster slots
- pipelines.py  `Pending`, `execute`
- linemap.py    line maps read back, the line of a Redis error
"""

__all__ = [
    "EMPTY_OBJECT",
    "ERROR_CODES",
    "ArgumentError",
    "AsyncClient",
    "AsyncPipeline",
    "BodyMismatchError",
    "LuaError",
    "NotLoadedError",
    "Pending",
    "PipelineClient",
    "PipelineIncompleteError",
    "ReplyShapeError",
    "Script",
    "ScriptError",
    "ScriptFailed",
    "ScriptModules",
    "ScriptSpec",
    "SyncClient",
    "SyncPipeline",
    "bool_arg",
    "bytes_arg",
    "check_keys",
    "check_one_slot",
    "check_sequence",
    "enum_arg",
    "execute",
    "execute_async",
    "id_arg",
    "int_arg",
    "json_arg",
    "load_all",
    "load_all_async",
    "new_token",
    "now_ms",
    "number_arg",
    "string_arg",
]

# Where the exports are defined, the light modules first: an export loads the first that has it.
_MODULES = ("errors", "codes", "arguments", "clients", "script", "pipelines")

TYPE_CHECKING = False  # not typing's: importing typing is not free either
if TYPE_CHECKING:
    from .arguments import (
        EMPTY_OBJECT,
        bool_arg,
        bytes_arg,
        check_keys,
        check_sequence,
        enum_arg,
        id_arg,
        int_arg,
        json_arg,
        new_token,
        now_ms,
        number_arg,
        string_arg,
    )
    from .clients import AsyncClient, AsyncPipeline, PipelineClient, SyncClient, SyncPipeline
    from .codes import ERROR_CODES
    from .errors import (
        ArgumentError,
        BodyMismatchError,
        LuaError,
        NotLoadedError,
        PipelineIncompleteError,
        ReplyShapeError,
        ScriptError,
        ScriptFailed,
    )
    from .pipelines import Pending, execute, execute_async
    from .script import (
        Script,
        ScriptModules,
        ScriptSpec,
        check_one_slot,
        load_all,
        load_all_async,
    )


def __getattr__(name: str) -> object:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    for module in _MODULES:
        found = importlib.import_module(f"{__name__}.{module}").__dict__
        if name in found:
            globals()[name] = found[name]  # found directly from now on
            return found[name]
    raise AttributeError(f"{__name__}.{name} is exported but defined nowhere")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
