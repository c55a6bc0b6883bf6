// A stand-in for the browser WebSocket in Connection tests: it records
// what the Client sends and lets the test deliver the gateway's frames.

import type { SocketLike } from "../protocol/connection";

export class FakeSocket implements SocketLike {
  readyState = 0;
  readonly sent: unknown[] = [];
  onopen: SocketLike["onopen"] = null;
  onmessage: SocketLike["onmessage"] = null;
  onclose: SocketLike["onclose"] = null;
  onerror: SocketLike["onerror"] = null;
  closedWith: { code?: number; reason?: string } | undefined;

  send(data: string): void {
    if (this.readyState !== 1) throw new Error("send on a socket that is not open");
    this.sent.push(JSON.parse(data));
  }
  close(code?: number, reason?: string): void {
    this.closedWith = { ...(code === undefined ? {} : { code }), ...(reason === undefined ? {} : { reason }) };
    this.drop();
  }
  open(): void {
    this.readyState = 1;
    this.onopen?.call(this.asWebSocket(), new Event("open"));
  }
  /** Delivers a gateway frame (an object is sent as its JSON). */
  deliver(frame: unknown): void {
    this.onmessage?.call(this.asWebSocket(), new MessageEvent("message", { data: typeof frame === "string" ? frame : JSON.stringify(frame) }));
  }
  /** The connection goes away. */
  drop(): void {
    this.readyState = 3;
    this.onclose?.call(this.asWebSocket(), new Event("close") as CloseEvent);
  }
  /** The handlers' `this`; the Connection never reads it. */
  private asWebSocket(): WebSocket {
    return this as unknown as WebSocket;
  }
  /** The frames sent so far, then forgets them. */
  take(): unknown[] {
    return this.sent.splice(0);
  }
}
