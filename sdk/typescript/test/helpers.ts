// What the SDK's tests share: a runtime on the dev server (on the agent
// role's credentials), connections of the other roles, fresh Session ids,
// polling the log, a Client that answers foreground requests as the web
// Client does (a waterfall outcome on the request's reply subject), on a
// gateway's credentials, and the late answer through the gateway's.

import { expect, inject, onTestFinished } from "vitest";
import { join } from "node:path";
import { connect, credsAuthenticator } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { readFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { Runtime, steer as queue, type RuntimeOptions } from "../src/index.js";
import type { Answer, AnswerResult } from "../src/wire.js";
import type { LoggedEvent, OtherEvent } from "../src/sessionlog.js";

export const natsURL = (): string => inject("natsURL");

/** The roles of `holdover dev`'s credentials files (package auth). */
export type Role = "agent" | "gateway" | "admin" | "operator" | "worker";

/** The credentials file `holdover dev` wrote for role. */
export const creds = (role: Role): string => join(inject("credsDir"), `${role}.creds`);

/**
 * A runtime on its own connection with the agent's credentials, closed
 * when the test ends. The test fails if the server refused the runtime
 * anything its role does not allow (a permissions violation is reported
 * on the connection, not always to the call that caused it).
 */
export async function runtime(opts: Partial<RuntimeOptions> = {}): Promise<Runtime> {
  const rt = await Runtime.connect({ servers: natsURL(), creds: creds("agent"), releaseBoundMs: 1000, warn: () => {}, ...opts });
  const refused: string[] = [];
  void (async () => {
    for await (const s of rt.conn.nc.status()) {
      if (s.type === "error") refused.push(String(s.error));
    }
  })();
  onTestFinished(async () => {
    await rt.conn.nc.flush().catch(() => undefined);
    await rt.close();
    expect(refused, "the server refused the agent runtime").toEqual([]);
  });
  return rt;
}

/** A plain connection of role, as another process would have, closed when the test ends. */
export async function plainConn(role: Role = "admin"): Promise<NatsConnection> {
  const nc = await connect({ servers: natsURL(), authenticator: credsAuthenticator(readFileSync(creds(role))), inboxPrefix: `_INBOX.${role}` });
  onTestFinished(() => nc.close());
  return nc;
}

/** Queues a user's message in sid's inbox, as an admin may (an agent may not). */
export const steer = (sid: string, text: string, id?: string): Promise<string> => queue({ servers: natsURL(), creds: creds("admin") }, sid, text, id);

/** A late answer as a user's Client sends it, through a gateway (D6; an agent may not answer). */
export async function answer(session: string, callId: string, answers: Answer[]): Promise<AnswerResult> {
  const nc = await plainConn("gateway");
  return (await nc.request("holdover.q.answer", JSON.stringify({ session, callId, answers }), { timeout: 10_000 })).json<AnswerResult>();
}

export const sessionId = (): string => "ts-" + randomBytes(6).toString("hex");

/** Polls the Session log until done holds, and returns it. */
export async function awaitLog(rt: Runtime, sid: string, done: (log: Array<LoggedEvent | OtherEvent>) => boolean, what: string): Promise<Array<LoggedEvent | OtherEvent>> {
  const until = Date.now() + 15_000;
  for (;;) {
    const log = await rt.log.read(sid);
    if (done(log)) return log;
    if (Date.now() > until) throw new Error(`waiting for ${what}; the log is ${JSON.stringify(log.map((e) => e.type))}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export const types = (log: Array<{ type: string }>): string[] => log.map((e) => e.type);

/**
 * A Client watching sid: settles each foreground request with answers,
 * as the web Client does, and reports each cancel notice's reason.
 */
export async function answeringClient(nc: NatsConnection, sid: string, answers: Answer[] | null): Promise<{ requests: unknown[]; cancels: string[] }> {
  const seen = { requests: [] as unknown[], cancels: [] as string[] };
  nc.subscribe(`holdover.session.${sid}.ask`, {
    callback: (_err, m) => {
      seen.requests.push(m.json());
      if (answers) m.respond(JSON.stringify({ kind: "settle", answers }));
    },
  });
  nc.subscribe(`holdover.session.${sid}.ask.cancel`, {
    callback: (_err, m) => {
      seen.cancels.push((m.json() as { reason: string }).reason);
    },
  });
  await nc.flush();
  return seen;
}

export async function eventually(check: () => boolean | Promise<boolean>, what: string, ms = 15_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`never: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
