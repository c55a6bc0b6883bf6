// The origin rule (src/origin.ts) gives Go's verdict (auth.CheckOrigin) on
// every case the Go side wrote: the same table, the same rule.

import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { checkOrigin, subjectMatches } from "../src/origin.js";

const cases = JSON.parse(readFileSync(new URL("./origin-cases.json", import.meta.url), "utf8")) as Array<{ subject: string; reply: string; serve: boolean }>;

describe("the origin of a request", () => {
  it("is judged as Go judges it, on every case auth's test wrote", () => {
    expect(cases.length).toBeGreaterThan(50);
    for (const c of cases) {
      expect(checkOrigin(c.subject, c.reply) === undefined, `${c.subject} replying to ${JSON.stringify(c.reply)}`).toBe(c.serve);
    }
  });

  it("matches subjects token by token, as NATS does", () => {
    expect(subjectMatches("holdover.session.*.discard", "holdover.session.s1.discard")).toBe(true);
    expect(subjectMatches("holdover.session.*.discard", "holdover.session.s1.x.discard")).toBe(false);
    expect(subjectMatches("holdover.>", "holdover")).toBe(false);
    expect(subjectMatches("holdover.>", "holdover.a.b")).toBe(true);
    expect(subjectMatches("holdover.q", "holdover.q.answer")).toBe(false);
  });
});
