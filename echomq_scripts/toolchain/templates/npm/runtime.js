// The runtime every generated script function of index.js calls: it checks and encodes the arguments as the
// scripts' headers declare them, builds the keys from the headers' templates, sends EVALSHA (once
// more as EVAL with the body when Redis answers NOSCRIPT), raises the error class of a failure
// code, and decodes the reply by the header's shape.
import { createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";

/** A script answered a failure code its header lists. */
export class ScriptFailed extends Error {
  constructor(script, code, jobId) {
    super(`${script} failed: ${code}${jobId === null ? "" : ` (job ${jobId})`}`);
    this.name = new.target.name;
    this.script = script;
    this.code = code;
    this.jobId = jobId;
  }
}

/** An argument the script would refuse, refused before anything is sent. */
export class ArgumentError extends Error {
  constructor(message) {
    super(message);
    this.name = "ArgumentError";
  }
}

/** A Lua error of a script, with the line of the resolved body Redis names. */
export class LuaError extends Error {
  constructor(script, line, message) {
    super(message);
    this.name = "LuaError";
    this.script = script;
    this.line = line;
  }
}

/** A reply that does not fit the script's declared shape. */
export class ReplyShapeError extends Error {
  constructor(message) {
    super(message);
    this.name = "ReplyShapeError";
  }
}

const MAX_INT = Number.MAX_SAFE_INTEGER; // the integers a Lua number holds exactly
const bodies = new Map();

function body(spec) {
  let found = bodies.get(spec.id);
  if (found === undefined) {
    found = readFileSync(new URL(`./${spec.file}`, import.meta.url));
    const sha1 = createHash("sha1").update(found).digest("hex");
    if (sha1 !== spec.sha1) {
      throw new Error(`${spec.id}: the packaged body hashes to ${sha1}, not ${spec.sha1}`);
    }
    bodies.set(spec.id, found);
  }
  return found;
}

function shown(value) {
  try {
    return JSON.stringify(value)?.slice(0, 60) ?? String(value);
  } catch {
    return String(value);
  }
}

function refuse(spec, arg, expected, value) {
  if (value === undefined || value === null) {
    return new ArgumentError(`${spec.id}: argument '${arg.name}' is required`);
  }
  return new ArgumentError(
    `${spec.id}: argument '${arg.name}' must be ${expected}, got ${typeof value} ${shown(value)}`,
  );
}

function wellFormed(text) {
  return typeof text.isWellFormed === "function"
    ? text.isWellFormed()
    : !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text);
}

function checkText(spec, arg, value, expected) {
  if (typeof value !== "string") throw refuse(spec, arg, expected, value);
  if (!wellFormed(value)) throw refuse(spec, arg, "text UTF-8 can encode (no lone surrogates)", value);
  return value;
}

function checkId(context, spec, arg, value) {
  if (arg.optional && value === "") return value;
  checkText(spec, arg, value, "a job id (a str)");
  if (value === "" || /[{}:]/.test(value) || context.reservedIds.has(value)) {
    throw new ArgumentError(
      `${spec.id}: argument '${arg.name}': ${shown(value)} is not a job id (non-empty, no '{',` +
        ` '}' or ':', not a name of the queue's own keys)`,
    );
  }
  return value;
}

function inRange(arg, value) {
  if (arg.low !== undefined && value < arg.low) return false;
  if (arg.high !== undefined && (arg.below ? value >= arg.high : value > arg.high)) return false;
  return true;
}

function bounds(arg) {
  const parts = [];
  if (arg.low !== undefined) parts.push(`>= ${arg.low}`);
  if (arg.high !== undefined) parts.push(`${arg.below ? "<" : "<="} ${arg.high}`);
  return parts.length ? ` ${parts.join(" and ")}` : "";
}

