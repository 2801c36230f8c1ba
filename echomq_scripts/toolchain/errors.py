"""Exceptions of the build side: raised only when a run cannot go on at all.

Problems in the scripts themselves are `Diagnostic` values, not exceptions; these are for a run
that cannot start or finish (a missing source directory, an output directory that is not ours).
"""


class EchoMQScriptsError(Exception):
    """Base of every error the build raises; the CLI prints it as one line and exits non-zero."""


class ConfigError(EchoMQScriptsError):
    """The project's `[tool.echomq-scripts]` table or a command-line path is unusable."""


class OutputError(EchoMQScriptsError):
    """The output directory cannot be written or replaced safely."""
