import { describe, expect, it } from "vitest";
import { FakeSocket } from "../testing/fakeSocket";
import { RemoteError, type WireError } from "../wire";
import { Connection, type IncomingRequest } from "./connection";
import { protocolVersion } from "./frames";

function connect() {
  const socket = new FakeSocket();
  const seen = { requests: [] as IncomingRequest[], cancels: [] as [string, string][], errors: [] as WireError[], closed: 0, welcome: [] as string[] };
  const connection = new Connection(socket, {
    welcome: (id) => seen.welcome.push(id),
    request: (r) => seen.requests.push(r),
    cancel: (session, id) => seen.cancels.push([session, id]),
    error: (e) => seen.errors.push(e),
    closed: () => seen.closed++,
  });
  return { socket, connection, seen };
}

describe("Connection", () => {
  it("opens the inbox feed, routes its summaries and ready to it, and close ends it", () => {
    const { socket, connection } = connect();
    socket.open();
    const got: unknown[] = [];
    const inbox = connection.inbox({ summary: (s) => got.push(["summary", s.map((x) => x.session)]), ready: () => got.push("ready"), closed: (e) => got.push(["closed", e?.code]) });
    expect(socket.take().slice(1)).toEqual([{ type: "inbox", id: "i1" }]);
    socket.deliver({ type: "summary", id: "i1", sessions: [{ session: "s1", active: [], settled: 0, lastSeq: 1 }] });
    socket.deliver({ type: "ready", id: "i1" });
    socket.deliver({ type: "ready", id: "w9", session: "s1" }); // a watch's, not the inbox's
    inbox.close();
    expect(socket.take()).toEqual([{ type: "close", id: "i1" }]);
    socket.deliver({ type: "summary", id: "i1", sessions: [] });
    expect(got).toEqual([["summary", ["s1"]], "ready"]);

    connection.inbox({ summary: () => {}, ready: () => {}, closed: (e) => got.push(["closed", e?.code]) });
    socket.deliver({ type: "error", id: "i2", code: "LIMIT_EXCEEDED", message: "too many" });
    expect(got.at(-1)).toEqual(["closed", "LIMIT_EXCEEDED"]);
  });

  it("sends hello first, then frames queued before the socket opened, in order", () => {
    const { socket, connection, seen } = connect();
    connection.watch("s1", 1, { events: () => {}, view: () => {} });
    expect(socket.sent).toEqual([]);
    socket.open();
    expect(socket.take()).toEqual([
      { type: "hello", protocol: 2, client: "holdover-web" },
      { type: "watch", id: "w1", session: "s1", fromSeq: 1 },
    ]);
    socket.deliver({ type: "welcome", protocol: 1, clientId: "k9" });
    expect(seen.welcome).toEqual(["k9"]);
  });

  it("sends the access token in hello, never in the socket's address", () => {
    const socket = new FakeSocket();
    new Connection(socket, { welcome: () => {}, request: () => {}, cancel: () => {}, error: () => {}, closed: () => {} }, "holdover-web", "t0k");
    socket.open();
    expect(socket.take()).toEqual([{ type: "hello", protocol: protocolVersion, client: "holdover-web", token: "t0k" }]);
  });

  it("routes a watch's events and views to it, and unwatch stops them", () => {
    const { socket, connection } = connect();
    socket.open();
    const got: unknown[] = [];
    const watch = connection.watch("s1", 5, { events: (e) => got.push(["events", e.length]), view: (v) => got.push(["view", v.lastSeq]) });
    socket.deliver({ type: "events", id: "w1", session: "s1", events: [{ seq: 5, type: "turn/start", at: "", data: { turn: "t" } }] });
    socket.deliver({ type: "view", id: "w1", session: "s1", view: { active: [], settled: [], timed: true, lastSeq: 5 } });
    watch.close();
    socket.deliver({ type: "view", id: "w1", session: "s1", view: { active: [], settled: [], timed: true, lastSeq: 6 } });
    expect(got).toEqual([["events", 1], ["view", 5]]);
    expect(socket.take().slice(-1)).toEqual([{ type: "unwatch", id: "w1" }]);
  });

  it("tells a watch when it is live, once its ready frame comes", () => {
    const { socket, connection } = connect();
    socket.open();
    const got: string[] = [];
    connection.watch("s1", 1, { events: () => got.push("events"), view: () => got.push("view"), ready: () => got.push("ready") });
    connection.watch("s2", 1, { events: () => {}, view: () => {}, ready: () => got.push("ready s2") });
    socket.deliver({ type: "view", id: "w1", session: "s1", view: null });
    socket.deliver({ type: "events", id: "w1", session: "s1", events: [] });
    socket.deliver({ type: "ready", id: "w1", session: "s1" });
    expect(got).toEqual(["view", "events", "ready"]);
  });

  it("turns a request frame into an answer channel whose outcomes go back as settle, reject and delegate", () => {
    const { socket, seen } = connect();
    socket.open();
    socket.take();
    socket.deliver({ type: "request", id: "r1", session: "s1", event: "user-questions/request", payload: { questions: [] } });
    socket.deliver({ type: "cancel", id: "r1", session: "s1" });
    const request = seen.requests[0];
    expect(request).toMatchObject({ session: "s1", requestId: "r1", event: "user-questions/request" });
    request?.channel.settle({ answers: [{ id: "q", selected: ["A"] }] });
    request?.channel.reject({ code: "ASK_TIMED_OUT", message: "late" });
    request?.channel.delegate();
    expect(socket.take()).toEqual([
      { type: "settle", id: "r1", value: { answers: [{ id: "q", selected: ["A"] }] } },
      { type: "reject", id: "r1", error: { code: "ASK_TIMED_OUT", message: "late" } },
      { type: "delegate", id: "r1" },
    ]);
    expect(seen.cancels).toEqual([["s1", "r1"]]);
  });

  it("answer calls userQuestions.answer and reads its result; an error frame rejects with the code", async () => {
    const { socket, connection } = connect();
    socket.open();
    socket.take();
    const ok = connection.answer("s1", "c1", [{ id: "q", selected: [] }]);
    const refused = connection.answer("s1", "c1", [{ id: "q", selected: [] }]);
    const [first, second] = socket.take() as { id: string }[];
    expect(first).toEqual({ type: "call", id: "c1", method: "userQuestions.answer", params: { session: "s1", callId: "c1", answers: [{ id: "q", selected: [] }] } });
    socket.deliver({ type: "error", id: second?.id, code: "REPLY_QUEUED", message: "a reply is queued" });
    socket.deliver({ type: "result", id: first?.id, result: { accepted: true, messageId: "m1" } });
    await expect(ok).resolves.toEqual({ accepted: true, messageId: "m1" });
    await expect(refused).rejects.toMatchObject({ code: "REPLY_QUEUED", message: "a reply is queued" });
  });

  it("answer reads the reason of a refused answer", async () => {
    const { socket, connection } = connect();
    socket.open();
    socket.take();
    const refused = connection.answer("s1", "c1", [{ id: "q", selected: [] }]);
    const [call] = socket.take() as { id: string }[];
    const reason = { code: "CALL_SETTLED", message: "call c1 takes no answer: it is answered already, in time; it takes no more answers" };
    socket.deliver({ type: "result", id: call?.id, result: { accepted: false, reason } });
    await expect(refused).resolves.toEqual({ accepted: false, reason });
  });

  it("discard calls session.discard with the Session and message; an error frame rejects with the code", async () => {
    const { socket, connection } = connect();
    socket.open();
    socket.take();
    const ok = connection.discard("s1", "m9");
    const late = connection.discard("s1", "m8");
    const [first, second] = socket.take() as { id: string }[];
    expect(first).toEqual({ type: "call", id: "c1", method: "session.discard", params: { session: "s1", messageId: "m9" } });
    socket.deliver({ type: "result", id: first?.id, result: {} });
    socket.deliver({ type: "error", id: second?.id, code: "CONFLICT", message: "no longer queued" });
    await expect(ok).resolves.toBeUndefined();
    await expect(late).rejects.toMatchObject({ code: "CONFLICT" });
  });

  it("view calls userQuestions.view and reads the View, a stored reply queued; null is an empty View, a malformed one BAD_RESPONSE", async () => {
    const { socket, connection } = connect();
    socket.open();
    socket.take();
    const shown = connection.view("s1");
    const none = connection.view("s2");
    const bad = connection.view("s3");
    const [first, second, third] = socket.take() as { id: string }[];
    expect(first).toEqual({ type: "call", id: "c1", method: "userQuestions.view", params: { session: "s1" } });
    const queued = { messageId: "reply-1", answers: [{ id: "q", selected: ["Yes"] }], seq: 7 };
    const call = { callId: "c1", status: "continued", questions: [{ id: "q", question: "Go?" }], seq: 3, queued, by: "ana" };
    socket.deliver({ type: "result", id: first?.id, result: { active: [call], settled: [], timed: true, lastSeq: 5 } });
    socket.deliver({ type: "result", id: second?.id, result: null });
    socket.deliver({ type: "result", id: third?.id, result: { active: "no" } });
    await expect(shown).resolves.toMatchObject({ active: [{ callId: "c1", status: "continued", queued }], lastSeq: 5 });
    await expect(none).resolves.toEqual({ active: [], settled: [], timed: false, lastSeq: 0 });
    await expect(bad).rejects.toMatchObject({ code: "BAD_RESPONSE" });
  });

  it("attachWait opens a stream: frames reach it, the gateway's close ends it, and close() sends close", () => {
    const { socket, connection } = connect();
    socket.open();
    socket.take();
    const got: unknown[] = [];
    const claim = connection.attachWait("s1", "c1", { frame: (d) => got.push(d), closed: (e) => got.push(["closed", e]) });
    const [open] = socket.take() as { id: string }[];
    expect(open).toEqual({ type: "open", id: "s1", method: "userQuestions.attachWait", params: { session: "s1", callId: "c1" } });
    socket.deliver({ type: "frame", id: open?.id, data: { remainingMs: 900 } });
    socket.deliver({ type: "close", id: open?.id, error: { code: "INTERNAL", message: "gone" } });
    claim.close();
    expect(got).toEqual([{ remainingMs: 900 }, ["closed", { code: "INTERNAL", message: "gone" }]]);
    expect(socket.take()).toEqual([]);

    const second = connection.attachWait("s1", "c2", { frame: () => {}, closed: () => {} });
    second.close();
    expect(socket.take()).toEqual([expect.objectContaining({ type: "open" }), expect.objectContaining({ type: "close" })]);
  });

  it("handles the frames of a batched message in order; a malformed one costs the others nothing", () => {
    const { socket, connection, seen } = connect();
    socket.open();
    const got: string[] = [];
    connection.watch("s1", 1, { events: () => got.push("events"), view: () => got.push("view"), ready: () => got.push("ready") });
    socket.deliver([
      { type: "view", id: "w1", session: "s1", view: null },
      { type: "request", session: "s1", event: "user-questions/request" },
      { type: "presence", who: "x" },
      { type: "events", id: "w1", session: "s1", events: [] },
      { type: "ready", id: "w1", session: "s1" },
    ]);
    expect(got).toEqual(["view", "events", "ready"]);
    expect(seen.errors).toEqual([{ code: "BAD_FRAME", message: "frame field id must be a non-empty string" }]);
  });

  it("a malformed frame or an error naming nothing goes to the error handler", () => {
    const { socket, seen } = connect();
    socket.open();
    socket.deliver("{not json");
    socket.deliver({ type: "error", code: "UNAUTHORIZED", message: "bad token" });
    expect(seen.errors).toEqual([{ code: "BAD_FRAME", message: "frame is not JSON" }, { code: "UNAUTHORIZED", message: "bad token" }]);
  });

  it("a closed socket rejects pending and later calls with UNAVAILABLE and runs closed once", async () => {
    const { socket, connection, seen } = connect();
    socket.open();
    const pending = connection.call("sessions.list", {});
    socket.drop();
    await expect(pending).rejects.toBeInstanceOf(RemoteError);
    await expect(connection.call("x.y", {})).rejects.toMatchObject({ code: "UNAVAILABLE" });
    let closedError: WireError | undefined;
    connection.attachWait("s1", "c1", { frame: () => {}, closed: (e) => (closedError = e) });
    expect(closedError?.code).toBe("UNAVAILABLE");
    expect(seen.closed).toBe(1);
  });
});
