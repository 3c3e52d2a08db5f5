#!/usr/bin/env node
// Serves the real Worker entry (src/entry.py) over HTTP, running under Pyodide
// 314 in Node with the real `workers` SDK and Miniflare's D1. See README.md.
//
//   node serve.mjs --port 0 --vars vars.json --persist DIR [--host 127.0.0.1]
//                  [--max-connections 6]
//
// Every request is turned into a JS `Request` and handed to the entry's
// `fetch`, except the control routes under /__harness/ (see `control` below).
// Prints one JSON line `{"ready": true, "port": N, ...}` on stdout when serving.

import { AsyncLocalStorage } from "node:async_hooks";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";

import { Miniflare } from "miniflare";

import {
  DEFAULT_COMPAT_FLAGS,
  HERE,
  PACKAGES,
  ROOT,
  SRC,
  loadWorkerPython,
} from "./worker_python.mjs";

// Same as wrangler.example.jsonc: the Pyodide line it selects and the flags on at that date.
const COMPATIBILITY_DATE = "2026-11-01";
const DATABASE_NAME = "plugin-db";
const DATABASE_ID = "00000000-0000-4000-8000-000000000001";
const DB_BINDING = "PLUGIN_DB";
// A second D1, never migrated by wrangler and never seen by the Worker: the store-contract
// tests (tests/test_store_contract.py) migrate and empty it themselves, through the Workers
// adapter, so that they may assert on whole tables without touching the Worker's own.
const CONTRACT_BINDING = "CONTRACT_DB";
const CONTRACT_DATABASE_ID = "00000000-0000-4000-8000-000000000002";
// The optional Rate Limiting binding (wrangler `ratelimits`); present only when a test asks.
const LIMITER_BINDING = "LAUNCH_LIMITER";
// The optional Durable Object namespace of the alarm clocks; present only when a test asks.
const CLOCK_BINDING = "SCHEDULE_CLOCK";
// The texts workerd gives a call past an invocation's limits (see the plugin's
// runtimes/workers/bindings.py).
const TOO_MANY_API_REQUESTS = "Too many API requests by single Worker invocation.";
const TOO_MANY_SUBREQUESTS =
  "Too many subrequests by single Worker invocation. To configure this limit, refer to " +
  "https://developers.cloudflare.com/workers/platform/limits/";
const CRON = "* * * * *";
// workerd: fetches of one invocation waiting for response headers at once; the rest wait.
const MAX_CONNECTIONS = 6;

function parseArgs(argv) {
  const options = {
    port: 0,
    host: "127.0.0.1",
    vars: null,
    persist: null,
    packages: PACKAGES,
    src: SRC,
    migrations: path.join(ROOT, "src", "scheduling", "migrations"),
    compatFlags: DEFAULT_COMPAT_FLAGS,
    maxConnections: MAX_CONNECTIONS,
  };
  for (let i = 0; i < argv.length; i += 1) {
    const name = argv[i];
    const value = argv[i + 1];
    if (value === undefined) throw new Error(`${name} needs a value`);
    i += 1;
    if (name === "--port") options.port = Number(value);
    else if (name === "--host") options.host = value;
    else if (name === "--vars") options.vars = path.resolve(value);
    else if (name === "--persist") options.persist = path.resolve(value);
    else if (name === "--packages") options.packages = path.resolve(value);
    else if (name === "--src") options.src = path.resolve(value);
    else if (name === "--migrations") options.migrations = path.resolve(value);
    else if (name === "--compat-flags") options.compatFlags = value.split(",").filter(Boolean);
    else if (name === "--max-connections") options.maxConnections = Number(value);
    else throw new Error(`unknown option ${name}`);
  }
  if (!options.persist) throw new Error("--persist DIR is required (D1 state lives there)");
  if (!Number.isInteger(options.maxConnections) || options.maxConnections < 1) {
    throw new Error("--max-connections needs a whole number of at least 1");
  }
  return options;
}

const log = (...args) => console.error("[harness]", ...args);

// -- D1: migrations through wrangler, then Miniflare's binding ----------------

