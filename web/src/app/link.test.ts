import { describe, expect, it } from "vitest";
import { ManualClock } from "../testing/manualClock";
import { Link } from "./link";

function link(sessions = ["s1", "s2"]) {
  const clock = new ManualClock();
  const attempts: number[] = [];
  let changes = 0;
  const l = new Link(sessions, clock, (n) => attempts.push(n), () => changes++);
  return { l, clock, attempts, changes: () => changes };
}

describe("Link", () => {
  it("is live only once every watch is: welcome alone is loading, not connected", () => {
    const { l, attempts } = link();
    l.start();
    expect(attempts).toEqual([0]);
    expect([l.phase, l.text()]).toEqual(["connecting", "Connecting…"]);
    l.welcomed();
    expect([l.phase, l.text()]).toEqual(["loading", "Loading… 0 of 2 Sessions live"]);
    l.watchReady("s1");
    expect(l.text()).toBe("Loading… 1 of 2 Sessions live");
    l.watchReady("s2");
    expect([l.phase, l.text()]).toEqual(["live", "Live"]);
  });

  it("a refused watch does not hold up live, and the line names it", () => {
    const { l } = link();
    l.start();
    l.welcomed();
    l.watchReady("s1");
    l.watchFailed("s2", { code: "FORBIDDEN", message: "no grant" });
    expect([l.phase, l.text()]).toEqual(["live", "Live · s2: FORBIDDEN: no grant"]);
  });

  it("after a drop counts down to the retry with back-off, then catches up before it is live again", () => {
    const { l, clock, attempts } = link(["s1"]);
    l.start();
    l.welcomed();
    l.watchReady("s1");
    l.closed();
    expect([l.phase, l.text()]).toEqual(["waiting", "Disconnected · reconnecting in 1s"]);
    clock.advance(1000);
    expect(attempts).toEqual([0, 1]);
    expect([l.phase, l.text()]).toEqual(["connecting", "Reconnecting…"]);
    l.closed(); // the gateway is still down: 2 s
    expect(l.text()).toBe("Disconnected · reconnecting in 2s");
    clock.advance(1000);
    expect(l.text()).toBe("Disconnected · reconnecting in 1s");
    clock.advance(1000);
    expect(attempts).toEqual([0, 1, 2]);
    l.welcomed();
    expect([l.phase, l.text()]).toEqual(["loading", "Reconnected · catching up (0 of 1 Sessions live)"]);
    l.watchReady("s1");
    expect(l.phase).toBe("live");
    l.closed(); // a connection the gateway accepted starts the back-off over
    expect(l.text()).toBe("Disconnected · reconnecting in 1s");
  });

  it("the countdown's changes wake the page each second", () => {
    const { l, clock, changes } = link(["s1"]);
    l.start();
    l.closed();
    const before = changes();
    clock.advance(999);
    expect(changes()).toBe(before);
    clock.advance(1);
    expect(changes()).toBeGreaterThan(before);
  });

  it("stops for good when the gateway refuses the token", () => {
    const { l, clock, attempts } = link();
    l.start();
    l.failed({ code: "UNAUTHORIZED", message: "the access token is missing or unknown" });
    l.closed();
    clock.advance(60_000);
    expect(attempts).toEqual([0]);
    expect([l.phase, l.text()]).toEqual(["stopped", "UNAUTHORIZED: the access token is missing or unknown"]);
  });

  it("says so when there is no token", () => {
    const { l, attempts } = link();
    l.noToken();
    expect([l.phase, l.text()]).toEqual(["stopped", "No access token"]);
    expect(attempts).toEqual([]);
  });
});

describe("Link for the inbox", () => {
  it("says it loads the inbox, not Sessions, until the feed is ready", () => {
    const clock = new ManualClock();
    const l = new Link(["inbox"], clock, () => {}, () => {}, true);
    l.start();
    l.welcomed();
    expect(l.text()).toBe("Loading the inbox…");
    l.watchReady("inbox");
    expect(l.text()).toBe("Live");
    l.closed();
    clock.advance(1000);
    l.welcomed();
    expect(l.text()).toBe("Reconnected · catching up");
  });
});
