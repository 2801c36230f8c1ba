// Consumes an echomq-scripts bundle exactly as published, in Node.js with ioredis: reads the
// tarball (with node-tar), checks every body's SHA1 against the manifest, registers every script with
// defineCommand (numberOfKeys from the manifest), runs a job through add, pickup, a heartbeat, a
// finish with the wrong token (named by the manifest's codes) and completion against the Redis
// server on the given port, and sends one argument a script refuses. Prints a JSON report; exits
// non-zero on any mismatch.
//
// usage: node consume.mjs <bundle.tar.gz> <redis port> [queue]

import { createHash } from "node:crypto";
import Redis from "ioredis";
import * as tar from "tar";

// The bundle's files by their path below its top folder, read with node-tar (its gzip too).
function untar(path) {
  const files = new Map();
  tar.t({
    file: path,
    sync: true,
    onReadEntry: (entry) => {
      const chunks = [];
      entry.on("data", (chunk) => chunks.push(chunk));
      entry.on("end", () => files.set(entry.path.split("/").slice(1).join("/"), Buffer.concat(chunks)));
    },
  });
  return files;
}

const [bundlePath, port, queue = "node"] = process.argv.slice(2);
const files = untar(bundlePath);
const manifest = JSON.parse(files.get("manifest.json").toString("utf8"));
const redis = new Redis({ host: "127.0.0.1", port: Number(port), lazyConnect: true });
const report = { version: manifest.version, scripts: 0, sha1Mismatches: [], steps: {} };

try {
  await redis.connect();
  for (const script of manifest.scripts) {
    const body = files.get(script.file);
    const sha1 = createHash("sha1").update(body).digest("hex");
    if (sha1 !== script.sha1) report.sha1Mismatches.push(script.name);
    redis.defineCommand(script.name, { numberOfKeys: script.numKeys, lua: body.toString("utf8") });
    report.scripts += 1;
  }
  // Key strings from the manifest's templates: {q} is the queue, <arg> an argument's value.
  const keysOf = (name, values) =>
    manifest.scripts
      .find((script) => script.name === name)
      .keys.map((key) =>
        key.template.replace("{q}", `{${queue}}`).replace(/<(\w+)>/g, (_, arg) => values[arg]),
      );
  // The scenario every runtime's consumer runs (tests/support/scenario.py): add, pickup, a
  // heartbeat, a finish with another worker's token, the finish.
  const [jobId, added] = await redis.addStandardJob(
    ...keysOf("addStandardJob", {}),
    "", "email", '{"to":"a@b.c"}', "{}", 1000, "", "",
  );
  report.steps.add = { jobId, added };
  const [activeId, fields] = await redis.moveToActive(
    ...keysOf("moveToActive", {}),
    "worker:1", 30000, 1001, 0, 0, 0,
  );
  report.steps.pickup = { jobId: activeId, name: fields[fields.indexOf("name") + 1] };
  report.steps.heartbeat = await redis.extendLock(
    ...keysOf("extendLock", { job_id: jobId }),
    "worker:1", 30000, jobId,
  );
  const values = { job_id: jobId, outcome: "completed" };
  const finish = (token, now, result) =>
    redis.moveToFinished(
      ...keysOf("moveToFinished", values),
      jobId, token, now, "completed", result, "", 0, "0", 30000, 0, 0, 0, 0, 0,
    );
  const wrong = await finish("worker:2", 1004, '"stolen"');
  const codes = new Map(manifest.codes.map((entry) => [entry.code, entry.name]));
  report.steps.wrongToken = { reply: wrong, name: codes.get(wrong) };
  const [state] = await finish("worker:1", 1005, '"sent"');
  report.steps.finish = { state };
  report.steps.counts = await redis.getCounts(...keysOf("getCounts", {}));
  // A refused argument reaches this runtime as an error too: the script's error(), with its line.
  report.steps.refusal = null;
  try {
    await redis.pause(...keysOf("pause", {}), "stop");
  } catch (error) {
    report.steps.refusal = error.message;
  }
} finally {
  redis.disconnect();
}

console.log(JSON.stringify(report));
const ok =
  report.sha1Mismatches.length === 0 &&
  report.steps.add.added === 1 &&
  report.steps.pickup.jobId === report.steps.add.jobId &&
  report.steps.finish.state === "completed" &&
  report.steps.wrongToken.name === "JobLockMismatch" &&
  report.steps.refusal !== null;
process.exit(ok ? 0 : 1);