function applyMigrations(options) {
  // A generated wrangler config, so `wrangler d1 migrations apply --local` writes
  // the same state that Miniflare reads (<persist>/v3/d1).
  fs.mkdirSync(options.persist, { recursive: true });
  const config = path.join(options.persist, "wrangler.harness.jsonc");
  fs.writeFileSync(
    config,
    JSON.stringify(
      {
        name: "scheduling-harness",
        main: path.join(options.src, "entry.py"),
        compatibility_date: COMPATIBILITY_DATE,
        compatibility_flags: ["python_workers"],
        d1_databases: [
          {
            binding: DB_BINDING,
            database_name: DATABASE_NAME,
            database_id: DATABASE_ID,
            migrations_dir: options.migrations,
          },
        ],
      },
      null,
      2,
    ),
  );
  const wrangler = path.join(HERE, "node_modules", "wrangler", "bin", "wrangler.js");
  const result = spawnSync(
    process.execPath,
    [wrangler, "d1", "migrations", "apply", DATABASE_NAME, "--local", "--config", config,
      "--persist-to", options.persist],
    {
      cwd: options.persist,
      encoding: "utf8",
      env: { ...process.env, CI: "true", WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" },
    },
  );
  if (result.status !== 0) {
    throw new Error(`wrangler d1 migrations apply failed:\n${result.stdout}\n${result.stderr}`);
  }
}

// The database runs inside workerd (Miniflare's D1), reached only by async dispatchFetch
// calls to a small worker that prepares, binds and runs there. Miniflare's own binding
// proxy makes prepare() and bind() synchronous round trips (Atomics.wait on a helper
// thread) that block this process, and under heavy load its reply can arrive after the
// wait ends: from then on every call read the previous call's reply ("false == true").
const D1_WORKER = `
function value(tagged) {
  switch (tagged.t) {
    case "undefined": return undefined;
    case "bigint": return BigInt(tagged.v);
    case "bytes": return new Uint8Array(tagged.v).buffer;
    default: return tagged.v;
  }
}
function statement(db, { sql, params }) {
  return db.prepare(sql).bind(...params.map(value));
}
export default {
  async fetch(request, env) {
    const { binding, op, statements, column, options, sql } = await request.json();
    const db = env[binding];
    try {
      let result;
      if (op === "batch") result = await db.batch(statements.map((s) => statement(db, s)));
      else if (op === "exec") result = await db.exec(sql);
      else if (op === "first") {
        const s = statement(db, statements[0]);
        result = column === undefined ? await s.first() : await s.first(column);
      } else if (op === "raw") result = await statement(db, statements[0]).raw(options);
      else result = await statement(db, statements[0])[op]();
      return Response.json({ result: result ?? null });
    } catch (error) {
      return Response.json({ error: { name: error.name, message: error.message } });
    }
  },
};
`;

async function startD1(options) {
  const mf = new Miniflare({
    modules: true,
    script: D1_WORKER,
    compatibilityDate: "2026-04-01",
    d1Databases: { [DB_BINDING]: DATABASE_ID, [CONTRACT_BINDING]: CONTRACT_DATABASE_ID },
    d1Persist: path.join(options.persist, "v3", "d1"),
  });
  await mf.ready;
  return { mf, db: new D1Client(mf, DB_BINDING), contract: new D1Client(mf, CONTRACT_BINDING) };
}

// Values as D1's bind() will see them in workerd: JSON alone would turn undefined into null
// and cannot carry a BigInt, both of which D1 refuses (with its own text) at bind.
function tagged(value) {
  if (value === undefined) return { t: "undefined" };
  if (typeof value === "bigint") return { t: "bigint", v: String(value) };
  if (value instanceof ArrayBuffer) return { t: "bytes", v: [...new Uint8Array(value)] };
  if (ArrayBuffer.isView(value)) {
    return { t: "bytes", v: [...new Uint8Array(value.buffer, value.byteOffset, value.byteLength)] };
  }
  return { v: value };
}

class D1Client {
  #mf;
  #binding;
  constructor(mf, binding) {
    this.#mf = mf;
    this.#binding = binding;
  }
  async call(request) {
    const response = await this.#mf.dispatchFetch("http://d1.harness/", {
      method: "POST",
      body: JSON.stringify({ ...request, binding: this.#binding }),
    });
    const answer = await response.json();
    if (answer.error) {
      const error = new Error(answer.error.message);
      error.name = answer.error.name;
      throw error;
    }
    return answer.result;
  }
  prepare(sql) {
    return new D1PreparedStatement(this, sql, []);
  }
  batch(statements) {
    return this.call({ op: "batch", statements: statements.map((s) => s.wire()) });
  }
  exec(sql) {
    return this.call({ op: "exec", sql });
  }
}

// The SDK's env wrapper recognises a D1 binding by its constructor name, as in workerd.
// Every query counts against the running invocation's D1 allowance, when a test set one
// (`/__harness/limits`): past it the call is refused, unmade, with workerd's text.
class D1Database {
  #db;
  constructor(db) {
    this.#db = db;
  }
  prepare(sql) {
    return this.#db.prepare(sql);
  }
  batch(statements) {
    currentInvocation()?.spend("d1", statements.length);
    for (const s of statements) {
      if (!(s instanceof D1PreparedStatement)) throw new TypeError("batch() takes D1 statements");
    }
    return this.#db.batch(statements);
  }
  exec(sql) {
    currentInvocation()?.spend("d1", 1);
    return this.#db.exec(sql);
  }
  withSession() {
    return this; // one local replica: every session reads its own writes
  }
}

class D1PreparedStatement {
  #db;
  constructor(db, sql, params) {
    this.#db = db;
    this.sql = sql;
    this.params = params;
  }
  bind(...values) {
    return new D1PreparedStatement(this.#db, this.sql, values.map(tagged));
  }
  wire() {
    return { sql: this.sql, params: this.params };
  }
  #run(op, extra = {}) {
    currentInvocation()?.spend("d1", 1);
    return this.#db.call({ op, statements: [this.wire()], ...extra });
  }
  all() {
    return this.#run("all");
  }
  run() {
    return this.#run("run");
  }
  first(column) {
    return this.#run("first", column === undefined ? {} : { column });
  }
  raw(options) {
    return this.#run("raw", options === undefined ? {} : { options });
  }
}

// A stand-in for Workers' Rate Limiting binding, named as workerd's class is so that the
// SDK's env wrapper converts `limit({key})`'s argument and answer as it does in production.
// Counting as Miniflare's does: a key's first `limit` calls in a window answer
// {success: true} and count, later ones {success: false}. Its window ends only when the
// test says so (`/__harness/ratelimit` `{"reset": true}`), so tests do not race a clock.
class Ratelimit {
  #limit;
  #counts = new Map();
  constructor(limit, period) {
    if (!Number.isInteger(limit) || limit < 1) throw new Error("limit must be a whole number >= 1");
    if (![10, 60].includes(period)) throw new Error("period must be 10 or 60");
    this.#limit = limit;
    this.period = period;
    this.calls = [];
  }
  async limit(options) {
    const keys = Object.keys(options ?? {});
    if (typeof options?.key !== "string" || keys.some((k) => !["key", "limit", "period"].includes(k))) {
      throw new Error(`bad rate limit options: ${JSON.stringify(options)}`);
    }
    const count = this.#counts.get(options.key) ?? 0;
    const success = count < this.#limit;
    if (success) this.#counts.set(options.key, count + 1);
    this.calls.push({ key: options.key, success });
    return { success };
  }
  endWindow() {
    this.#counts.clear();
  }
}

class ScheduledController {
  constructor(scheduledTime, cron) {
    this.scheduledTime = scheduledTime;
    this.cron = cron;
  }
  noRetry() {}
}

class ExecutionContext {
  #pending = [];
  constructor() {
    this.props = {};
  }
  waitUntil(promise) {
    this.#pending.push(Promise.resolve(promise));
  }
  passThroughOnException() {}
  settled() {
    return Promise.allSettled(this.#pending);
  }
}

// -- Durable Objects: the SCHEDULE_CLOCK namespace, its objects and their alarms ------------
//
// What workerd does for a Durable Object namespace, as far as the Worker can tell: one object
// per name, an instance of the entry's class (`ScheduleClock`) constructed once with its own
// `ctx` (`id`, `storage`) and the Worker's env; every RPC call and every `alarm()` is its own
// invocation (its own six connections and allowances). One alarm per object: `setAlarm`
// replaces it, a time in the past fires at once, `getAlarm` reads null while the alarm runs
// unless it was set since; one `alarm()` at a time per object; a throwing `alarm()` is
// retried after 2 s, doubling, six times at most (or at the alarm it set itself, if sooner).
// For tests: `drop` names whose next alarm is never delivered, `twice` names whose next alarm
// is delivered twice (at least once), `retry_scale` shrinks the retries' delays.

class DurableObjectId {
  constructor(name) {
    this.name = name;
  }
  toString() {
    return Buffer.from(this.name).toString("hex");
  }
}

// The SDK's env wrapper recognises a namespace, and a storage, by workerd's class names.
class DurableObjectNamespace {
  #host;
  constructor(host) {
    this.#host = host;
  }
  idFromName(name) {
    return new DurableObjectId(String(name));
  }
  get(id) {
    return new DurableObjectStub(this.#host, id.name);
  }
  getByName(name) {
    return new DurableObjectStub(this.#host, String(name));
  }
}

class DurableObjectStub {
  #host;
  #name;
  constructor(host, name) {
    this.#host = host;
    this.#name = name;
  }
  // The RPC methods the Worker calls on its clocks.
  arm(...args) {
    return this.#host.call(this.#name, "arm", args);
  }
}

class DurableObjectStorage {
  #object;
  constructor(object) {
    this.#object = object;
  }
  async getAlarm() {
    return this.#object.alarm;
  }
  async setAlarm(at) {
    this.#object.setAlarm(Number(at));
  }
  async deleteAlarm() {
    this.#object.setAlarm(null);
  }
  async get(key) {
    return this.#object.kv.get(key);
  }
  async put(key, value) {
    this.#object.kv.set(key, structuredClone(value));
  }
}

class DurableObjectState {
  constructor(object) {
    this.id = new DurableObjectId(object.name);
    this.storage = new DurableObjectStorage(object);
  }
  waitUntil() {}
  blockConcurrencyWhile(callback) {
    return callback();
  }
}

class HostedObject {
  constructor(host, name) {
    this.host = host;
    this.name = name;
    this.kv = new Map();
    this.alarm = null; // epoch ms, or null
    this.timer = null;
    this.running = null; // the alarm() under way
    this.retries = 0; // of the alarm that last threw
    this.ctx = new DurableObjectState(this);
  }
  setAlarm(at) {
    this.alarm = at;
    this.arm();
  }
  arm() {
    clearTimeout(this.timer);
    this.timer = null;
    if (this.alarm === null || this.running) return; // a running alarm arms its successor
    this.timer = setTimeout(() => this.come(), Math.max(0, this.alarm - Date.now()));
  }
  come() {
    this.timer = null;
    if (this.alarm === null || this.running) return;
    if (Date.now() < this.alarm) return this.arm(); // a timer can come a millisecond early
    const setFor = this.alarm;
    this.alarm = null; // consumed: read as null while it runs, unless set again
    const settings = this.host.settings;
    if (settings.drop.includes(this.name)) {
      settings.drop = settings.drop.filter((name) => name !== this.name);
      this.host.stats.dropped += 1;
      return;
    }
    const times = settings.twice.includes(this.name) ? 2 : 1;
    settings.twice = settings.twice.filter((name) => name !== this.name);
    this.running = this.ring(setFor, times);
  }
  async ring(setFor, times) {
    for (let i = 0; i < times; i += 1) {
      const info = { retryCount: this.retries, isRetry: this.retries > 0 };
      const started = Date.now();
      const invocation = this.host.newInvocation();
      let threw = false;
      try {
        await this.host.invoke(invocation, this.name, "alarm", [info]);
        this.retries = 0;
      } catch (error) {
        threw = true;
        log(`alarm() of ${this.name} threw:`, error?.message ?? error);
        this.retries += 1;
        if (this.retries <= 6) {
          const delay = 2000 * 2 ** (this.retries - 1) * this.host.settings.retry_scale;
          const retryAt = Date.now() + delay;
          this.alarm = this.alarm === null ? retryAt : Math.min(this.alarm, retryAt);
        } else {
          this.retries = 0;
        }
      }
      this.host.stats.alarms.push({
        name: this.name, set_for: setFor, started, ended: Date.now(), ...invocation.used, threw,
      });
    }
    this.running = null;
    this.arm();
    this.host.wakeIdle();
  }
}

class ClockHost {
  constructor(invoke, newInvocation) {
    this.invoke = invoke; // (invocation, name, method, args) -> the call into Python
    this.newInvocation = newInvocation;
    this.objects = new Map();
    this.#configure({});
  }
  #idle = [];
  #configure(settings) {
    this.settings = { drop: [], twice: [], retry_scale: 1, ...settings };
    this.stats = { calls: 0, dropped: 0, alarms: [] };
  }
  bind(settings) {
    this.reset();
    this.#configure(settings ?? {});
  }
  reset() {
    for (const object of this.objects.values()) clearTimeout(object.timer);
    this.objects.clear();
  }
  object(name) {
    let object = this.objects.get(name);
    if (object === undefined) {
      object = new HostedObject(this, name);
      this.objects.set(name, object);
    }
    return object;
  }
  // A call from an invocation to an object: a request to another object counts against the
  // caller's subrequests, and runs as the object's own invocation.
  async call(name, method, args) {
    currentInvocation()?.spend("subrequests", 1);
    this.stats.calls += 1;
    return this.invoke(this.newInvocation(), name, method, args);
  }
  idle() {
    const busy = () =>
      [...this.objects.values()].some(
        (o) => o.running || (o.alarm !== null && o.alarm <= Date.now()),
      );
    if (!busy()) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push({ busy, resolve }));
  }
  wakeIdle() {
    setImmediate(() => {
      const waiting = this.#idle;
      this.#idle = [];
      for (const waiter of waiting) {
        if (waiter.busy()) this.#idle.push(waiter);
        else waiter.resolve();
      }
    });
  }
  report() {
    const objects = {};
    for (const [name, o] of this.objects) {
      objects[name] = { alarm: o.alarm, running: o.running !== null, stored: Object.fromEntries(o.kv) };
    }
    return { settings: this.settings, objects, ...this.stats };
  }
}

// -- Outbound fetch: workerd's connection cap per invocation ------------------
//
// In production one invocation has at most `max` fetches waiting for response
// headers; a further fetch waits until one of them has its headers.
// Its AbortSignal keeps running meanwhile, so a timeout can expire before the
// request is even sent. Local workerd does not enforce this; the harness does,
// so that tests see what production does. Only the fetch that Pyodide's `js`
// module exposes is wrapped: Miniflare and the control routes use Node's own.

// The invocation (an `Invocation`) that the running code belongs to.
const invocations = new AsyncLocalStorage();

function currentInvocation() {
  return invocations.getStore();
}

// Per-invocation limits a test set (`/__harness/limits`); null: none (as local workerd).
const platformLimits = { d1: null, subrequests: null, refused: { d1: 0, subrequests: 0 } };

// One invocation: its own connection slots, and its own D1 queries and subrequests.
class Invocation {
  constructor(slots) {
    this.slots = slots;
    this.used = { d1: 0, subrequests: 0 };
  }
  spend(kind, count) {
    const limit = platformLimits[kind];
    if (limit !== null && this.used[kind] + count > limit) {
      platformLimits.refused[kind] += 1;
      throw new Error(kind === "d1" ? TOO_MANY_API_REQUESTS : TOO_MANY_SUBREQUESTS);
    }
    this.used[kind] += count;
  }
}

function newFetchStats(maxConnections) {
  return {
    max_connections: maxConnections,
    waiting_for_headers: 0, // now, over all invocations
    queued: 0, // now, over all invocations
    max_waiting_for_headers: 0, // the most one invocation ever had at once
    max_waiting_for_headers_total: 0, // the most all invocations together had at once
    queued_total: 0, // fetches that found every slot taken
    started_total: 0, // fetches handed to the real fetch
    aborted_while_queued_total: 0, // their signal aborted before a slot came free
  };
}

class ConnectionSlots {
  #max;
  #stats;
  #waiting = 0;
  #queue = [];

  constructor(max, stats) {
    this.#max = max;
    this.#stats = stats;
  }

  // Resolves once this fetch may start; rejects with the signal's reason if it aborts first.
  acquire(signal) {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#waiting < this.#max) {
      this.#take();
      return Promise.resolve();
    }
    this.#stats.queued_total += 1;
    this.#stats.queued += 1;
    return new Promise((resolve, reject) => {
      const entry = {
        grant: () => {
          signal?.removeEventListener("abort", onAbort);
          this.#stats.queued -= 1;
          this.#take();
          resolve();
        },
      };
      const onAbort = () => {
        this.#queue.splice(this.#queue.indexOf(entry), 1);
        this.#stats.queued -= 1;
        this.#stats.aborted_while_queued_total += 1;
        reject(signal.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#queue.push(entry);
    });
  }

  release() {
    this.#waiting -= 1;
    this.#stats.waiting_for_headers -= 1;
    this.#queue.shift()?.grant();
  }

  #take() {
    this.#waiting += 1;
    this.#stats.waiting_for_headers += 1;
    this.#stats.max_waiting_for_headers = Math.max(
      this.#stats.max_waiting_for_headers,
      this.#waiting,
    );
    this.#stats.max_waiting_for_headers_total = Math.max(
      this.#stats.max_waiting_for_headers_total,
      this.#stats.waiting_for_headers,
    );
  }
}

