import { describe, expect, it } from "vitest";
import { call, view } from "../testing/questionHarness";
import { cardHash, cardHref, parseRoute, reconnectDelayMs, sessionHref, sessionsFromQuery, socketURL, takeToken } from "./boot";
import { SessionDirectory, summaryFacts } from "./sessions";
import { emptyView } from "../protocol/frames";

describe("boot", () => {
  it("connects to ws(s)://<host>/ws?token=…", () => {
    expect(socketURL({ protocol: "https:", host: "example.test:8443" }, "a b&c")).toBe("wss://example.test:8443/ws?token=a%20b%26c");
    expect(socketURL({ protocol: "http:", host: "localhost:7070" }, "t")).toBe("ws://localhost:7070/ws?token=t");
  });

  it("reads the Sessions to watch from the query, each once", () => {
    expect(sessionsFromQuery("?session=s1,s2&session=s2&session=%20s3%20&session=")).toEqual(["s1", "s2", "s3"]);
    expect(sessionsFromQuery("")).toEqual([]);
  });

  it("takes the token out of the address", () => {
    expect(takeToken("http://h/?session=s1&token=secret#x")).toEqual({ token: "secret", cleaned: "http://h/?session=s1#x" });
    expect(takeToken("http://h/").token).toBeUndefined();
  });

  it("routes #/s/<id> to a transcript and #/ to the list; one watched Session opens by default", () => {
    expect(parseRoute(sessionHref("s 1/x"), ["a", "b"])).toEqual({ page: "session", session: "s 1/x" });
    expect(parseRoute("#/", ["a"])).toEqual({ page: "list" });
    expect(parseRoute("", ["a"])).toEqual({ page: "session", session: "a" });
    expect(parseRoute("", ["a", "b"])).toEqual({ page: "list" });
    expect(parseRoute("#/s/%E0%A4%A", ["a"])).toEqual({ page: "list" });
    expect(parseRoute(cardHash("s 1/x", "call/1"), [])).toEqual({ page: "session", session: "s 1/x", call: "call/1" });
    expect(cardHref("s1", "c1")).toBe("?session=s1#/s/s1/c/c1");
  });

  it("backs off reconnects from 1 s to at most 30 s", () => {
    expect([1, 2, 3, 6, 20].map(reconnectDelayMs)).toEqual([1000, 2000, 4000, 30_000, 30_000]);
  });
});

describe("SessionDirectory", () => {
  it("summarises the watch data and resumes after the last event", () => {
    const d = new SessionDirectory(["s1", "s2"]);
    const ev = (seq: number) => ({ seq, type: "turn/start", at: "", data: {} });
    d.addEvents("s1", [ev(1), ev(2), ev(3)]);
    d.addEvents("s1", [ev(3), ev(4)]);
    d.addEvents("elsewhere", [ev(1)]);
    d.setView("s1", view([call("a", "open"), call("b", "continued", { queued: { messageId: "m", answers: [], seq: 4 } }), call("c", "continued")], 4, [{ callId: "z", questions: [], answers: [], late: true, seq: 2 }]));
    expect(d.list()).toEqual([
      { session: "s1", lastSeq: 4, events: 4, open: 1, continued: 2, queued: 1, settled: 1, viewed: true },
      { session: "s2", lastSeq: 0, events: 0, open: 0, continued: 0, queued: 0, settled: 0, viewed: false },
    ]);
    expect(d.resumeFrom("s1")).toBe(5);
    expect(d.events("s1").map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    expect(d.view("s1")?.lastSeq).toBe(4);
    expect(d.view("s2")).toBeUndefined();
    expect(d.resumeFrom("s2")).toBe(1);
  });
});

describe("summaryFacts", () => {
  it("says loading until a view arrives, no questions yet for an empty projection, and the answered count after", () => {
    const d = new SessionDirectory(["s1"]);
    const facts = () => summaryFacts(d.list()[0]!);
    expect(facts()).toBe("0 events · loading questions…");
    d.setView("s1", emptyView()); // a Session with no projection entry (C1)
    expect(facts()).toBe("0 events · no questions yet");
    d.setView("s1", view([call("a", "open")], 3));
    expect(facts()).toBe("0 events · 0 answered");
  });
});
