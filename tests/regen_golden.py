"""Rewrite tests/fixtures/projects/*/expected.txt from the tool's current output (`make golden`).

Review the diff before committing it: the golden files are what the tests hold the tool to.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.golden import PROJECTS, check_output, project_names


def main() -> None:
    for name in project_names():
        _, stdout = check_output(PROJECTS / name)
        (PROJECTS / name / "expected.txt").write_text(stdout, encoding="utf-8")
        print(f"{name}: {stdout.count(chr(10))} lines")


if __name__ == "__main__":
    main()
