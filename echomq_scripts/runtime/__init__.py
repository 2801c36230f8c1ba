"""The runtime half of echomq-scripts: what a service needs to run the protocol's scripts.

It imports the standard library and redis-py only (tests/test_architecture.py holds it to that),
so `pip install echomq-scripts` without the `[build]` extra is enough to import a generated
package and call its wrappers. The wrappers dispatch through `Script`; everything they name is
exported here:

- errors.py     the exceptions, all `ScriptError`s
- keys.py       the protocol's key names and the rules for queue names and job ids
- codes.py      the closed table of failure codes -1..-11
- grammar.py    the header's types (`TYPES`: annotation, encoder, decoder) and return shapes
- arguments.py  one encoder per argument type, the checks of keys and slots
- replies.py    one decoder per reply type
- clients.py    the redis-py clients and pipelines a wrapper takes
- script.py     `Script`, `ScriptSpec`, `load_all`
- pipelines.py  `Pending`, `execute`
- linemap.py    line maps read back, the line of a Redis error
"""

from .arguments import (
    bool_arg,
    bytes_arg,
    check_keys,
    check_one_slot,
    check_sequence,
    enum_arg,
    id_arg,
    int_arg,
    json_arg,
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
from .script import Script, ScriptSpec, load_all, load_all_async

__all__ = [
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
    "number_arg",
    "string_arg",
]