function signalOf(input, init) {
  if (init && init.signal != null) return init.signal;
  return input instanceof Request ? input.signal : undefined;
}

// `fetch` as an invocation in workerd sees it: a slot first, released when headers arrive.
function limitedFetch(realFetch, maxConnections, stats) {
  const outside = new ConnectionSlots(maxConnections, stats); // code outside any invocation
  return async function fetch(input, init) {
    const invocation = currentInvocation();
    invocation?.spend("subrequests", 1);
    const slots = invocation?.slots ?? outside;
    await slots.acquire(signalOf(input, init));
    stats.started_total += 1;
    try {
      return await realFetch(input, init);
    } finally {
      slots.release();
    }
  };
}

// -- Pyodide -----------------------------------------------------------------

async function startPython(options, env, compatFlags, fetchStats) {
  const output = (stream) => (line) => stream.write(`[worker] ${line}\n`);
  // Python's `import js` sees globalThis with `fetch` limited as in workerd. Other names read
  // with globalThis as the receiver: Node's `crypto` getter refuses any other `this`.
  const fetch = limitedFetch(globalThis.fetch, options.maxConnections, fetchStats);
  const jsglobals = new Proxy(globalThis, {
    get: (target, name) => (name === "fetch" ? fetch : Reflect.get(target, name, target)),
  });
  const pyodide = await loadWorkerPython({
    packages: options.packages,
    src: options.src,
    env,
    compatFlags,
    jsglobals,
    stdout: output(process.stderr),
    stderr: output(process.stderr),
  });
  const glue = pyodide.pyimport("harness_glue");
  return { pyodide, glue };
}

