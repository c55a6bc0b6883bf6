// QuestionCards: one card per question, shared by the live forwarded request
// and the durable projection (C1–C5), with its local countdown (P1–P4) and
// browser-local draft (P2).
//
// It is the seam between the page and the two halves that do the work: the
// pure card reducer (cardState.ts) decides what every input means, and the
// claim/countdown controller (claims.ts) holds the answer channels, claim
// streams and countdowns. QuestionCards reads drafts for the reducer, runs
// its effects — on the controller, on the DraftStore, and the late-answer
// and discard RPCs on the transport — and tells subscribers after each
// change.

import type { Answer, View, WireError } from "../wire";
import { codeOf } from "../wire";
import type { Assert, Reads } from "../conforms";
import type * as schema from "../generated/wire";
import { cardKey, emptyCards, reduceCards, type CardAction, type CardEffect, type CardsState, type RequestPayload } from "./cardState";
import { cardView, type CardView } from "./cardView";
import { ClaimController, type AnswerChannel, type ClaimTransport } from "./claims";
import type { Clock } from "./clock";
import type { Draft, DraftStore } from "./drafts";

export type { RequestPayload } from "./cardState";
export type { CardView, ChannelKind } from "./cardView";
export type { AnswerChannel, Claim, ClaimHandlers } from "./claims";

/** A request the gateway forwarded from the Host. */
export interface ForwardedRequest {
  session: string;
  requestId: string;
  payload: RequestPayload;
  channel: AnswerChannel;
}

/** The result of the userQuestions.answer RPC (schemas/replies/answer.json). */
export interface AnswerResult {
  accepted: boolean;
  messageId?: string;
  /** Why it was not accepted: CALL_OPEN, CALL_UNKNOWN, CALL_SETTLED, NO_AGENT, or a newer code. */
  reason?: WireError;
}

export type AnswerResultConformance = Assert<Reads<AnswerResult, schema.AnswerResult>>;

/** What the cards need from the connection to the gateway. */
export interface QuestionsTransport extends ClaimTransport {
  /** Sends a late answer; rejects with a RemoteError carrying the code. */
  answer(session: string, callId: string, answers: Answer[]): Promise<AnswerResult>;
  /** Discards a queued inbox message before admission (D8); rejects with a RemoteError carrying the code. */
  discard(session: string, messageId: string): Promise<void>;
}

export interface QuestionCardsOptions {
  transport: QuestionsTransport;
  clock: Clock;
  drafts: DraftStore;
}

export class QuestionCards {
  private readonly transport: QuestionsTransport;
  private readonly drafts: DraftStore;
  private readonly claims: ClaimController;
  private state: CardsState = emptyCards;
  private readonly listeners = new Set<() => void>();

  constructor(options: QuestionCardsOptions) {
    this.transport = options.transport;
    this.drafts = options.drafts;
    this.claims = new ClaimController({
      transport: options.transport,
      clock: options.clock,
      dispatch: (action) => this.dispatch(action),
      changed: () => this.notify(),
    });
  }

  /** The card key of a keyed question. */
  keyFor(session: string, callId: string): string {
    return cardKey(session, callId);
  }

  /** Calls listener after every change of any card. Returns the unsubscribe function. */
  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  get(key: string): CardView | undefined {
    const card = this.state.cards.get(key);
    return card && cardView(card, this.claims.countdown(key));
  }

  /** The cards of session, or of every Session, in arrival order. */
  list(session?: string): CardView[] {
    return [...this.state.cards.values()].filter((c) => session === undefined || c.session === session).map((c) => cardView(c, this.claims.countdown(c.key)));
  }

  // ---- inputs from the connection ----

  /**
   * Takes a forwarded request (C1, C2, W3). Returns the card key, or
   * undefined when the payload is unusable and was rejected.
   */
  receive(request: ForwardedRequest): string | undefined {
    const callId = request.payload?.wait?.callId;
    const key = typeof callId === "string" && callId !== "" ? this.keyFor(request.session, callId) : this.drafts.requestKey();
    const draft = this.state.cards.has(key) ? undefined : this.drafts.load(key);
    this.claims.hold(request.requestId, request.channel);
    this.dispatch({ type: "receive", session: request.session, requestId: request.requestId, payload: request.payload, key, draft });
    return this.state.cards.get(key)?.live?.id === request.requestId ? key : undefined;
  }

  /** The Host ended a forwarded request; only the projection says whether it was answered (C5). */
  cancelled(session: string, requestId: string): void {
    this.dispatch({ type: "cancelled", session, requestId });
  }

