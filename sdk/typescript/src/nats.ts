// The NATS connection an agent runtime holds, with the options a deployment
// needs: credentials files or tokens, a role's own _INBOX prefix, TLS.
// Everything NATS is the official JavaScript client's; this file only
// chooses options.

import { readFileSync } from "node:fs";
import { connect as natsConnect, type NodeConnectionOptions } from "@nats-io/transport-node";
import { credsAuthenticator, createInbox, type NatsConnection, type TlsOptions } from "@nats-io/nats-core";
import { jetstream, jetstreamManager, JetStreamApiError, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import { RootsBucket } from "./names.js";

/** How to reach NATS. */
export interface ConnectOptions {
  /** Server URL(s), e.g. "nats://127.0.0.1:4222". */
  servers: string | string[];
  /** A NATS credentials file: its path, or its content as bytes. */
  creds?: string | Uint8Array;
  /** A NATS token. */
  token?: string;
  /** The `_INBOX` prefix of this role's replies, when permissions name one. */
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
  /** A fresh subject under this connection's inbox prefix. */
  inbox(): string;
}

export async function openConn(opts: ConnectOptions): Promise<Conn> {
  const options: NodeConnectionOptions = {
    servers: opts.servers,
    name: opts.name ?? "holdover-agent-ts",
    maxReconnectAttempts: -1,
    reconnectTimeWait: opts.reconnectTimeWait ?? 500,
  };
  if (opts.creds !== undefined) {
    const creds = typeof opts.creds === "string" ? readFileSync(opts.creds) : opts.creds;
    options.authenticator = credsAuthenticator(creds);
  }
  if (opts.token !== undefined) options.token = opts.token;
  if (opts.inboxPrefix !== undefined) options.inboxPrefix = opts.inboxPrefix;
  if (opts.tls !== undefined) options.tls = opts.tls;
  const nc = await natsConnect(options);
  try {
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    const roots = await new Kvm(js).open(RootsBucket);
    return { nc, js, jsm, roots, inbox: () => createInbox(opts.inboxPrefix) };
  } catch (err) {
    await nc.close();
    throw err;
  }
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
