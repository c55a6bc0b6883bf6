// The event encoding: a request/header whose tools are fixed schemas is
// the same bytes as one whose tools are encoded with it.

import { describe, expect, it } from "vitest";
import { AskUserQuestion } from "../src/asktool.js";
import { encodeEvent, fixedSchema } from "../src/sessionlog.js";
import type { ToolSchema } from "../src/generated/events.js";

describe("encodeEvent", () => {
  it("encodes a request/header with fixed tool schemas as one without", () => {
    const plain: ToolSchema[] = [new AskUserQuestion({} as never, { mode: "timed" }).schema(), { name: "other", description: "d", inputSchema: { type: "object" } }];
    const fixed = plain.map((t) => fixedSchema(structuredClone(t)));
    const at = new Date();
    const text = (b: Uint8Array) => new TextDecoder().decode(b);
    for (const data of [{ turn: "turn-1", model: "m" }, { model: "m" }, {}]) {
      for (const n of [1, 2]) {
        const want = text(encodeEvent("request/header", { ...data, tools: plain.slice(0, n) }, at));
        expect(text(encodeEvent("request/header", { ...data, tools: fixed.slice(0, n) }, at))).toBe(want);
        expect(JSON.parse(want)).toEqual({ type: "request/header", at: at.toISOString(), data: { ...data, tools: plain.slice(0, n) } });
      }
    }
    expect(Object.isFrozen(fixed[0]!.inputSchema)).toBe(true);
  });
});