// workerd's host objects (D1, fetch, WebCrypto, Request/Response) are native and warm in any
// isolate; their stand-ins here are JavaScript (Miniflare's client, Node's undici and
// WebCrypto) that V8 compiles on first use, which would be charged to the isolate's first
// invocation. One call of each at start, from JavaScript only: nothing of the Worker runs.
async function warmHostStandIns(db) {
  await db.prepare("SELECT 1").all();
  const bytes = new Uint8Array(32);
  const aes = await crypto.subtle.importKey("raw", bytes, "AES-GCM", false, ["encrypt", "decrypt"]);
  const iv = new Uint8Array(12);
  const sealed = await crypto.subtle.encrypt({ name: "AES-GCM", iv }, aes, bytes);
  await crypto.subtle.decrypt({ name: "AES-GCM", iv }, aes, sealed);
  await crypto.subtle.digest("SHA-256", bytes);
  const hmac = await crypto.subtle.importKey(
    "raw", bytes, { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"],
  );
  await crypto.subtle.verify("HMAC", hmac, await crypto.subtle.sign("HMAC", hmac, bytes), bytes);
  const server = http.createServer((_req, res) => res.end("ok"));
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const answer = await fetch(`http://127.0.0.1:${server.address().port}/`, {
    method: "POST",
    headers: [["content-type", "text/plain"]],
    body: "warm",
    redirect: "manual",
    signal: AbortSignal.timeout(5000),
  });
  await answer.text();
  server.close();
  await new Response("warm", { status: 200, headers: [["x-warm", "1"]] }).arrayBuffer();
}

// -- HTTP --------------------------------------------------------------------

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

async function writeResponse(res, response) {
  const headers = [];
  for (const [name, value] of response.headers) {
    if (name !== "set-cookie") headers.push([name, value]);
  }
  for (const cookie of response.headers.getSetCookie()) headers.push(["set-cookie", cookie]);
  const body = Buffer.from(await response.arrayBuffer());
  res.writeHead(response.status, headers.flat());
  res.end(body);
}

function json(res, status, data) {
  jsonText(res, status, JSON.stringify(data));
}

// JSON made by Python, passed on as is: JS numbers would round integers above 2**53.
function jsonText(res, status, body) {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(body);
}

// The request's body as a stream, as workerd hands it to a Worker: chunks as they arrive,
// read only as far as the Worker reads. If the Worker stops reading (cancels), the rest is
// left unread and the answer is still sent.
function bodyStream(req) {
  let cancelled = false;
  return new ReadableStream(
    {
      start(controller) {
        req.on("data", (chunk) => {
          if (cancelled) return;
          controller.enqueue(new Uint8Array(chunk));
          if (controller.desiredSize <= 0) req.pause();
        });
        req.on("end", () => cancelled || controller.close());
        req.on("error", (error) => cancelled || controller.error(error));
      },
      pull() {
        req.resume();
      },
      cancel() {
        cancelled = true;
        req.pause();
      },
    },
    { highWaterMark: 1 },
  );
}

function toJsRequest(req, origin) {
  const headers = new Headers();
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    headers.append(req.rawHeaders[i], req.rawHeaders[i + 1]);
  }
  // Cloudflare's edge always sets CF-Connecting-IP. The harness sets it to the peer's
  // address unless the test sent one: the test then plays the edge for another client.
  if (!headers.has("cf-connecting-ip") && req.socket.remoteAddress) {
    headers.set("cf-connecting-ip", req.socket.remoteAddress);
  }
  const method = req.method ?? "GET";
  const url = new URL(req.url ?? "/", `http://${req.headers.host ?? origin}`);
  const hasBody = method !== "GET" && method !== "HEAD";
  return new Request(url, {
    method,
    headers,
    body: hasBody ? bodyStream(req) : undefined,
    duplex: "half",
    redirect: "manual",
  });
}

