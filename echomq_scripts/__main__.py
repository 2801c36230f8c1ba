"""`python -m echomq_scripts`: the same command line as `echomq-scripts`."""

from .toolchain.entry import main

main()
