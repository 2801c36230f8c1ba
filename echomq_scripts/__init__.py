"""echomq-scripts: build, check and publish the EchoMQ protocol's Redis Lua scripts."""

__version__ = "0.1.0"

__all__ = ["__version__"]
