"""`python -m echomq_scripts`: the same command line as `echomq-scripts`."""

from .entry import main

main()
