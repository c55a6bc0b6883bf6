// The NATS connection an agent runtime holds, with the options a deployment
// needs: credentials files or tokens, the agent role's own _INBOX prefix,
// TLS. Everything NATS is the official JavaScript client's; this file only
// chooses options, names the consumer in one JetStream API subject where
// the agent role's permissions require it, and sends the JetStream
// client's requests through the connection's Replies (jsConn).

import { readFileSync } from "node:fs";
import { connect as natsConnect, type NodeConnectionOptions } from "@nats-io/transport-node";
import { credsAuthenticator, createInbox, type NatsConnection, type TlsOptions } from "@nats-io/nats-core";
import { jetstream, jetstreamManager, JetStreamApiError, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import { AgentInboxPrefix, RootsBucket } from "./names.js";
import { Replies } from "./replies.js";

/** How to reach NATS. */
export interface ConnectOptions {
  /** Server URL(s), e.g. "nats://127.0.0.1:4222". */
  servers: string | string[];
  /**
   * A NATS credentials file: its path, or its content as bytes. On a
   * server with authentication on (`holdover dev`, `holdover auth init`)
   * a runtime uses the agent role's: `<dir>/tenants/<tenant>/agent.creds`.
   */
  creds?: string | Uint8Array;
  /** Any other NATS authenticator (nkeys, JWTs), when not a creds file. */
  authenticator?: NodeConnectionOptions["authenticator"];
  /** A NATS token. */
  token?: string;
  /**
   * The prefix of this connection's reply subjects; default `_INBOX.agent`,
   * the only one the agent role may subscribe below (auth.Role.InboxPrefix).
   */
  inboxPrefix?: string;
  /** TLS options, passed to the NATS client as they are. */
  tls?: TlsOptions;
  /** The connection's name, as the server's monitoring shows it. */
  name?: string;
  /**
   * Milliseconds between reconnect attempts; keep it well below the release
   * bound, or a blip loses the leases (docs/design.md). Default 500.
   */
  reconnectTimeWait?: number;
}

/** An open connection and the JetStream handles every part of the SDK shares. */
export interface Conn {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  roots: KV;
  /** Every reply the SDK waits for on this connection, on one subscription. */
  replies: Replies;
  /** A fresh subject under this connection's inbox prefix. */
  inbox(): string;
}

export async function openConn(opts: ConnectOptions): Promise<Conn> {
  const inboxPrefix = opts.inboxPrefix ?? AgentInboxPrefix;
  const nc = await connectNats(opts);
  try {
    const replies = new Replies(nc, inboxPrefix);
    // The agent role may not read the account's JetStream info ($JS.API.INFO).
    const js = jetstream(jsConn(nc, replies), { checkAPI: false });
    const jsm = await jetstreamManager(jsConn(nc, replies), { checkAPI: false });
    // Bound without a look-up (no API check); read with direct gets, the
    // only reads the agent role may make of the bucket (Holdover's buckets
    // allow them).
    const roots = await new Kvm(js).open(RootsBucket, { allow_direct: true });
    return { nc, js, jsm, roots, replies, inbox: () => createInbox(inboxPrefix) };
  } catch (err) {
    await nc.close();
    throw err;
  }
}

/** A plain NATS connection with opts' credentials, inbox prefix and TLS. */
export function connectNats(opts: ConnectOptions): Promise<NatsConnection> {
  const options: NodeConnectionOptions = {
    servers: opts.servers,
    name: opts.name ?? "holdover-agent-ts",
    maxReconnectAttempts: -1,
    reconnectTimeWait: opts.reconnectTimeWait ?? 500,
    // A stack captured per request is a tenth of a busy runtime's CPU; the
    // SDK's errors name the operation and keep the cause instead.
    noAsyncTraces: true,
  };
  if (opts.creds !== undefined) {
    const creds = typeof opts.creds === "string" ? readFileSync(opts.creds) : opts.creds;
    options.authenticator = credsAuthenticator(creds);
  }
  if (opts.authenticator !== undefined) options.authenticator = opts.authenticator;
  if (opts.token !== undefined) options.token = opts.token;
  options.inboxPrefix = opts.inboxPrefix ?? AgentInboxPrefix;
  if (opts.tls !== undefined) options.tls = opts.tls;
  return natsConnect(options);
}

const consumerCreate = "$JS.API.CONSUMER.CREATE.";

/**
 * nc as the JetStream client sees it, with two differences. Its requests
 * (publish acks, API calls, direct gets: most of a runtime's traffic) wait
 * on replies, not on the NATS client's own request path. And a consumer
 * with several filter subjects (the inbox reader: the Session's inbox
 * subject and its calls' reply subjects) is created on
 * $JS.API.CONSUMER.CREATE.<stream>.<name>, as Go's client does, where the
 * JavaScript client uses the name-less legacy subject. The agent role may
 * create consumers on SESSIONS only under a name (package auth): no filter
 * token can carry two subjects.
 */
function jsConn(nc: NatsConnection, replies: Replies): NatsConnection {
  const request: NatsConnection["request"] = (subject, payload, opts) => {
    if (subject.startsWith(consumerCreate) && subject.indexOf(".", consumerCreate.length) === -1 && payload !== undefined) {
      const body = JSON.parse(typeof payload === "string" ? payload : decoder.decode(payload)) as { config?: { name?: string; filter_subjects?: unknown } };
      const name = body.config?.name;
      if (name && Array.isArray(body.config?.filter_subjects)) subject = `${subject}.${name}`;
    }
    // What a reply subject of our own cannot serve goes the client's way.
    if (opts?.noMux || opts?.reply || opts?.traceDestination) return nc.request(subject, payload, opts);
    return replies.request(subject, payload, { timeout: opts?.timeout || 1000, ...(opts?.headers ? { headers: opts.headers } : {}) });
  };
  // nc's methods bound to it, each once: the client reaches for them on every message.
  const bound = new Map<PropertyKey, unknown>();
  return new Proxy(nc, {
    get(target, prop) {
      if (prop === "request") return request;
      const v: unknown = Reflect.get(target, prop, target);
      if (typeof v !== "function") return v;
      let b = bound.get(prop);
      if (!b) bound.set(prop, (b = (v as (...a: unknown[]) => unknown).bind(target)));
      return b;
    },
  });
}

/** JetStream's "wrong last sequence": a compare-and-set lost to another writer (streams.IsConflict). */
export function isConflict(err: unknown): boolean {
  return err instanceof JetStreamApiError && (err.code === 10071 || err.code === 10164);
}

/** JetStream's "consumer not found". */
export function isConsumerNotFound(err: unknown): boolean {
  return err instanceof JetStreamApiError && err.code === 10014;
}

export const encoder = new TextEncoder();
export const decoder = new TextDecoder();
