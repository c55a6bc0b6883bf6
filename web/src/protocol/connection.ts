// Connection: the Client's side of one WebSocket to the gateway. It sends
// hello, correlates calls, streams and watches by id, turns request frames
// into answer channels, and implements the QuestionsTransport the cards use.
// It knows the protocol's generic verbs only; what a request means is the
// caller's business.

import type { AnswerResult, Claim, ClaimHandlers, ForwardedRequest, QuestionsTransport } from "../questions/cards";
import type { AnswerRequest, DiscardRequest } from "../generated/wire";
import type { Answer, SessionEvent, View, WireError } from "../wire";
import { RemoteError } from "../wire";
import { isRecord } from "../json";
import { messageFrames, Methods, protocolVersion, ProtocolError, readServerFrame, readView, type ClientFrame, type ServerFrame, type SessionSummary } from "./frames";

/** The part of the browser WebSocket the Connection uses. */
export type SocketLike = Pick<WebSocket, "readyState" | "send" | "close" | "onopen" | "onmessage" | "onclose" | "onerror">;

const socketOpen = 1;

/** The code of the errors a Connection raises itself when the socket is gone. */
export const unavailable = "UNAVAILABLE";

/** A Remote Event request the gateway forwarded, with the Remote Event name. */
export interface IncomingRequest extends ForwardedRequest {
  event: string;
}

export interface ConnectionHandlers {
  /** The gateway accepted hello. */
  welcome?(clientId: string): void;
  /** A forwarded Remote Event request; answer it through its channel exactly once. */
  request(request: IncomingRequest): void;
  /** The Host ended a forwarded request. */
  cancel(session: string, requestId: string): void;
  /** An error frame that names no call, stream or watch, or a frame that could not be read. */
  error?(error: WireError): void;
  /** The socket closed. Pending calls were rejected; open streams and watches ended with it. */
  closed?(): void;
}

export interface WatchHandlers {
  events(events: SessionEvent[]): void;
  view(view: View): void;
  /** The watch is live: history and projection are in, and what follows arrives as it happens. */
  ready?(): void;
  error?(error: WireError): void;
}

export interface InboxHandlers {
  /** Sessions whose questions changed; a Session with no active call left has an empty list. */
  summary(sessions: SessionSummary[]): void;
  /** Everything that existed when the feed opened has arrived. */
  ready(): void;
  /** The feed ended: refused, failed or with the connection (no error when the gateway ended it cleanly). */
  closed?(error?: WireError): void;
}

/** An active watch; close() sends unwatch. */
export interface Watch {
  close(): void;
}

export class Connection implements QuestionsTransport {
  private readonly socket: SocketLike;
  private readonly handlers: ConnectionHandlers;
  private readonly outbox: string[] = [];
  private nextId = 1;
  private readonly calls = new Map<string, { resolve(v: unknown): void; reject(e: RemoteError): void }>();
  private readonly streams = new Map<string, ClaimHandlers>();
  private readonly watches = new Map<string, WatchHandlers>();
  private readonly inboxes = new Map<string, InboxHandlers>();
  private ended = false;

  /**
   * Takes over socket's handlers; frames sent before it opens wait in order behind hello.
   * The access token travels in hello, not in the socket's address, so no access log sees it.
   */
  constructor(socket: SocketLike, handlers: ConnectionHandlers, clientName = "holdover-web", token?: string) {
    this.socket = socket;
    this.handlers = handlers;
    const hello = { type: "hello", protocol: protocolVersion, client: clientName, ...(token === undefined ? {} : { token }) } satisfies ClientFrame;
    this.outbox.push(JSON.stringify(hello));
    socket.onopen = () => this.flush();
    socket.onmessage = (ev: MessageEvent) => this.receive(ev.data);
    socket.onclose = () => this.end();
    socket.onerror = () => {}; // a close event always follows
    if (socket.readyState === socketOpen) this.flush();
  }

  /** Watches a Session: its events from fromSeq on, and its projection view whenever it changes. */
  watch(session: string, fromSeq: number, handlers: WatchHandlers): Watch {
    const id = this.id("w");
    this.watches.set(id, handlers);
    this.send({ type: "watch", id, session, fromSeq });
    return {
      close: () => {
        if (this.watches.delete(id)) this.send({ type: "unwatch", id });
      },
    };
  }

  /** Opens the inbox feed: every granted Session's questions, live. close() ends it. */
  inbox(handlers: InboxHandlers): Watch {
    const id = this.id("i");
    if (this.ended) {
      handlers.closed?.({ code: unavailable, message: "the connection to the gateway is closed" });
      return { close: () => {} };
    }
    this.inboxes.set(id, handlers);
    this.send({ type: "inbox", id });
    return {
      close: () => {
        if (this.inboxes.delete(id)) this.send({ type: "close", id });
      },
    };
  }

  /** Calls an RPC method; rejects with a RemoteError carrying the gateway's or service's code. */
  call(method: string, params: object): Promise<unknown> {
    if (this.ended) return Promise.reject(new RemoteError({ code: unavailable, message: "the connection to the gateway is closed" }));
    const id = this.id("c");
    return new Promise((resolve, reject) => {
      this.calls.set(id, { resolve, reject });
      this.send({ type: "call", id, method, params });
    });
  }

  /** Opens a Remote stream. Its frames and its end arrive through handlers; close() ends it from this side. */
  open(method: string, params: object, handlers: ClaimHandlers): Claim {
    const id = this.id("s");
    if (this.ended) {
      handlers.closed({ code: unavailable, message: "the connection to the gateway is closed" });
      return { close: () => {} };
    }
    this.streams.set(id, handlers);
    this.send({ type: "open", id, method, params });
    return {
      close: () => {
        if (this.streams.delete(id)) this.send({ type: "close", id });
      },
    };
  }

