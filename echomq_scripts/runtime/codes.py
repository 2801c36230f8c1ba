"""The protocol's closed table of failure codes.

A transition script that cannot complete returns one of these negative integers. The table is
part of the protocol (L2): it is the same in every runtime and is never extended. It lives in its
own module, free of build-side imports, because both the build and the runtime read it.
"""

from typing import Final

ERROR_CODES: Final[dict[int, str]] = {
    -1: "JobNotExist",
    -2: "JobLockNotExist",
    -3: "JobNotInState",
    -4: "JobPendingChildren",
    -5: "ParentJobNotExist",
    -6: "JobLockMismatch",
    -7: "ParentJobCannotBeReplaced",
    -8: "JobBelongsToJobScheduler",
    -9: "JobHasFailedChildren",
    -10: "SchedulerJobIdCollision",
    -11: "SchedulerJobSlotsBusy",
}
