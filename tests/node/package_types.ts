// Compiled with tsc --strict against the installed package's index.d.ts: each line uses the
// declared types as a TypeScript user would, and must compile.
import { Redis } from "ioredis";
import {
  addStandardJob,
  ErrorCode,
  JobLockMismatch,
  moveToActive,
  moveToFinished,
  ScriptFailed,
  type Added,
  type Counts,
  type Pickup,
  getCounts,
} from "echomq-scripts";

export async function life(redis: Redis): Promise<number> {
  const added: Added = await addStandardJob(redis, { queue: "q", name: "n", data: { any: ["json"] } });
  const pickup: Pickup = await moveToActive(redis, { queue: "q" }); // token and now: roles
  const fields: Record<string, string> = pickup.fields;
  try {
    await moveToFinished(redis, {
      queue: "q", job_id: added.job_id, token: pickup.token, outcome: "failed", result: "x",
    });
  } catch (error) {
    if (error instanceof JobLockMismatch) {
      const code: ErrorCode.JobLockMismatch = error.code;
      return code;
    }
    if (error instanceof ScriptFailed && error.code === ErrorCode.JobNotExist) return -1;
  }
  const counts: Counts = await getCounts(redis, { queue: "q" });
  return counts.completed + Object.keys(fields).length;
}
