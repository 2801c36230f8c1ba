// Each marked line is a mistake the declared types must refuse: tsc --strict reports one error
// on each, and none elsewhere.
import { Redis } from "ioredis";
import { moveToFinished, getCounts, type Counts } from "echomq-scripts";

export async function mistakes(redis: Redis): Promise<void> {
  // @ts-expect-error: "done" is not one of the outcomes
  await moveToFinished(redis, { queue: "q", job_id: "1", token: "t", outcome: "done", result: "" });
  // @ts-expect-error: job_id is required
  await moveToFinished(redis, { queue: "q", token: "t", outcome: "completed", result: "" });
  // @ts-expect-error: no such argument
  await getCounts(redis, { queue: "q", extra: 1 });
  const counts: Counts = await getCounts(redis, { queue: "q" });
  // @ts-expect-error: a Counts has no field "done"
  counts.done;
}
