#!/usr/bin/env node
// Imports one module of the Worker in a fresh Pyodide, as workerd does before it takes the
// memory snapshot, and prints one JSON line: the import's wall and CPU time and, with
// --draws, every random draw it made (startup_probe.py says which are allowed).
//
// --preload imports modules first, outside the figures (workerd's own imports before the
// Worker's top level); --wheels adds a dir of wheels (the benchmark's FastAPI example).
//
//   node startup.mjs --module entry [--draws] [--src DIR] [--preload a,b] [--wheels DIR]

import nodeCrypto from "node:crypto";

import { SRC, loadWorkerPython } from "./worker_python.mjs";

function parseArgs(argv) {
  const options = { module: "entry", draws: false, src: SRC, preload: "", wheels: [] };
  for (let i = 0; i < argv.length; i += 1) {
    if (argv[i] === "--draws") options.draws = true;
    else if (argv[i] === "--module") options.module = argv[++i];
    else if (argv[i] === "--src") options.src = argv[++i];
    else if (argv[i] === "--preload") options.preload = argv[++i];
    else if (argv[i] === "--wheels") options.wheels.push(argv[++i]);
    else throw new Error(`unknown option ${argv[i]}`);
  }
  return options;
}

const options = parseArgs(process.argv.slice(2));
// Emscripten draws every random byte Python asks for (getentropy, /dev/urandom) through
// node:crypto's randomFillSync, looked up at each call: count the calls.
let entropyCalls = 0;
const randomFillSync = nodeCrypto.randomFillSync;
nodeCrypto.randomFillSync = function counted(...args) {
  entropyCalls += 1;
  return randomFillSync.apply(this, args);
};

const pyodide = await loadWorkerPython({ src: options.src, extraWheels: options.wheels });
pyodide.registerJsModule("_harness_probe", {
  draws: () => entropyCalls,
  cpu_ms: () => {
    const { user, system } = process.cpuUsage();
    return (user + system) / 1000;
  },
});
const probe = pyodide.pyimport("startup_probe");
probe.preload(options.preload);
const cpuBefore = process.cpuUsage();
const report = JSON.parse(probe.probe(options.module, options.draws));
const cpu = process.cpuUsage(cpuBefore);
report.import_cpu_ms = Math.round((cpu.user + cpu.system) / 100) / 10;
process.stdout.write(`${JSON.stringify(report)}\n`);
