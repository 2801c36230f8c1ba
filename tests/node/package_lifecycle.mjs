// The bundle's scenario (tests/support/scenario.py) through the npm package's API only, as a
// Node.js user runs it after `npm install echomq-scripts-<version>.tgz`: add, pickup, a
// heartbeat, a finish with another worker's token, the finish; then a refused argument, checked
// before anything is sent, and a Lua refusal. Prints a JSON report.
//
// usage: node package_lifecycle.mjs <redis port> <queue>
import Redis from "ioredis";
import * as emq from "echomq-scripts";

const [port, queue] = process.argv.slice(2);
const redis = new Redis({ host: "127.0.0.1", port: Number(port), lazyConnect: true });
// The closed table as this runtime holds it: the enum's names (its reverse entries left out),
// and each error class's code.
const table = Object.fromEntries(Object.entries(emq.ErrorCode).filter(([name]) => Number.isNaN(Number(name))));
const classes = Object.fromEntries(Object.keys(table).map((name) => [name, emq[name].code]));
const report = { version: emq.VERSION, codes: table, classCodes: classes };
const failure = (error) => ({
  name: error.name,
  code: error.code ?? null,
  codeName: error.code === undefined ? null : emq.ErrorCode[error.code],
  isScriptFailed: error instanceof emq.ScriptFailed,
  message: error.message,
});

try {
  await redis.connect();
  const added = await emq.addStandardJob(redis, { queue, name: "email", data: { to: "a@b.c" }, now: 1000 });
  report.add = added;
  const pickup = await emq.moveToActive(redis, { queue, token: "worker:1", now: 1001 });
  report.pickup = { job_id: pickup.job_id, name: pickup.fields.name, token: pickup.token };
  report.heartbeat = await emq.extendLock(redis, {
    queue, job_id: added.job_id, token: "worker:1", duration: 30000,
  });
  const finish = (token, now, result) =>
    emq.moveToFinished(redis, { queue, job_id: added.job_id, token, now, outcome: "completed", result });
  try {
    await finish("worker:2", 1004, '"stolen"');
  } catch (error) {
    report.wrongToken = { ...failure(error), isJobLockMismatch: error instanceof emq.JobLockMismatch };
  }
  const finished = await finish("worker:1", 1005, '"sent"');
  report.finish = finished.moved_to;
  report.state = await emq.getJobState(redis, { queue, job_id: added.job_id });
  report.counts = await emq.getCounts(redis, { queue });
  report.keys = emq.extendLockKeys(queue, { job_id: added.job_id });
  try {
    await emq.moveToActive(redis, { queue, token: "", now: 1006 });
  } catch (error) {
    report.badArgument = failure(error);
  }
  try {
    await emq.getJobState(redis, { queue, job_id: "a:b" });
  } catch (error) {
    report.badId = failure(error);
  }
  // Mistakes refused before anything is sent, each as the Python wrappers refuse it.
  const refused = async (label, call) => {
    try {
      await call();
      report[label] = null;
    } catch (error) {
      report[label] = failure(error);
    }
  };
  await refused("loneSurrogate", () => emq.updateData(redis, { queue, job_id: "1", data: { a: "\uD800" } }));
  await refused("mapData", () => emq.updateData(redis, { queue, job_id: "1", data: new Map([["a", 1]]) }));
  await refused("dateOpts", () => emq.addStandardJob(redis, { queue, name: "n", data: 1, opts: new Date(0) }));
  await refused("reservedIdKeys", async () => emq.extendLockKeys(queue, { job_id: "wait" }));
  // A queue name that holds a replacement pattern or a template's placeholder is text as is.
  report.oddQueueKeys = [emq.getCountsKeys("a$&b")[0], emq.extendLockKeys("x<job_id>", { job_id: "7" })[0]];
} finally {
  redis.disconnect();
}
console.log(JSON.stringify(report));
