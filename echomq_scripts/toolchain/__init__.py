"""The toolchain half of echomq-scripts: `echomq-scripts build` and the other commands.

It needs the `build` extra (`pip install 'echomq-scripts[build]'`). The stages, in the order of
the data flow (docs/design.md):

    snapshot -> sources -> resolve -> header -> analyse (cache) -> checks
             -> manifest -> codegen (templates/) -> output

`pipeline` runs them; `cli` parses the command line, `build_command` runs `build` and `check`
step by step, and `entry` with `replay` answers an unchanged build before click loads.
"""
