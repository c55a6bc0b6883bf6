import { describe, expect, it } from "vitest";
import { MemoryStorage } from "../testing/memoryStorage";
import { alertText, Attention, iconFor, loadSettings, saveSettings, titleFor, type Waiting } from "./attention";

const w = (key: string, deadline?: number): Waiting => ({ key, session: "s1", callId: key, question: `Q ${key}?`, deadline });
const nowhere = () => false;

describe("Attention (issue 13 item 2)", () => {
  it("what waits at the first look raises nothing; a question that arrives later does, once", () => {
    const a = new Attention();
    expect(a.update([w("a")], 0, nowhere)).toEqual([]);
    expect(a.update([w("a"), w("b")], 0, nowhere)).toEqual([{ kind: "arrived", item: w("b") }]);
    expect(a.update([w("a"), w("b")], 0, nowhere)).toEqual([]);
  });

  it("a question already on screen raises nothing", () => {
    const a = new Attention();
    a.update([], 0, nowhere);
    expect(a.update([w("a", 60_000)], 0, () => true)).toEqual([]);
    expect(a.update([w("a", 60_000)], 55_000, () => true)).toEqual([]);
  });

  it("a live wait about to end raises one alert in its last ten seconds, none after it passed", () => {
    const a = new Attention();
    a.update([w("a", 30_000), w("b", 1_000)], 5_000, nowhere); // b already passed
    expect(a.update([w("a", 30_000)], 19_000, nowhere)).toEqual([]);
    expect(a.update([w("a", 30_000)], 20_000, nowhere)).toEqual([{ kind: "ending", item: w("a", 30_000) }]);
    expect(a.update([w("a", 30_000)], 25_000, nowhere)).toEqual([]);
  });

  it("a question that left and comes back is new again", () => {
    const a = new Attention();
    a.update([w("a")], 0, nowhere);
    a.update([], 0, nowhere);
    expect(a.update([w("a")], 0, nowhere)).toHaveLength(1);
  });

  it("title, favicon and notification text carry the count and the question", () => {
    expect([titleFor(0), titleFor(3)]).toEqual(["Holdover", "(3) Holdover"]);
    expect([iconFor(0), iconFor(1), iconFor(9), iconFor(12)]).toEqual(["icon.svg", "icon-1.svg", "icon-9.svg", "icon-9plus.svg"]);
    expect(alertText({ kind: "arrived", item: w("a") })).toEqual({ title: "Question from s1", body: "Q a?" });
    expect(alertText({ kind: "ending", item: w("a") }).title).toBe("Answer soon: s1 moves on");
  });

  it("settings are off until chosen, and kept", () => {
    const storage = new MemoryStorage();
    expect(loadSettings(storage)).toEqual({ notify: false, sound: false });
    saveSettings(storage, { notify: true, sound: false });
    expect(loadSettings(storage)).toEqual({ notify: true, sound: false });
    storage.setItem("holdover.attention.v1", "not json");
    expect(loadSettings(storage)).toEqual({ notify: false, sound: false });
  });
});