function jsonText(spec, arg, value) {
  const refused = (what) => refuse(spec, arg, what, value);
  let text;
  try {
    text = JSON.stringify(value, (key, v) => {
      if (!wellFormed(key)) throw refused("JSON whose strings UTF-8 can encode (no lone surrogates)");
      if (typeof v === "string" && !wellFormed(v)) {
        throw refused("JSON whose strings UTF-8 can encode (no lone surrogates)");
      }
      if (typeof v === "number" && !Number.isFinite(v)) throw refused("JSON (finite numbers)");
      if (v === undefined || typeof v === "function" || typeof v === "bigint" || typeof v === "symbol") {
        throw refused("JSON (no undefined, functions, bigints or symbols)");
      }
      if (v instanceof Map || v instanceof Set) throw refused("JSON (a Map or Set is not JSON)");
      return v;
    });
  } catch (error) {
    throw error instanceof ArgumentError ? error : refused("JSON");
  }
  return text;
}

function plainObject(value) {
  if (value === null || typeof value !== "object") return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

// One argument, checked against its header type and encoded as Redis receives it.
function encode(context, spec, arg, value) {
  switch (arg.kind) {
    case "string":
      checkText(spec, arg, value, "a string");
      if (arg.form === "non-empty" && value === "") throw refuse(spec, arg, "a non-empty string", value);
      return value;
    case "id":
      return checkId(context, spec, arg, value);
    case "enum":
      if (typeof value !== "string" || !arg.values.includes(value)) {
        throw refuse(spec, arg, `one of ${arg.values.map((v) => `'${v}'`).join(", ")}`, value);
      }
      return value;
    case "int":
      if (!Number.isSafeInteger(value) || Math.abs(value) > MAX_INT || !inRange(arg, value)) {
        throw refuse(spec, arg, `an integer${bounds(arg)}`, value);
      }
      return String(value);
    case "number":
      if (typeof value !== "number" || !Number.isFinite(value) || !inRange(arg, value)) {
        throw refuse(spec, arg, `a finite number${bounds(arg)}`, value);
      }
      return String(value);
    case "bool":
      if (typeof value !== "boolean") throw refuse(spec, arg, "a boolean", value);
      return value ? "1" : "0";
    case "json":
      if (arg.form === "object" && !plainObject(value)) {
        throw refuse(spec, arg, "a plain object (a JSON object)", value);
      }
      return jsonText(spec, arg, value);
    default: // bytes, msgpack
      if (!(value instanceof Uint8Array)) throw refuse(spec, arg, "a Uint8Array or Buffer", value);
      return Buffer.from(value);
  }
}

function filled(arg, args) {
  if (args[arg.name] !== undefined) return args[arg.name];
  if (arg.role === "now") return Date.now();
  if (arg.role === "token") return randomBytes(16).toString("hex");
  return arg.default;
}

function checkQueue(spec, queue) {
  if (typeof queue !== "string" || queue === "" || /[{}]/.test(queue) || !wellFormed(queue)) {
    throw new ArgumentError(
      `${spec.id}: a queue name must be a non-empty string without '{' or '}', got ${shown(queue)}`,
    );
  }
}

// The keys from the templates, in one pass: `{q}` is the queue's tag, `<name>` the value of that
// argument, which may not move the hash tag.
function fillKeys(spec, queue, ids) {
  checkQueue(spec, queue);
  return spec.keys.map((template) =>
    template.replace(/\{q\}|<(\w+)>/g, (_, name) => {
      if (name === undefined) return `{${queue}}`;
      const value = ids[name];
      if (typeof value !== "string" || value === "" || /[{}]/.test(value)) {
        throw new ArgumentError(`${spec.id}: '${name}' must be a non-empty string without '{' or '}'`);
      }
      return value;
    }),
  );
}

// A keys builder's: the ids checked as a call checks its arguments (a job id by the id rule, an
// enum by its words), then the keys.
export function keysFor(context, spec, queue, ids) {
  for (const arg of spec.args) {
    if (spec.keys.some((template) => template.includes(`<${arg.name}>`))) {
      encode(context, spec, arg, ids[arg.name]);
    }
  }
  return fillKeys(spec, queue, ids);
}

// A reply as the header's shape declares it; ReplyShapeError when it does not fit.
function decode(shape, reply) {
  if (shape.union) {
    for (const item of shape.union) {
      try {
        return decode(item, reply);
      } catch (error) {
        if (!(error instanceof ReplyShapeError)) throw error;
      }
    }
    throw new ReplyShapeError(`reply ${shown(reply)} fits none of its alternatives`);
  }
  if (shape.list) {
    if (!Array.isArray(reply)) throw new ReplyShapeError(`expected an array, got ${shown(reply)}`);
    return reply.map((item) => decode(shape.list, item));
  }
  const items = shape.tuple ?? shape.fields?.map(([, item]) => item);
  if (items) {
    if (!Array.isArray(reply) || reply.length !== items.length) {
      throw new ReplyShapeError(`expected ${items.length} values, got ${shown(reply)}`);
    }
    const values = items.map((item, index) => decode(item, reply[index]));
    if (shape.tuple) return values;
    return Object.freeze(Object.fromEntries(shape.fields.map(([name], i) => [name, values[i]])));
  }
  switch (shape.type) {
    case "int":
      if (!Number.isInteger(reply)) throw new ReplyShapeError(`expected an integer, got ${shown(reply)}`);
      return reply;
    case "nil":
      if (reply !== null) throw new ReplyShapeError(`expected nil, got ${shown(reply)}`);
      return null;
    case "hash": {
      if (!Array.isArray(reply) || reply.length % 2) {
        throw new ReplyShapeError(`expected a hash reply, got ${shown(reply)}`);
      }
      // fromEntries makes each field an own property, "__proto__" too.
      const pairs = [];
      for (let i = 0; i < reply.length; i += 2) pairs.push([String(reply[i]), String(reply[i + 1])]);
      return Object.fromEntries(pairs);
    }
    case "json":
      if (typeof reply !== "string") throw new ReplyShapeError(`expected JSON text, got ${shown(reply)}`);
      try {
        return JSON.parse(reply);
      } catch {
        throw new ReplyShapeError(`expected JSON text, got ${shown(reply)}`);
      }
    default: // string, status
      if (typeof reply !== "string") throw new ReplyShapeError(`expected a string, got ${shown(reply)}`);
      return reply;
  }
}

function luaError(spec, error) {
  const message = String(error?.message ?? error);
  // Redis 7 ends the message with the line; older servers put it first.
  const line = /on @user_script:(\d+)\./.exec(message) ?? /user_script:(\d+):/.exec(message);
  if (line === null) return error;
  return new LuaError(spec.id, Number(line[1]), message);
}

async function send(redis, spec, keys, argv) {
  try {
    try {
      return await redis.evalsha(spec.sha1, keys.length, ...keys, ...argv);
    } catch (error) {
      if (!String(error?.message).startsWith("NOSCRIPT")) throw error;
      // EVAL loads and runs the body in one command: no flush can come in between.
      return await redis.eval(body(spec), keys.length, ...keys, ...argv);
    }
  } catch (error) {
    throw luaError(spec, error);
  }
}

export async function runScript(context, name, redis, args) {
  const spec = context.specs[name];
  if (args === null || typeof args !== "object") throw new ArgumentError(`${spec.id}: pass an object of arguments`);
  // The names a call takes, found once a script.
  const known = (spec.known ??= new Set(["queue", ...spec.args.map((a) => a.name), ...(spec.rest ? [spec.rest.name] : [])]));
  for (const given of Object.keys(args)) {
    if (!known.has(given)) throw new ArgumentError(`${spec.id}: no argument '${given}'`);
  }
  const values = {};
  const argv = spec.args.map((arg) => {
    const value = filled(arg, args);
    values[arg.name] = value;
    return encode(context, spec, arg, value);
  });
  if (spec.rest) {
    const rest = args[spec.rest.name] ?? [];
    if (!Array.isArray(rest)) throw new ArgumentError(`${spec.id}: ${spec.rest.name} must be an array`);
    for (const value of rest) argv.push(encode(context, spec, spec.rest, value));
  }
  const keys = fillKeys(spec, args.queue, values); // the ids are checked: they were encoded
  body(spec); // the first use checks the packaged body against its SHA1, before sending
  const reply = await send(redis, spec, keys, argv);
  if (typeof reply === "number" && spec.codes.includes(reply)) {
    const jobId = typeof values.job_id === "string" && values.job_id !== "" ? values.job_id : null;
    throw new context.failures[reply](spec.id, reply, jobId);
  }
  return spec.returns ? decode(spec.returns, reply) : reply;
}
