// Pyodide as workerd gives it to a Python Worker: the pinned packages in site-packages,
// `src/` on sys.path, and the two modules workerd injects for the SDK. Shared by serve.mjs
// (the harness) and startup.mjs (the import probe and the startup benchmark).

import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { loadPyodide } from "pyodide";

export const HERE = path.dirname(fileURLToPath(import.meta.url));
export const ROOT = path.resolve(HERE, "..", "..");
export const PACKAGES = path.join(HERE, ".cache", "packages");
export const SRC = path.join(ROOT, "src");

// `_cloudflare_compat_flags` answers true for these (both enabled for python_workers
// before wrangler.example.jsonc's compatibility date), false for anything else.
export const DEFAULT_COMPAT_FLAGS = [
  "python_request_headers_preserve_commas",
  "python_workflows_implicit_dependencies",
];

// Loads Pyodide and prepares it; nothing of the Worker is imported yet. `jsglobals` is what
// Python's `import js` sees (serve.mjs limits its fetch); `env` is what the SDK's
// `cloudflareWorkersModule` hands over.
export async function loadWorkerPython({
  packages = PACKAGES,
  extraWheels = [],
  src = SRC,
  env = {},
  compatFlags = DEFAULT_COMPAT_FLAGS,
  jsglobals = globalThis,
  stdout = (line) => process.stderr.write(`[worker] ${line}\n`),
  stderr = (line) => process.stderr.write(`[worker] ${line}\n`),
} = {}) {
  const pyodide = await loadPyodide({ jsglobals, stdout, stderr });
  const wheelsDir = path.join(packages, "wheels");
  if (!fs.existsSync(wheelsDir)) {
    throw new Error(`no packages in ${packages}: run tests/pyodide_harness/setup.sh`);
  }
  // `extraWheels`: more wheel dirs, for a program other than the Worker (the benchmark's
  // FastAPI example); a wheel there replaces none of the Worker's.
  for (const dir of [wheelsDir, ...extraWheels]) {
    for (const name of fs.readdirSync(dir).sort()) {
      if (name.endsWith(".whl")) {
        pyodide.unpackArchive(new Uint8Array(fs.readFileSync(path.join(dir, name))), "wheel");
      }
    }
  }
  const mount = (hostDir, at) => {
    pyodide.FS.mkdirTree(at);
    pyodide.FS.mount(pyodide.FS.filesystems.NODEFS, { root: hostDir }, at);
  };
  mount(packages, "/harness/packages"); // markupsafe from its sdist lives here
  mount(src, "/worker/src");
  mount(HERE, "/harness/glue");

  // What workerd injects for the SDK.
  pyodide.registerJsModule("_pyodide_entrypoint_helper", {
    patchWaitUntil() {},
    cloudflareWorkersModule: { env, waitUntil: () => {} },
    cloudflareSocketsModule: {},
    doAnImport: (name) => import(name),
  });
  const enabled = new Set(compatFlags);
  pyodide.registerJsModule(
    "_cloudflare_compat_flags",
    new Proxy({}, { get: (_target, name) => enabled.has(name) }),
  );

  pyodide.runPython(`
import sys
sys.path[:0] = ["/worker/src", "/harness/packages", "/harness/glue"]
sys.dont_write_bytecode = True
`);
  return pyodide;
}
