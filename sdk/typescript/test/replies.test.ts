// Replies against a real server: every request gets its own reply, and
// fails as nc.request fails: no responders, a timeout, a publish the
// server refuses, a closed connection.

import { describe, expect, it } from "vitest";
import { randomBytes } from "node:crypto";
import { PermissionViolationError, RequestError, TimeoutError } from "@nats-io/nats-core";
import { Replies } from "../src/replies.js";
import { plainConn } from "./helpers.js";

const subject = () => "test.replies." + randomBytes(4).toString("hex");

describe("replies", () => {
  it("gives each of many requests at once its own reply", async () => {
    const nc = await plainConn("admin");
    const echo = subject();
    nc.subscribe(echo, { callback: (_err, m) => void m.respond(m.data) });
    await nc.flush();
    const replies = new Replies(nc, "_INBOX.admin");
    const got = await Promise.all(Array.from({ length: 200 }, (_, i) => replies.request(echo, String(i), { timeout: 10_000 })));
    expect(got.map((m) => m.string())).toEqual(Array.from({ length: 200 }, (_, i) => String(i)));
  });

  it("fails a request nobody can answer with no responders, and one nobody answers with a timeout", async () => {
    const nc = await plainConn("admin");
    const replies = new Replies(nc, "_INBOX.admin");
    const err = await replies.request(subject(), "", { timeout: 10_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RequestError);
    expect((err as RequestError).isNoResponders()).toBe(true);

    const silent = subject();
    const slow = subject();
    const held: Array<() => void> = [];
    nc.subscribe(silent, { callback: () => {} });
    nc.subscribe(slow, { callback: (_err, m) => void held.push(() => m.respond("late but in time")) });
    await nc.flush();
    // The longer wait is sent first: the shorter one's deadline comes first all the same.
    const patient = replies.request(slow, "", { timeout: 10_000 });
    await expect(replies.request(silent, "", { timeout: 200 })).rejects.toBeInstanceOf(TimeoutError);
    for (const respond of held) respond();
    expect((await patient).string()).toBe("late but in time");
  });

  it("fails a request whose publish the server refuses with the refusal, not a timeout", async () => {
    const nc = await plainConn("agent");
    const replies = new Replies(nc, "_INBOX.agent");
    // An agent may not queue a user's message (package auth).
    const err = await replies.request("holdover.session.replies-test.inbox", "{}", { timeout: 60_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RequestError);
    expect((err as RequestError).cause).toBeInstanceOf(PermissionViolationError);
  });

  it("hands every message on an opened reply subject to its handler until it is closed, and fails what waits when the connection closes", async () => {
    const nc = await plainConn("admin");
    const replies = new Replies(nc, "_INBOX.admin");
    const got: string[] = [];
    const reply = replies.open((m) => got.push(m.string()));
    const twice = subject();
    nc.subscribe(twice, {
      callback: (_err, m) => {
        m.respond("accepted");
        m.respond("answered");
      },
    });
    const silent = subject();
    nc.subscribe(silent, { callback: () => {} });
    await nc.flush();
    nc.publish(twice, "", { reply: reply.subject });
    await nc.flush();
    await expect.poll(() => got).toEqual(["accepted", "answered"]);
    reply.close();
    nc.publish(twice, "", { reply: reply.subject });
    await nc.flush();

    const waiting = replies.request(silent, "", { timeout: 60_000 });
    await nc.flush();
    await nc.close();
    await expect(waiting).rejects.toThrow("connection closed");
    expect(got).toEqual(["accepted", "answered"]);
  });
});