  attachWait(session: string, callId: string, handlers: ClaimHandlers): Claim {
    return this.open(Methods.attachWait, { session, callId }, handlers);
  }

  async answer(session: string, callId: string, answers: Answer[]): Promise<AnswerResult> {
    const params: AnswerRequest = { session, callId, answers };
    const result = await this.call(Methods.answer, params);
    if (!isRecord(result) || typeof result.accepted !== "boolean") {
      throw new RemoteError({ code: "BAD_RESPONSE", message: "the answer call returned no accepted flag" });
    }
    const answer: AnswerResult = { accepted: result.accepted };
    if (typeof result.messageId === "string") answer.messageId = result.messageId;
    const reason = result.reason;
    if (isRecord(reason) && typeof reason.code === "string" && typeof reason.message === "string") {
      answer.reason = { code: reason.code, message: reason.message };
    }
    return answer;
  }

  /** The Session's projection from the service, which shows a stored reply no agent has read yet as queued. */
  async view(session: string): Promise<View> {
    const result = await this.call(Methods.view, { session });
    try {
      return readView(result);
    } catch (err) {
      throw new RemoteError({ code: "BAD_RESPONSE", message: err instanceof Error ? err.message : String(err) });
    }
  }

  async discard(session: string, messageId: string): Promise<void> {
    const params: DiscardRequest = { session, messageId };
    await this.call(Methods.discard, params);
  }

  /** Closes the socket; the closed handler runs when it has. */
  close(): void {
    this.socket.close(1000, "client closed");
  }

  private id(prefix: string): string {
    return `${prefix}${this.nextId++}`;
  }

  private send(frame: ClientFrame): void {
    if (this.ended) return;
    this.outbox.push(JSON.stringify(frame));
    if (this.socket.readyState === socketOpen) this.flush();
  }

  private flush(): void {
    while (this.outbox.length > 0 && this.socket.readyState === socketOpen) this.socket.send(this.outbox.shift() as string);
  }

  /** One message from the gateway: a frame, or from protocol 2 on several, handled in order. */
  private receive(data: unknown): void {
    let frames: unknown[];
    try {
      frames = messageFrames(typeof data === "string" ? data : "");
    } catch (err) {
      this.badFrame(err);
      return;
    }
    for (const v of frames) {
      let frame: ServerFrame | undefined;
      try {
        frame = readServerFrame(v);
      } catch (err) {
        this.badFrame(err);
        continue;
      }
      if (frame) this.dispatch(frame);
    }
  }

  private badFrame(err: unknown): void {
    this.handlers.error?.({ code: "BAD_FRAME", message: err instanceof ProtocolError ? err.message : String(err) });
  }

  private dispatch(frame: ServerFrame): void {
    switch (frame.type) {
      case "welcome":
        this.handlers.welcome?.(frame.clientId);
        return;
      case "events":
        this.watches.get(frame.id)?.events(frame.events);
        return;
      case "view":
        this.watches.get(frame.id)?.view(frame.view);
        return;
      case "ready":
        if (frame.session === undefined) this.inboxes.get(frame.id)?.ready();
        else this.watches.get(frame.id)?.ready?.();
        return;
      case "summary":
        this.inboxes.get(frame.id)?.summary(frame.sessions);
        return;
      case "request":
        this.handlers.request({
          session: frame.session,
          requestId: frame.id,
          event: frame.event,
          payload: frame.payload as IncomingRequest["payload"],
          channel: this.channel(frame.id),
        });
        return;
      case "cancel":
        this.handlers.cancel(frame.session, frame.id);
        return;
      case "frame":
        this.streams.get(frame.id)?.frame(frame.data);
        return;
      case "close": {
        const stream = this.streams.get(frame.id);
        const inbox = this.inboxes.get(frame.id);
        this.streams.delete(frame.id);
        this.inboxes.delete(frame.id);
        stream?.closed(frame.error);
        inbox?.closed?.(frame.error);
        return;
      }
      case "result": {
        const call = this.calls.get(frame.id);
        this.calls.delete(frame.id);
        call?.resolve(frame.result);
        return;
      }
      case "error":
        this.failed(frame.id, { code: frame.code, message: frame.message });
        return;
    }
    frame satisfies never; // every frame type the schemas name is handled above
  }

  /** Routes an error frame to the call, stream or watch it names, else to the connection's handler. */
  private failed(id: string | undefined, error: WireError): void {
    if (id !== undefined) {
      const call = this.calls.get(id);
      const stream = this.streams.get(id);
      const watch = this.watches.get(id);
      const inbox = this.inboxes.get(id);
      this.calls.delete(id);
      this.streams.delete(id);
      this.watches.delete(id);
      this.inboxes.delete(id);
      if (call) return call.reject(new RemoteError(error));
      if (stream) return stream.closed(error);
      if (watch) return watch.error?.(error);
      if (inbox) return inbox.closed?.(error);
    }
    this.handlers.error?.(error);
  }

  /** The outcome side of request id: settle, reject or delegate go back as frames. */
  private channel(id: string): IncomingRequest["channel"] {
    return {
      settle: (value) => this.send({ type: "settle", id, value }),
      reject: (error) => this.send({ type: "reject", id, error }),
      delegate: () => this.send({ type: "delegate", id }),
    };
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    this.outbox.length = 0;
    const error = new RemoteError({ code: unavailable, message: "the connection to the gateway closed" });
    for (const call of this.calls.values()) call.reject(error);
    this.calls.clear();
    this.streams.clear();
    this.watches.clear();
    this.inboxes.clear();
    this.handlers.closed?.();
  }
}
