// The claim/countdown controller: the stateful half of the question cards.
// It holds what cannot be plain data — each forwarded request's answer
// channel, each timed card's attachWait claim stream (W2–W4) and its local
// Countdown (P1, P2, W5) — and carries out the card reducer's effects on
// them. What they report back (a claim frame, a closed stream, an expired
// countdown) goes to the reducer again as an action, through dispatch.
//
// It decides nothing: whether a frame is valid, whether an outcome may
// still be sent, what expiry means are the reducer's (cardState.ts).

import type { Answer, WireError } from "../wire";
import type { CardAction, CardEffect, CountdownOp } from "./cardState";
import type { CountdownInfo } from "./cardView";
import type { Clock } from "./clock";
import { Countdown } from "./countdown";

/** The outcome side of one forwarded Remote Event request. Each request takes exactly one outcome. */
export interface AnswerChannel {
  settle(value: { answers: Answer[] }): void;
  reject(error: WireError): void;
  delegate(): void;
}

/** Callbacks of an attachWait claim stream. */
export interface ClaimHandlers {
  /** A stream frame; the first one carries `{remainingMs}`. */
  frame(data: unknown): void;
  /** The stream ended: cleanly when the Host closed it, with an error when it failed. */
  closed(error?: WireError): void;
}

/** An open attachWait stream. Closing it releases the claim. */
export interface Claim {
  close(): void;
}

/** What the controller needs from the connection: the claim streams. */
export interface ClaimTransport {
  /** Opens the attachWait claim stream of (session, callId). */
  attachWait(session: string, callId: string, handlers: ClaimHandlers): Claim;
}

export interface ClaimControllerOptions {
  transport: ClaimTransport;
  clock: Clock;
  /** Feeds an action back into the cards. */
  dispatch: (action: CardAction) => void;
  /** The countdown changed phase: the cards should be rendered again. */
  changed: () => void;
}

export class ClaimController {
  private readonly transport: ClaimTransport;
  private readonly clock: Clock;
  private readonly dispatch: (action: CardAction) => void;
  private readonly changed: () => void;
  private readonly channels = new Map<string, AnswerChannel>();
  private readonly claims = new Map<string, Claim>();
  /** Claims whose stream ended while attachWait was still opening it. */
  private readonly endedEarly = new Set<string>();
  private readonly countdowns = new Map<string, Countdown>();

  constructor(options: ClaimControllerOptions) {
    this.transport = options.transport;
    this.clock = options.clock;
    this.dispatch = options.dispatch;
    this.changed = options.changed;
  }

  /** Keeps the answer channel of a forwarded request, for the outcome the reducer sends. */
  hold(requestId: string, channel: AnswerChannel): void {
    this.channels.set(requestId, channel);
  }

  /** What the card's countdown shows, if it has one. */
  countdown(key: string): CountdownInfo | undefined {
    const c = this.countdowns.get(key);
    return c && { phase: c.phase, label: c.label(), remainingMs: c.remainingMs(), active: c.active };
  }

  /** Carries out one effect of the reducer; effects that are not about claims, channels or countdowns are ignored. */
  run(effect: CardEffect): void {
    switch (effect.kind) {
      case "settle":
        this.outcome(effect.requestId, (c) => c.settle({ answers: effect.answers }));
        return;
      case "reject":
        this.outcome(effect.requestId, (c) => c.reject(effect.error));
        return;
      case "delegate":
        this.outcome(effect.requestId, (c) => c.delegate());
        return;
      case "claimOpen":
        this.openClaim(effect.key, effect.requestId, effect.session, effect.callId);
        return;
      case "claimClose": {
        const claim = this.claims.get(effect.requestId);
        this.claims.delete(effect.requestId);
        claim?.close();
        return;
      }
      case "countdown":
        this.countdownOp(effect.key, effect);
        return;
    }
  }

  /** Sends a request's one outcome; the channel is then of no more use. */
  private outcome(requestId: string, send: (channel: AnswerChannel) => void): void {
    const channel = this.channels.get(requestId);
    this.channels.delete(requestId);
    if (channel) send(channel);
  }

  /** Opens the claim; a stream that ends while it opens (no connection) reports it once open. */
  private openClaim(key: string, requestId: string, session: string, callId: string): void {
    let opening = true;
    const claim = this.transport.attachWait(session, callId, {
      frame: (data) => this.dispatch({ type: "claimFrame", key, requestId, data }),
      closed: (error) => {
        if (opening) this.endedEarly.add(requestId);
        this.claims.delete(requestId);
        this.dispatch({ type: "claimClosed", key, requestId, error });
      },
    });
    opening = false;
    if (this.endedEarly.delete(requestId)) return;
    this.claims.set(requestId, claim);
  }

  private countdownOp(key: string, op: CountdownOp): void {
    const c = this.countdowns.get(key);
    switch (op.op) {
      case "start": {
        c?.stop();
        // Expiry names the request the countdown was started for; the
        // reducer ignores it if the card holds another one by then.
        const next = new Countdown({
          clock: this.clock,
          disposition: op.disposition,
          onExpire: () => this.dispatch({ type: "expired", key, requestId: op.requestId }),
          onChange: () => this.changed(),
        });
        this.countdowns.set(key, next);
        if (op.focused) next.focus();
        return;
      }
      case "attach":
        c?.attach(op.remainingMs);
        return;
      case "focus":
        c?.focus();
        return;
      case "blur":
        c?.blur();
        return;
      case "freeze":
        c?.freeze(op.disposition);
        return;
      case "stop":
        c?.stop();
        return;
      case "drop":
        c?.stop();
        this.countdowns.delete(key);
        return;
    }
  }
}
