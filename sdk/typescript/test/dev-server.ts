// Vitest global setup: builds cmd/holdover and runs `holdover dev --no-demo`
// on ephemeral ports with its data in a temporary folder, authentication
// on as always, and hands the tests its NATS URL, the folder of the
// credentials it wrote, one file per role, and the binary (for tests that
// run its other commands). Teardown stops it with SIGTERM (a clean stop) and
// removes the folder.

import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { TestProject } from "vitest/node";

declare module "vitest" {
  export interface ProvidedContext {
    natsURL: string;
    credsDir: string;
    holdoverBin: string;
  }
}

const repo = resolve(import.meta.dirname, "..", "..", "..");

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const dir = mkdtempSync(join(tmpdir(), "holdover-sdk-"));
  const bin = join(dir, "holdover");
  execFileSync("go", ["build", "-o", bin, "./cmd/holdover"], { cwd: repo, stdio: ["ignore", "inherit", "inherit"] });
  const proc = spawn(bin, ["dev", "--no-demo", "--data", join(dir, "data"), "--nats-port", "0", "--listen", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0", "--log-level", "warn"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  proc.stderr!.on("data", (b: Buffer) => (log += b.toString()));
  const url = await new Promise<string>((ok, fail) => {
    let out = "";
    const timer = setTimeout(() => fail(new Error(`holdover dev did not start in 60 s:\n${out}\n${log}`)), 60_000);
    proc.stdout!.on("data", (b: Buffer) => {
      out += b.toString();
      const m = /NATS\s+(nats:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        ok(m[1]!);
      }
    });
    proc.on("exit", (code) => fail(new Error(`holdover dev exited ${code}:\n${out}\n${log}`)));
  });
  project.provide("natsURL", url);
  project.provide("credsDir", join(dir, "data", "auth", "tenants", "default"));
  project.provide("holdoverBin", bin);
  return async () => {
    await stop(proc);
    rmSync(dir, { recursive: true, force: true });
  };
}

function stop(proc: ChildProcess): Promise<void> {
  return new Promise((done) => {
    if (proc.exitCode !== null) return done();
    proc.once("exit", () => done());
    proc.kill("SIGTERM");
    setTimeout(() => proc.kill("SIGKILL"), 10_000).unref();
  });
}