const READ_ONLY = /^\s*(select|with)\b/i;

async function main() {
  const options = parseArgs(process.argv.slice(2));
  const started = Date.now();
  const vars = options.vars ? JSON.parse(fs.readFileSync(options.vars, "utf8")) : {};

  applyMigrations(options);
  const { mf, db, contract } = await startD1(options);
  const env = { [DB_BINDING]: new D1Database(db), ...vars };
  // What `/__harness/d1` hands the adapter for `"database": "contract"`: the same binding
  // name, on the contract tests' own database.
  const contractEnv = { [DB_BINDING]: new D1Database(contract) };
  const fetchStats = newFetchStats(options.maxConnections);
  await warmHostStandIns(env[DB_BINDING]);
  const { pyodide, glue } = await startPython(options, env, options.compatFlags, fetchStats);

  // One invocation: its own connection slots, for everything it starts (waitUntil included).
  function asInvocation(run, invocation = newInvocation()) {
    return invocations.run(invocation, run);
  }

  function newInvocation() {
    return new Invocation(new ConnectionSlots(options.maxConnections, fetchStats));
  }

  async function invoke(handler, ...args) {
    const invocation = newInvocation();
    const ctx = new ExecutionContext();
    const cpu = process.cpuUsage();
    const started = performance.now();
    try {
      return await asInvocation(() => glue.invoke(ctx, env, handler, ...args), invocation);
    } finally {
      await ctx.settled();
      // The process's CPU time over the invocation: Python's work and the JS it calls (D1
      // queries run in Miniflare's workerd process), plus anything else running meanwhile.
      const used = process.cpuUsage(cpu);
      invocationTimes.push({
        handler,
        cpu_ms: (used.user + used.system) / 1000,
        wall_ms: performance.now() - started,
      });
      if (invocationTimes.length > 1000) invocationTimes.shift();
    }
  }

  const invocationTimes = []; // the latest invocations' CPU and wall time, oldest first

  // A call into a Durable Object of the entry's ScheduleClock class, as its own invocation.
  const clocks = new ClockHost(async (invocation, name, method, args) => {
    const object = clocks.object(name);
    const ctx = new ExecutionContext();
    try {
      return await asInvocation(
        () => glue.clock_call(name, object.ctx, env, method, ...args),
        invocation,
      );
    } finally {
      await ctx.settled();
    }
  }, newInvocation);

  async function control(req, res, url, body) {
    const input = body.length ? JSON.parse(body.toString("utf8")) : {};
    switch (url.pathname) {
      case "/__harness/health":
        return json(res, 200, { ok: true });
      case "/__harness/scheduled": {
        // Like workerd's cron trigger: scheduled(controller, env, ctx) with the controller's
        // scheduledTime, answered when the handler (and its waitUntil promises) finished.
        const time = Number(url.searchParams.get("time") ?? Date.now());
        const cron = url.searchParams.get("cron") ?? CRON;
        await invoke("scheduled", new ScheduledController(time, cron));
        return json(res, 200, { outcome: "ok", scheduledTime: time, cron });
      }
      case "/__harness/sql": {
        // Assertions only: a single read-only statement through Miniflare's binding.
        if (!READ_ONLY.test(input.sql ?? "") || /;\s*\S/.test(input.sql)) {
          return json(res, 400, { error: "only one SELECT/WITH statement" });
        }
        const result = await db.prepare(input.sql).bind(...(input.params ?? [])).all();
        return json(res, 200, { results: result.results });
      }
      case "/__harness/exec": {
        // Test set-up only (seeding rows): statements run in one D1 batch.
        const statements = (input.statements ?? []).map(({ sql, params }) =>
          db.prepare(sql).bind(...(params ?? [])),
        );
        const results = await db.batch(statements);
        return json(res, 200, { changes: results.map((r) => r.meta.changes) });
      }
      case "/__harness/crypto/seal":
        return json(res, 200, {
          sealed: await glue.crypto_seal(input.key, input.plaintext, input.context),
        });
      case "/__harness/crypto/open": {
        return json(res, 200, await glue.crypto_open(input.key, input.sealed, input.context));
      }
      case "/__harness/crypto/sha256":
        return json(res, 200, { hex: await glue.crypto_sha256(input.key, input.value) });
      case "/__harness/crypto/hmac":
        return json(res, 200, {
          hex: await glue.crypto_hmac_sha256(input.key, input.hmac_key_hex, input.message_hex),
        });
      case "/__harness/vars": {
        // Replace the variables and secrets (not the D1 binding), as a redeploy with new
        // vars would; the entry notices through its env fingerprint.
        for (const name of Object.keys(env)) {
          if (![DB_BINDING, LIMITER_BINDING, CLOCK_BINDING].includes(name)) {
            delete env[name];
          }
        }
        Object.assign(env, input);
        return json(res, 200, { vars: Object.keys(input).sort() });
      }
      case "/__harness/ratelimit": {
        // `{"limit": N, "period": 60}` binds a fresh LAUNCH_LIMITER, `{"limit": null}` removes
        // it, `{"reset": true}` ends its window; `{}` only reads. Answers its calls so far.
        if (input.limit === null) delete env[LIMITER_BINDING];
        else if (input.limit !== undefined) {
          env[LIMITER_BINDING] = new Ratelimit(input.limit, input.period ?? 60);
        }
        const limiter = env[LIMITER_BINDING];
        if (input.reset) limiter?.endWindow();
        return json(res, 200, { bound: limiter !== undefined, calls: limiter?.calls ?? [] });
      }
      case "/__harness/clock": {
        // `{"bind": {settings}}` binds a fresh SCHEDULE_CLOCK namespace (its objects forgotten),
        // `{"bind": null}` removes it; `{"drop": [names]}` / `{"twice": [names]}` drop or
        // double each named object's next alarm; `{"tell": [installations]}` tells their
        // clocks as a create does; `{"wait": true}` answers once no alarm runs or is due;
        // `{}` only reads. Answers the objects, their alarms and every alarm() run.
        if (input.bind === null) {
          delete env[CLOCK_BINDING];
          clocks.reset();
          glue.clock_forget();
        } else if (input.bind !== undefined) {
          clocks.bind(input.bind);
          glue.clock_forget();
          env[CLOCK_BINDING] = new DurableObjectNamespace(clocks);
        }
        for (const fault of ["drop", "twice"]) {
          if (input[fault] !== undefined) clocks.settings[fault].push(...input[fault]);
        }
        if (input.tell !== undefined) {
          // What a create does after its write, for rows a test wrote straight into D1.
          await asInvocation(() => glue.clock_tell(env, JSON.stringify(input.tell)));
        }
        if (input.wait) await clocks.idle();
        return json(res, 200, { bound: env[CLOCK_BINDING] !== undefined, ...clocks.report() });
      }
      case "/__harness/limits": {
        // `{"d1": N, "subrequests": M}` (null: no limit) per invocation; `{}` only reads.
        for (const kind of ["d1", "subrequests"]) {
          if (input[kind] !== undefined) platformLimits[kind] = input[kind];
        }
        return json(res, 200, platformLimits);
      }
      case "/__harness/d1": {
        // One call of the Database port (scheduling.runtimes.workers.adapters) on the live binding.
        // The body goes to Python as text, so params are Python values, as the Worker binds them.
        // `"database": "contract"` runs it on the contract tests' database instead.
        const on = input.database === "contract" ? contractEnv : env;
        return jsonText(res, 200, await asInvocation(() => glue.d1(on, body.toString("utf8"))));
      }
      case "/__harness/send": {
        // WorkersFetch().send for every request at once, from one invocation.
        return jsonText(res, 200, await asInvocation(() => glue.send_all(body.toString("utf8"))));
      }
      case "/__harness/fetch-stats": {
        // The counters as they were; `{"reset": true}` then zeroes the totals and maxima.
        const answer = { ...fetchStats };
        if (input.reset) {
          const fresh = newFetchStats(options.maxConnections);
          for (const name of ["max_waiting_for_headers", "max_waiting_for_headers_total",
            "queued_total", "started_total", "aborted_while_queued_total"]) {
            fetchStats[name] = fresh[name];
          }
        }
        return json(res, 200, answer);
      }
      case "/__harness/invocations": {
        // The CPU and wall time of the invocations since the last reset; `{"reset": true}`
        // then forgets them. Meaningful for invocations made one at a time (benchmarks).
        const answer = [...invocationTimes];
        if (input.reset) invocationTimes.length = 0;
        return json(res, 200, { invocations: answer });
      }
      case "/__harness/info":
        return json(res, 200, glue.info(env));
      default:
        return json(res, 404, { error: `no harness route ${url.pathname}` });
    }
  }

  const server = http.createServer(async (req, res) => {
    try {
      const url = new URL(req.url ?? "/", "http://harness");
      if (url.pathname.startsWith("/__harness/")) {
        await control(req, res, url, await readBody(req));
        return;
      }
      let response;
      try {
        response = await invoke("fetch", toJsRequest(req, options.host));
      } catch (error) {
        // workerd answers an uncaught exception with a bare 500; mark it so tests can tell.
        log("fetch threw:", error?.message ?? error);
        res.writeHead(500, { "content-type": "text/plain", "x-harness-exception": "1" });
        res.end(`worker threw: ${error?.message ?? error}`);
        return;
      }
      if (!(response instanceof Response)) {
        throw new Error(`fetch returned ${Object.prototype.toString.call(response)}, not a Response`);
      }
      await writeResponse(res, response);
    } catch (error) {
      log("harness error:", error?.stack ?? error);
      if (!res.headersSent) {
        res.writeHead(500, { "content-type": "text/plain", "x-harness-exception": "1" });
      }
      res.end(`harness error: ${error?.message ?? error}`);
    }
  });

  await new Promise((resolve) => server.listen(options.port, options.host, resolve));
  const port = server.address().port;
  process.stdout.write(
    `${JSON.stringify({
      ready: true,
      port,
      pid: process.pid,
      pyodide: pyodide.version,
      max_connections: options.maxConnections,
      startup_ms: Date.now() - started,
    })}\n`,
  );

  const stop = async () => {
    server.close();
    await mf.dispose();
    process.exit(0);
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
  // The test session closes stdin when it is done; leave with it.
  process.stdin.on("end", stop);
  process.stdin.resume();
}

main().catch((error) => {
  log("failed to start:", error?.stack ?? error);
  process.exit(1);
});
