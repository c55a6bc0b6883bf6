import { describe, expect, it } from "vitest";
import { messageFrames, readServerFrame, ProtocolError } from "./frames";

/** One frame's text as the Connection reads it. */
const parseServerFrame = (text: string) => readServerFrame(messageFrames(text)[0]);

const question = { id: "q1", question: "Which?", options: [{ label: "A" }] };

describe("parseServerFrame", () => {
  it("reads every frame type of the protocol", () => {
    expect(parseServerFrame('{"type":"welcome","protocol":1,"clientId":"k1"}')).toEqual({ type: "welcome", protocol: 1, clientId: "k1" });
    expect(parseServerFrame(JSON.stringify({ type: "events", id: "w1", session: "s1", events: [{ seq: 3, type: "tool/call", at: "2026-01-01T00:00:00Z", data: { callId: "c1" } }] }))).toEqual({
      type: "events",
      id: "w1",
      session: "s1",
      events: [{ seq: 3, type: "tool/call", at: "2026-01-01T00:00:00Z", data: { callId: "c1" } }],
    });
    expect(parseServerFrame(JSON.stringify({ type: "request", id: "r1", session: "s1", event: "user-questions/request", payload: { questions: [question] } }))).toMatchObject({ type: "request", payload: { questions: [question] } });
    expect(parseServerFrame('{"type":"cancel","id":"r1","session":"s1","reason":"expired"}')).toEqual({ type: "cancel", id: "r1", session: "s1", reason: "expired" });
    expect(parseServerFrame('{"type":"frame","id":"s2","data":{"remainingMs":1500}}')).toEqual({ type: "frame", id: "s2", data: { remainingMs: 1500 } });
    expect(parseServerFrame('{"type":"close","id":"s2"}')).toEqual({ type: "close", id: "s2" });
    expect(parseServerFrame('{"type":"result","id":"c3","result":{"accepted":true}}')).toEqual({ type: "result", id: "c3", result: { accepted: true } });
    expect(parseServerFrame('{"type":"error","code":"UNAUTHORIZED","message":"bad token"}')).toEqual({ type: "error", code: "UNAUTHORIZED", message: "bad token" });
    expect(parseServerFrame('{"type":"ready","id":"w1","session":"s1"}')).toEqual({ type: "ready", id: "w1", session: "s1" });
  });

  it("reads a null view, a Session without a projection entry, as one with no questions", () => {
    expect(parseServerFrame('{"type":"view","id":"w1","session":"s1","view":null}')).toEqual({
      type: "view",
      id: "w1",
      session: "s1",
      view: { active: [], settled: [], timed: false, lastSeq: 0 },
    });
  });

  it("reads a projection view as Go writes it, nil slices included", () => {
    const frame = parseServerFrame(
      JSON.stringify({
        type: "view",
        id: "w1",
        session: "s1",
        view: {
          active: [{ callId: "c1", status: "continued", questions: [question], queued: { messageId: "m1", answers: [{ id: "q1", selected: ["A"] }], seq: 8 }, seq: 2 }],
          settled: [{ callId: "c0", questions: [question], answers: null, late: true, seq: 5 }],
          timed: true,
          lastSeq: 9,
        },
      }),
    );
    expect(frame).toEqual({
      type: "view",
      id: "w1",
      session: "s1",
      view: {
        active: [{ callId: "c1", status: "continued", questions: [question], queued: { messageId: "m1", answers: [{ id: "q1", selected: ["A"] }], seq: 8 }, seq: 2 }],
        settled: [{ callId: "c0", questions: [question], answers: [], late: true, seq: 5 }],
        timed: true,
        lastSeq: 9,
      },
    });
    expect(parseServerFrame('{"type":"view","id":"w1","session":"s1","view":{"active":null,"settled":null,"timed":false,"lastSeq":0}}')).toMatchObject({ view: { active: [], settled: [] } });
  });

  it("passes over frame types it does not know", () => {
    expect(parseServerFrame('{"type":"presence","who":"x"}')).toBeUndefined();
  });

  it.each([
    ["not JSON", "{"],
    ["no type", "{}"],
    ["a list", "[]"],
    ["request without id", '{"type":"request","session":"s1","event":"e"}'],
    ["ready with an empty session", '{"type":"ready","id":"w1","session":""}'],
    ["summary with a malformed call", '{"type":"summary","id":"i1","sessions":[{"session":"s","active":[{"callId":"c","status":"weird","questions":[],"seq":1}]}]}'],
    ["view with an unknown status", '{"type":"view","id":"w","session":"s","view":{"active":[{"callId":"c","status":"weird","questions":[],"seq":1}],"settled":[],"lastSeq":1}}'],
    ["view with a malformed question", '{"type":"view","id":"w","session":"s","view":{"active":[{"callId":"c","status":"open","questions":[{"id":3}],"seq":1}],"settled":[],"lastSeq":1}}'],
    ["error without code", '{"type":"error","message":"x"}'],
  ])("rejects a malformed frame: %s", (_, text) => {
    expect(() => parseServerFrame(text)).toThrow(ProtocolError);
  });

  it("never fails on garbage with anything but a ProtocolError", () => {
    // A seeded generator of JSON-ish noise built from frame fragments.
    let seed = 42;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
    const pieces = ['{"type":', '"view"', '"request"', '"close"', '"error"', ',"id":', '"x"', "1", "null", '"view":{', '"active":[', "]", "}", '"status":"open"', ",", '"'];
    for (let i = 0; i < 5000; i++) {
      let text = "";
      const n = next() % 12;
      for (let j = 0; j < n; j++) text += pieces[next() % pieces.length];
      try {
        parseServerFrame(text);
      } catch (err) {
        expect(err).toBeInstanceOf(ProtocolError);
      }
    }
  });
});

describe("the inbox frames", () => {
  it("reads summaries with their deadlines, and a ready without a session", () => {
    const f = parseServerFrame(
      '{"type":"summary","id":"i1","sessions":[{"session":"s1","active":[{"callId":"c1","status":"open","questions":[{"id":"db","question":"Which?"}],"seq":3}],"settled":2,"lastSeq":9,"deadlines":{"c1":"2026-12-02T15:20:29.5Z","bad":"x"}}]}',
    );
    expect(f).toEqual({
      type: "summary",
      id: "i1",
      sessions: [{ session: "s1", active: [{ callId: "c1", status: "open", questions: [{ id: "db", question: "Which?" }], seq: 3 }], settled: 2, lastSeq: 9, deadlines: { c1: Date.parse("2026-12-02T15:20:29.5Z") } }],
    });
    expect(parseServerFrame('{"type":"ready","id":"i1"}')).toEqual({ type: "ready", id: "i1" });
  });
});

describe("messageFrames", () => {
  it("reads one frame, or from protocol 2 on the frames of a batch in order", () => {
    expect(messageFrames('{"type":"ready","id":"w1","session":"s1"}')).toEqual([{ type: "ready", id: "w1", session: "s1" }]);
    const batch = messageFrames('[{"type":"view","id":"w1","session":"s1","view":null},{"type":"ready","id":"w1","session":"s1"}]');
    expect(batch.map(readServerFrame).map((f) => f?.type)).toEqual(["view", "ready"]);
  });

  it("refuses an empty batch, and a batch inside a batch is a malformed frame", () => {
    expect(() => messageFrames("[]")).toThrow(ProtocolError);
    const [nested] = messageFrames('[[{"type":"ready","id":"w1","session":"s1"}]]');
    expect(() => readServerFrame(nested)).toThrow(ProtocolError);
  });
});
