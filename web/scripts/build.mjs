// Builds the Client into dist/: src/main.ts bundled as app.js and
// src/app.css minified as app.css. The page itself, static/index.html,
// needs no build and is not copied: the web package serves it from where
// it is written (embed.go). The output is a pure
// function of the sources and the locked esbuild version — no timestamps,
// no absolute paths, no source maps — so CI can rebuild it and compare
// (scripts/check-dist.mjs).
//
// Usage: node scripts/build.mjs [outdir]   (default: dist)

import { build } from "esbuild";
import { mkdir, rm } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** Builds the Client into outdir, replacing whatever was there. */
export async function buildClient(outdir) {
  await rm(outdir, { recursive: true, force: true });
  await mkdir(outdir, { recursive: true });
  await build({
    absWorkingDir: root,
    entryPoints: [
      { in: "src/main.ts", out: "app" },
      { in: "src/app.css", out: "app" },
    ],
    outdir,
    bundle: true,
    format: "esm",
    platform: "browser",
    target: ["es2020"],
    minify: true,
    sourcemap: false,
    legalComments: "none",
    charset: "utf8",
    logLevel: "warning",
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await buildClient(resolve(root, process.argv[2] ?? "dist"));
}
