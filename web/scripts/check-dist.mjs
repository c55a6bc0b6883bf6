// Rebuilds the Client into a temporary folder and fails when the result
// differs from the committed dist/ — a changed source whose bundle was not
// rebuilt and committed, or a hand-edited bundle. CI runs it after npm ci.

import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { buildClient } from "./build.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const committed = join(root, "dist");

async function files(dir) {
  const out = new Map();
  async function walk(d) {
    let entries;
    try {
      entries = await readdir(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const p = join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else out.set(relative(dir, p), await readFile(p));
    }
  }
  await walk(dir);
  return out;
}

const scratch = await mkdtemp(join(tmpdir(), "holdover-web-dist-"));
try {
  await buildClient(scratch);
  const want = await files(scratch);
  const have = await files(committed);
  const problems = [];
  for (const [name, bytes] of want) {
    if (!have.has(name)) problems.push(`dist/${name} is missing`);
    else if (!have.get(name).equals(bytes)) problems.push(`dist/${name} differs from a fresh build`);
  }
  for (const name of have.keys()) if (!want.has(name)) problems.push(`dist/${name} is not produced by the build`);
  if (problems.length > 0) {
    console.error(problems.join("\n"));
    console.error("web/dist is out of date: run `npm run build` in web/ and commit web/dist.");
    process.exitCode = 1;
  } else {
    console.log(`web/dist matches a fresh build (${want.size} files).`);
  }
} finally {
  await rm(scratch, { recursive: true, force: true });
}
