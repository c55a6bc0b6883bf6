import { describe, expect, it } from "vitest";
import { ManualClock } from "../testing/manualClock";
import { MemoryStorage } from "../testing/memoryStorage";
import { callDraftKey, DraftStore } from "./drafts";

const day = 24 * 60 * 60 * 1000;

function store(storage: MemoryStorage, clock = new ManualClock(), loadId = "load-1", maxAgeMs?: number) {
  return new DraftStore(storage, maxAgeMs === undefined ? { clock, loadId } : { clock, loadId, maxAgeMs });
}

const answers = { q1: { selected: ["Yes"], custom: "" }, q2: { selected: [], custom: "later" } };

describe("DraftStore (P2, C2, C5)", () => {
  it("P2: restores a saved draft with its disposition after a reload", () => {
    const storage = new MemoryStorage();
    const clock = new ManualClock();
    const key = callDraftKey("s1", "call-1");
    store(storage, clock).save(key, { answers, page: 1, disposition: "edited" });

    const reloaded = store(storage, clock, "load-2");
    expect(reloaded.load(key)).toEqual({ answers, page: 1, disposition: "edited", savedAt: clock.now() });
  });

  it("keys drafts by Session and callId, so equal call ids of two Sessions do not meet", () => {
    const storage = new MemoryStorage();
    const drafts = store(storage);
    drafts.save(callDraftKey("s1", "c"), { answers, page: 0, disposition: "held" });
    expect(drafts.load(callDraftKey("s2", "c"))).toBeUndefined();
    expect(callDraftKey("a/b", "c")).not.toBe(callDraftKey("a", "b/c"));
  });

  it("C2: an unkeyed request's draft is never restored after a reload, and prune removes it", () => {
    const storage = new MemoryStorage();
    const clock = new ManualClock();
    const first = store(storage, clock, "load-1");
    const key = first.requestKey();
    first.save(key, { answers, page: 0, disposition: "edited" });
    expect(first.load(key)).toBeDefined();
    expect(first.requestKey()).not.toBe(key);

    const second = store(storage, clock, "load-2");
    // A new load hands out keys that cannot name the old draft…
    expect(second.requestKey()).not.toBe(key);
    // …and even asked for it directly, it refuses to restore it.
    expect(second.load(key)).toBeUndefined();
    expect(storage.getItem(key)).toBeNull();

    first.save(key, { answers, page: 0 });
    expect(second.prune()).toBe(1);
    expect(storage.keys()).toEqual([]);
  });

  it("prunes drafts older than the maximum age, keeps fresh ones, and ignores other keys", () => {
    const storage = new MemoryStorage();
    const clock = new ManualClock();
    const drafts = store(storage, clock, "load-1", 7 * day);
    drafts.save(callDraftKey("s", "old"), { answers, page: 0, disposition: "held" });
    clock.advance(6 * day);
    drafts.save(callDraftKey("s", "fresh"), { answers, page: 0, disposition: "held" });
    storage.setItem("someone-else", "x");
    clock.advance(2 * day);

    expect(drafts.prune()).toBe(1);
    expect(drafts.load(callDraftKey("s", "old"))).toBeUndefined();
    expect(drafts.load(callDraftKey("s", "fresh"))).toBeDefined();
    expect(storage.getItem("someone-else")).toBe("x");
  });

  it("an expired draft is not restored even before a prune", () => {
    const storage = new MemoryStorage();
    const clock = new ManualClock();
    const drafts = store(storage, clock, "load-1", day);
    const key = callDraftKey("s", "c");
    drafts.save(key, { answers, page: 0, disposition: "edited" });
    clock.advance(day + 1);
    expect(drafts.load(key)).toBeUndefined();
    expect(storage.getItem(key)).toBeNull();
  });

  it.each([
    ["not JSON", "{"],
    ["no answers", JSON.stringify({ page: 0, savedAt: 1 })],
    ["bad disposition", JSON.stringify({ answers: {}, page: 0, savedAt: 1, disposition: "maybe" })],
    ["bad answer", JSON.stringify({ answers: { q: { selected: "Yes", custom: "" } }, page: 0, savedAt: 1 })],
  ])("drops an unreadable draft (%s) instead of restoring it", (_, raw) => {
    const storage = new MemoryStorage();
    const clock = new ManualClock(10);
    const key = callDraftKey("s", "c");
    storage.setItem(key, raw);
    expect(store(storage, clock).load(key)).toBeUndefined();
    expect(storage.getItem(key)).toBeNull();
  });

  it("a failing storage loses only the draft", () => {
    const storage = new MemoryStorage();
    storage.failWrites = true;
    const drafts = store(storage);
    expect(() => drafts.save(callDraftKey("s", "c"), { answers, page: 0 })).not.toThrow();
    expect(drafts.load(callDraftKey("s", "c"))).toBeUndefined();
    expect(new DraftStore(undefined, { clock: new ManualClock() }).load("k")).toBeUndefined();
  });

  it("remove clears the draft", () => {
    const storage = new MemoryStorage();
    const drafts = store(storage);
    const key = callDraftKey("s", "c");
    drafts.save(key, { answers, page: 0, disposition: "held" });
    drafts.remove(key);
    expect(storage.length).toBe(0);
  });
});
