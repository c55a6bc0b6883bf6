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
import { mkdir, rm, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
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
  for (const [name, svg] of icons()) await writeFile(join(outdir, name), svg);
}

/**
 * The favicons: icon.svg, and one with a badge for each count the page
 * shows (icon-1.svg … icon-9.svg, icon-9plus.svg). Files of the page's own
 * origin, so the favicon needs no data: or blob: address.
 */
function icons() {
  const base = (badge) =>
    `<svg xmlns="http://www.w3.org/2000/svg" width="32" height="32" viewBox="0 0 32 32">` +
    `<rect x="1" y="3" width="26" height="22" rx="5" fill="#2563d9"/>` +
    `<path d="M8 25 L8 31 L15 25 Z" fill="#2563d9"/>` +
    `<text x="14" y="20" text-anchor="middle" font-family="sans-serif" font-size="16" font-weight="700" fill="#fff">?</text>` +
    (badge === undefined
      ? ""
      : `<circle cx="23" cy="9" r="9" fill="#c62828"/>` +
        `<text x="23" y="13.5" text-anchor="middle" font-family="sans-serif" font-size="${badge.length > 1 ? 9 : 13}" font-weight="700" fill="#fff">${badge}</text>`) +
    `</svg>\n`;
  const out = [["icon.svg", base(undefined)]];
  for (let n = 1; n <= 9; n++) out.push([`icon-${n}.svg`, base(String(n))]);
  out.push(["icon-9plus.svg", base("9+")]);
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await buildClient(resolve(root, process.argv[2] ?? "dist"));
}