  /** Folds a new projection view of session into the cards (C3–C5). */
  reconcile(session: string, view: View): void {
    const drafts: Record<string, Draft> = {};
    for (const call of view.active) {
      const key = this.keyFor(session, call.callId);
      const draft = this.state.cards.has(key) ? undefined : this.drafts.load(key);
      if (draft) drafts[key] = draft;
    }
    this.dispatch({ type: "view", session, view, drafts });
  }

  /** The connection dropped: every forwarded request and claim of this Client is gone. */
  disconnected(): void {
    this.dispatch({ type: "disconnected" });
  }

  /** Client teardown (page unload): release each claim, then delegate (W4). Drafts stay. */
  teardown(): void {
    this.dispatch({ type: "teardown" });
  }

  // ---- panel actions ----

  /** Shows the panel, e.g. from the tool row (P4). */
  open(key: string): void {
    this.dispatch({ type: "open", key });
  }

  /** Hides a keyed panel, sending nothing (P4, D9); rejects an unkeyed one with ASK_CANCELLED (C2). */
  dismiss(key: string): void {
    this.dispatch({ type: "dismiss", key });
  }

  /** Manual focus on the answer surface pauses a pristine countdown (P1). */
  focus(key: string): void {
    this.dispatch({ type: "focus", key });
  }

  blur(key: string): void {
    this.dispatch({ type: "blur", key });
  }

  /** Chooses an option: replaces a single choice, toggles a multi-select one. An edit (P2). */
  select(key: string, questionId: string, label: string): void {
    this.dispatch({ type: "select", key, questionId, label });
  }

  /** Sets a question's free text. An edit (P2). */
  setCustom(key: string, questionId: string, text: string): void {
    this.dispatch({ type: "setCustom", key, questionId, text });
  }

  /** Skips a question: an empty answer given on purpose. An edit (P2). */
  skip(key: string, questionId: string): void {
    this.dispatch({ type: "skip", key, questionId });
  }

  /** Take time: freezes the countdown without an edit; saved with the draft (P2). */
  takeTime(key: string): void {
    this.dispatch({ type: "takeTime", key });
  }

  /** Moves between questions. Not an edit: the countdown keeps running (P2). */
  setPage(key: string, page: number): void {
    this.dispatch({ type: "setPage", key, page });
  }

  /**
   * Submits the draft through the card's channel (C3, C4). Resolves true
   * when the answer was handed to the waterfall or accepted by the RPC;
   * a refusal becomes the card's message.
   */
  async submit(key: string): Promise<boolean> {
    const effects = this.dispatch({ type: "submit", key });
    const rpc = effects.find((e) => e.kind === "answerRPC");
    if (rpc?.kind !== "answerRPC") return effects.some((e) => e.kind === "settle");
    try {
      const { accepted, reason } = await this.transport.answer(rpc.session, rpc.callId, rpc.answers);
      this.dispatch({ type: "answered", key, accepted, reason, error: undefined });
      return accepted;
    } catch (err) {
      this.dispatch({ type: "answered", key, accepted: false, reason: undefined, error: { code: codeOf(err), message: errorText(err) } });
      return false;
    }
  }

  /**
   * Takes back the card's queued late reply before the agent admits it
   * (P5, D8, §7). The card stays locked until the projection drops the
   * queued reply (C4). Resolves true when the discard went through.
   */
  async discardQueued(key: string): Promise<boolean> {
    const rpc = this.dispatch({ type: "discard", key }).find((e) => e.kind === "discardRPC");
    if (rpc?.kind !== "discardRPC") return false;
    try {
      await this.transport.discard(rpc.session, rpc.messageId);
      this.dispatch({ type: "discarded", key, error: undefined });
      return true;
    } catch (err) {
      this.dispatch({ type: "discarded", key, error: { code: codeOf(err), message: errorText(err) } });
      return false;
    }
  }

  // ---- internals ----

  /**
   * One reducer step: the new state first, then its effects in order (an
   * effect may feed another action in, which sees that state), then the
   * subscribers. Returns the step's own effects.
   */
  private dispatch(action: CardAction): CardEffect[] {
    const step = reduceCards(this.state, action);
    this.state = step.state;
    for (const effect of step.effects) this.run(effect);
    this.notify();
    return step.effects;
  }

  private run(effect: CardEffect): void {
    switch (effect.kind) {
      case "saveDraft":
        this.drafts.save(effect.key, effect.draft);
        return;
      case "removeDraft":
        this.drafts.remove(effect.key);
        return;
      case "answerRPC":
      case "discardRPC":
        return; // the caller awaits these: submit, discardQueued
      default:
        this.claims.run(effect);
    }
  }

  private notify(): void {
    for (const listener of [...this.listeners]) listener();
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
