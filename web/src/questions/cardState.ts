// The card reducer: what every question card is, and how each input
// changes it (C1–C5, P1–P5), as a pure function. It owns no timer, no
// stream and no storage. Each step returns the next state and the effects
// it asks for — send an outcome, open or close a claim, drive the card's
// countdown, save or remove a draft, call the late-answer RPC — in the
// order they must happen; the claim/countdown controller (claims.ts) and
// QuestionCards (cards.ts) carry them out and feed what comes back
// (claim frames, countdown expiry, RPC results) in again as actions.
//
// A card has two sources of truth that arrive independently. The forwarded
// request (a Remote Event waterfall from the Host) is the foreground answer
// channel: it ends when the Host says so. The projection view (the
// userQuestions fold of the Session log) says whether the call is still
// open, has continued (answerable through the late-answer RPC), or is gone.
// Local actions — a submission, a countdown expiry, a transport cancel
// frame — never decide on their own that a question is answered; only the
// projection does (C5).

import type { Assert, Fields, ReadsSome } from "../conforms";
import type { ClaimFrame, WaterfallRequest } from "../generated/wire";
import type { Answer, Call, Intent, Question, View, WireError } from "../wire";
import { Codes } from "../wire";
import { channelOf } from "./cardView";
import type { Disposition } from "./countdown";
import { callDraftKey as cardKeyOf, type Draft, type DraftAnswer } from "./drafts";
import { Text } from "./text";
import { isRecord } from "../json";

/** The payload of a user-questions/request Remote Event: the fields of the waterfall request (schemas/waterfall/request.json) a card uses. */
export interface RequestPayload {
  questions: Question[];
  intent?: Intent;
  /** Present on keyed requests; `timed` marks a countdown with an attachWait claim (W3). */
  wait?: { callId: string; timed?: boolean };
  /** The Host's original deadline of a timed wait (RFC 3339), for display only: the countdown comes from the claim (W3). */
  deadline?: string;
}

export type RequestPayloadConformance = Assert<ReadsSome<RequestPayload, WaterfallRequest>>;

/** The forwarded request a card holds. */
export interface LiveState {
  id: string;
  /** The request is timed: its answer channel waits for the claim's first frame (W3). */
  timed: boolean;
  /** The answer channel is attached: at once when untimed, after the claim's first frame when timed. */
  ready: boolean;
  /** The one outcome this Client sent, if any (W8 on our side: settle once). */
  outcome: "settled" | "rejected" | "delegated" | undefined;
  /** The claim stream is closed or was never opened. */
  claimEnded: boolean;
}

/** One card, as plain data. */
export interface CardState {
  readonly key: string;
  readonly session: string;
  /** Absent for an unkeyed blocking request (C2). */
  readonly callId: string | undefined;
  readonly questions: readonly Question[];
  readonly intent: Intent | undefined;
  readonly live: LiveState | undefined;
  /** The projection's entry for the call, while it is active. */
  readonly call: Call | undefined;
  readonly answers: Readonly<Record<string, DraftAnswer>>;
  readonly page: number;
  readonly disposition: Disposition | undefined;
  readonly focused: boolean;
  readonly visible: boolean;
  readonly busy: "waterfall" | "rpc" | "discard" | undefined;
  readonly expired: boolean;
  readonly hint: string | undefined;
  readonly message: string | undefined;
}

/** Every card, and the Sessions whose projection has been seen (removal waits for one, C5). */
export interface CardsState {
  readonly cards: ReadonlyMap<string, CardState>;
  readonly viewed: ReadonlySet<string>;
}

export const emptyCards: CardsState = { cards: new Map(), viewed: new Set() };

/** The inputs of the reducer. Drafts are read by the caller and passed in, so the reducer stays pure. */
export type CardAction =
  /** A forwarded request; key is its card key, draft the stored draft under it when no card exists yet. */
  | { type: "receive"; session: string; requestId: string; payload: RequestPayload; key: string; draft: Draft | undefined }
  | { type: "cancelled"; session: string; requestId: string }
  /** A projection view; drafts holds the stored drafts of calls that have no card yet. */
  | { type: "view"; session: string; view: View; drafts: Readonly<Record<string, Draft>> }
  | { type: "disconnected" }
  | { type: "teardown" }
  | { type: "claimFrame"; key: string; requestId: string; data: unknown }
  | { type: "claimClosed"; key: string; requestId: string; error: WireError | undefined }
  | { type: "expired"; key: string; requestId: string }
  | { type: "open"; key: string }
  | { type: "dismiss"; key: string }
  | { type: "focus"; key: string }
  | { type: "blur"; key: string }
  | { type: "select"; key: string; questionId: string; label: string }
  | { type: "setCustom"; key: string; questionId: string; text: string }
  | { type: "skip"; key: string; questionId: string }
  | { type: "takeTime"; key: string }
  | { type: "setPage"; key: string; page: number }
  | { type: "submit"; key: string }
  | {
      type: "answered";
      key: string;
      accepted: boolean;
      /** Why the RPC did not accept the answer, when it said. */
      reason: WireError | undefined;
      error: { code: string | undefined; message: string } | undefined;
    }
  | { type: "discard"; key: string }
  | { type: "discarded"; key: string; error: { code: string | undefined; message: string } | undefined };

/** The countdown operations a card asks of its controller. */
export type CountdownOp =
  | { op: "start"; requestId: string; disposition: Disposition | undefined; focused: boolean }
  | { op: "attach"; remainingMs: number }
  | { op: "focus" }
  | { op: "blur" }
  | { op: "freeze"; disposition: Disposition }
  | { op: "stop" }
  /** Stops and forgets it: the wait has no Host deadline, or the card is gone. */
  | { op: "drop" };

/** What the reducer asks the world to do, in order. */
export type CardEffect =
  | { kind: "settle"; requestId: string; answers: Answer[] }
  | { kind: "reject"; requestId: string; error: WireError }
  | { kind: "delegate"; requestId: string }
  | { kind: "claimOpen"; key: string; requestId: string; session: string; callId: string }
  | { kind: "claimClose"; requestId: string }
  | ({ kind: "countdown"; key: string } & CountdownOp)
  | { kind: "saveDraft"; key: string; draft: Omit<Draft, "savedAt"> }
  | { kind: "removeDraft"; key: string }
  | { kind: "answerRPC"; key: string; session: string; callId: string; answers: Answer[] }
  | { kind: "discardRPC"; key: string; session: string; messageId: string };

export interface Step {
  state: CardsState;
  effects: CardEffect[];
}

/** The reducer: the next state after action, and the effects it asks for. state is never changed. */
export function reduceCards(state: CardsState, action: CardAction): Step {
  const s = new Stepper(state);
  s.apply(action);
  return { state: s.result(), effects: s.effects };
}

/** The card key of a keyed question: its draft key (one per Session and call). */
export const cardKey = cardKeyOf;

/** Why a forwarded request's payload cannot make a card, or undefined when it can. */
export function payloadProblem(payload: RequestPayload | undefined): string | undefined {
  if (!isRecord(payload) || !Array.isArray(payload.questions) || payload.questions.length === 0) {
    return "the request carries no questions";
  }
  if (!payload.questions.every((q) => isRecord(q) && typeof q.id === "string" && q.id !== "" && typeof q.question === "string")) {
    return "a question of the request has no id or text";
  }
  const wait: unknown = payload.wait;
  if (wait !== undefined && (!isRecord(wait) || typeof wait.callId !== "string" || wait.callId === "")) {
    return "the request's wait has no callId";
  }
  return undefined;
}

/** The remainingMs of a claimed wait without a Host deadline. */
const noHostDeadline = -1;

const recommended = /\(Recommended\)\s*$/;

/**
 * Gives every question without a drafted answer its starting one: the
 * "(Recommended)" option pre-selected (only the first for a single-select
 * question). A pre-selection is not an edit (P2).
 */
function withDefaults(questions: readonly Question[], answers: Readonly<Record<string, DraftAnswer>>): Record<string, DraftAnswer> {
  const out = { ...answers };
  for (const q of questions) {
    if (out[q.id]) continue;
    const labels = (q.options ?? []).map((o) => o.label).filter((l) => recommended.test(l));
    out[q.id] = { selected: q.multiSelect ? labels : labels.slice(0, 1), custom: "" };
  }
  return out;
}

/** The answer batch of a card: every question exactly once, in question order (D6). */
function batchOf(card: CardState): Answer[] {
  return card.questions.map((q) => {
    const drafted = card.answers[q.id];
    const answer: Answer = { id: q.id, selected: [...(drafted?.selected ?? [])] };
    if (drafted && drafted.custom.trim() !== "") answer.custom = drafted.custom;
    return answer;
  });
}

/** One reducer step: a copy-on-write card map and the effects so far. */
class Stepper {
  readonly effects: CardEffect[] = [];
  private cards: Map<string, CardState> | undefined;
  private viewed: Set<string> | undefined;

  constructor(private readonly from: CardsState) {}

  result(): CardsState {
    if (!this.cards && !this.viewed) return this.from;
    return { cards: this.cards ?? this.from.cards, viewed: this.viewed ?? this.from.viewed };
  }

  private get(key: string): CardState | undefined {
    return (this.cards ?? this.from.cards).get(key);
  }

  private all(): CardState[] {
    return [...(this.cards ?? this.from.cards).values()];
  }

  private put(card: CardState): CardState {
    this.cards ??= new Map(this.from.cards);
    // Re-setting keeps the card's place: cards list in arrival order.
    this.cards.set(card.key, card);
    return card;
  }

  private update(card: CardState, change: Partial<CardState>): CardState {
    return this.put({ ...card, ...change });
  }

  private emit(...effects: CardEffect[]): void {
    this.effects.push(...effects);
  }

  private countdown(key: string, op: CountdownOp): void {
    this.emit({ kind: "countdown", key, ...op });
  }

  apply(a: CardAction): void {
    switch (a.type) {
      case "receive":
        return this.receive(a);
      case "cancelled":
        return this.cancelled(a.session, a.requestId);
      case "view":
        return this.view(a.session, a.view, a.drafts);
      case "disconnected":
        return this.disconnected();
      case "teardown":
        return this.teardown();
      case "claimFrame":
        return this.withLive(a.key, a.requestId, (card, live) => this.claimFrame(card, live, a.data));
      case "claimClosed":
        return this.claimClosed(a.key, a.requestId, a.error);
      case "expired":
        return this.withLive(a.key, a.requestId, (card, live) => this.expire(card, live));
      case "open":
        return this.onCard(a.key, (card) => this.update(card, { visible: true }));
      case "dismiss":
        return this.onCard(a.key, (card) => this.dismiss(card));
      case "focus":
        return this.onCard(a.key, (card) => {
          this.update(card, { focused: true });
          this.countdown(card.key, { op: "focus" });
        });
      case "blur":
        return this.onCard(a.key, (card) => {
          this.update(card, { focused: false });
          this.countdown(card.key, { op: "blur" });
        });
      case "select":
        return this.onEditable(a.key, (card) => this.select(card, a.questionId, a.label));
      case "setCustom":
        return this.onEditable(a.key, (card) => {
          const answer = card.answers[a.questionId];
          if (!answer) return;
          const next: DraftAnswer = { ...answer, custom: a.text };
          if (a.text.trim() !== "") delete next.skipped;
          this.edited(card, a.questionId, next);
        });
      case "skip":
        return this.onEditable(a.key, (card) => {
          if (!card.answers[a.questionId]) return;
          this.edited(card, a.questionId, { selected: [], custom: "", skipped: true });
        });
      case "takeTime":
        return this.onCard(a.key, (card) => {
          if (card.disposition) return;
          const held = this.update(card, { disposition: "held" });
          this.countdown(card.key, { op: "freeze", disposition: "held" });
          this.save(held);
        });
      case "setPage":
        return this.onCard(a.key, (card) => {
          if (!Number.isInteger(a.page) || a.page < 0 || a.page >= card.questions.length) return;
          const paged = this.update(card, { page: a.page });
          if (paged.disposition) this.save(paged);
        });
      case "submit":
        return this.onCard(a.key, (card) => this.submit(card));
      case "answered":
        return this.onCard(a.key, (card) => {
          if (card.busy !== "rpc") return;
          let message: string | undefined;
          if (a.error) message = a.error.code === Codes.replyQueued ? Text.replyQueued : a.error.message;
          else if (!a.accepted) message = Text.refused(a.reason);
          this.update(card, { busy: undefined, message, visible: a.accepted && !a.error ? false : card.visible });
        });
      case "discard":
        return this.onCard(a.key, (card) => {
          const queued = card.call?.queued;
          if (!queued || card.busy || card.callId === undefined) return;
          this.update(card, { busy: "discard", message: undefined });
          this.emit({ kind: "discardRPC", key: card.key, session: card.session, messageId: queued.messageId });
        });
      case "discarded":
        return this.onCard(a.key, (card) => {
          if (card.busy !== "discard") return;
          const code = a.error?.code;
          const message = !a.error ? undefined : code === Codes.conflict || code === Codes.notFound ? Text.discardTooLate : a.error.message;
          this.update(card, { busy: undefined, message });
        });
    }
  }

  private onCard(key: string, f: (card: CardState) => void): void {
    const card = this.get(key);
    if (card) f(card);
  }

  /** A card that takes edits: not busy, and no late reply queued. */
  private onEditable(key: string, f: (card: CardState) => void): void {
    const card = this.get(key);
    if (card && !card.busy && !card.call?.queued) f(card);
  }

  /** Runs f when key's card still holds the forwarded request requestId. */
  private withLive(key: string, requestId: string, f: (card: CardState, live: LiveState) => void): void {
    const card = this.get(key);
    if (card?.live?.id === requestId) f(card, card.live);
  }

  /**
   * A forwarded request. A keyed request joins its (Session, callId) card
   * (C1); an unkeyed one gets a card of its own under a reload-unique key
   * (C2). A timed request opens its attachWait claim at once; its answer
   * channel attaches when the claim's first frame arrives (W3). A payload
   * that is unusable is rejected and makes no card.
   */
  private receive(a: Extract<CardAction, { type: "receive" }>): void {
    const problem = payloadProblem(a.payload);
    if (problem) {
      this.emit({ kind: "reject", requestId: a.requestId, error: { code: Codes.badRequest, message: problem } });
      return;
    }
    const { questions, intent, wait } = a.payload;
    const callId = wait?.callId;
    let card = this.get(a.key);
    if (card && callId !== undefined && card.live?.id === a.requestId) return; // forwarded again, e.g. after a reconnect
    if (card) card = this.endLive(card);
    else card = this.create(a.key, a.session, callId, questions, a.draft, true);
    const timed = callId !== undefined && wait?.timed === true;
    card = this.update(card, {
      questions,
      answers: withDefaults(questions, card.answers),
      intent,
      visible: true,
      busy: undefined,
      expired: false,
      hint: undefined,
      message: undefined,
      live: { id: a.requestId, timed, ready: !timed, outcome: undefined, claimEnded: !timed },
    });
    if (timed && callId !== undefined) {
      this.countdown(card.key, { op: "start", requestId: a.requestId, disposition: card.disposition, focused: card.focused });
      this.emit({ kind: "claimOpen", key: card.key, requestId: a.requestId, session: a.session, callId });
    }
  }

  /**
   * The Host ended a forwarded request (answered here or elsewhere, expired,
   * aborted). This alone never decides that the question is answered: a
   * keyed card stays while the projection lists its call (C5). An unkeyed
   * card ends with its waterfall.
   */
  private cancelled(session: string, requestId: string): void {
    const found = this.all().find((c) => c.session === session && c.live?.id === requestId);
    if (!found) return;
    const card = this.endLive(found);
    if (card.callId === undefined) this.remove(card);
    else this.removeIfGone(card);
  }

  /**
   * Folds a projection view: hidden cards for calls this Client has no
   * request for, the RPC channel for calls that continued (re-arming a
   * waterfall submission that did not arrive, C4), and removal of keyed
   * cards whose call left the active projection once no forwarded request
   * remains (C5).
   */
  private view(session: string, view: View, drafts: Readonly<Record<string, Draft>>): void {
    if (!this.from.viewed.has(session)) {
      this.viewed ??= new Set(this.from.viewed);
      this.viewed.add(session);
    }
    const active = new Set<string>();
    for (const call of view.active) {
      active.add(call.callId);
      const key = cardKeyOf(session, call.callId);
      let card = this.get(key) ?? this.create(key, session, call.callId, call.questions, drafts[key], false);
      card = this.update(card, { call });
      if (!card.live) card = this.update(card, { questions: call.questions, answers: withDefaults(call.questions, card.answers) });
      if (call.status === "continued") {
        this.countdown(key, { op: "stop" }); // the foreground wait is over
        if (card.busy === "waterfall") this.update(card, { busy: undefined, hint: Text.resubmit });
      }
    }
    for (const card of this.all()) {
      if (card.session !== session || card.callId === undefined || active.has(card.callId)) continue;
      this.removeIfGone(this.update(card, { call: undefined }));
    }
  }

  /** The connection dropped: every forwarded request and claim of this Client is gone. */
  private disconnected(): void {
    for (const found of this.all()) {
      if (!found.live) continue;
      // The claim went with the connection: nothing to close.
      const card = this.endLive(this.update(found, { live: { ...found.live, claimEnded: true } }));
      if (card.callId === undefined) this.remove(card);
      else this.removeIfGone(card);
    }
  }

  /**
   * Client teardown (page unload): each unanswered request releases its
   * claim and then delegates, so the Host can pass it on (W4). Drafts stay
   * for the next load.
   */
  private teardown(): void {
    for (const found of this.all()) {
      if (!found.live) continue;
      const card = this.closeClaim(found);
      this.finish(card, "delegated", { kind: "delegate", requestId: found.live.id });
      this.countdown(card.key, { op: "stop" });
    }
  }

  /**
   * The claim's first frame attaches the answer channel and starts the local
   * countdown from the Host's remainingMs (W3); -1 means the wait has no Host
   * deadline, so no countdown runs. The Host's closing frame ({closed: true})
   * ends the claim like a close.
   */
  private claimFrame(card: CardState, live: LiveState, data: unknown): void {
    if (live.claimEnded) return;
    // Read by the field names of the claim frame's schema (schemas/frames/claim.json).
    const frame: Fields<ClaimFrame> | undefined = isRecord(data) ? data : undefined;
    if (frame?.closed === true) {
      // The Host's closing message: the stream is over, nothing to close.
      this.claimEnded(this.update(card, { live: { ...live, claimEnded: true } }), undefined);
      return;
    }
    if (live.ready || live.outcome) return;
    const remainingMs = frame?.remainingMs;
    if (typeof remainingMs !== "number" || !Number.isFinite(remainingMs) || (remainingMs < 0 && remainingMs !== noHostDeadline)) {
      this.claimFailed(card, { code: Codes.badRequest, message: "the attachWait frame carries no valid remainingMs" });
      return;
    }
    this.update(card, { live: { ...live, ready: true } });
    this.countdown(card.key, remainingMs === noHostDeadline ? { op: "drop" } : { op: "attach", remainingMs });
  }

  private claimClosed(key: string, requestId: string, error: WireError | undefined): void {
    const card = this.get(key);
    if (card?.live?.id !== requestId || card.live.claimEnded) return;
    this.claimEnded(this.update(card, { live: { ...card.live, claimEnded: true } }), error);
  }

  private claimEnded(card: CardState, error: WireError | undefined): void {
    if (error) {
      this.claimFailed(card, error);
      return;
    }
    // The Host closes claims when the foreground request settles (W4); its
    // end notice follows. No claim, no local deadline.
    this.countdown(card.key, { op: "stop" });
  }

  /** A terminal claim-stream failure rejects the foreground question (SPEC §7). */
  private claimFailed(found: CardState, error: WireError): void {
    const card = this.closeClaim(found);
    if (card.live) this.finish(card, "rejected", { kind: "reject", requestId: card.live.id, error });
    this.countdown(card.key, { op: "stop" });
  }

  /** Countdown expiry rejects the request with ASK_TIMED_OUT, once (W5). The claim stays until the Host closes it (W4). */
  private expire(card: CardState, live: LiveState): void {
    if (this.finish(card, "rejected", { kind: "reject", requestId: live.id, error: { code: Codes.askTimedOut, message: Text.timedOut } })) {
      const now = this.get(card.key);
      if (now) this.update(now, { expired: true });
    }
  }

  /**
   * The user closes the panel. A keyed card only hides: its claim and
   * countdown keep running and nothing is sent (P4, D9). An unkeyed blocking
   * request is rejected with ASK_CANCELLED and its card ends (C2).
   */
  private dismiss(card: CardState): void {
    if (card.callId !== undefined) {
      this.update(card, { visible: false });
      return;
    }
    if (card.live) this.finish(card, "rejected", { kind: "reject", requestId: card.live.id, error: { code: Codes.askCancelled, message: Text.cancelled } });
    const now = this.get(card.key);
    if (now) this.remove(now);
  }

  /** Chooses an option: replaces the choice of a single-select question, toggles a multi-select one. */
  private select(card: CardState, questionId: string, label: string): void {
    const question = card.questions.find((q) => q.id === questionId);
    const answer = card.answers[questionId];
    if (!question || !answer || !question.options?.some((o) => o.label === label)) return;
    let selected: string[];
    if (!question.multiSelect) selected = [label];
    else if (answer.selected.includes(label)) selected = answer.selected.filter((l) => l !== label);
    else selected = [...answer.selected, label];
    this.edited(card, questionId, { selected, custom: answer.custom });
  }

  /** An edit: the first one freezes the countdown; every edit is saved (P2). */
  private edited(card: CardState, questionId: string, answer: DraftAnswer): void {
    let next = this.update(card, { answers: { ...card.answers, [questionId]: answer } });
    if (next.disposition !== "edited") {
      next = this.update(next, { disposition: "edited" });
      this.countdown(card.key, { op: "freeze", disposition: "edited" });
    }
    this.save(next);
  }

  /**
   * Submits the draft through the card's channel (C3). Through the
   * waterfall the card keeps its draft and stays busy until the projection
   * reconciles (C4); an unkeyed card ends with its outcome. Through the
   * RPC the card is busy until the answer comes back.
   */
  private submit(found: CardState): void {
    const channel = channelOf(found);
    if (channel === "none" || found.busy || found.call?.queued) return;
    const card = this.update(found, { hint: undefined, message: undefined });
    const answers = batchOf(card);
    const live = card.live;
    if (channel === "waterfall" && live) {
      this.finish(card, "settled", { kind: "settle", requestId: live.id, answers });
      this.countdown(card.key, { op: "stop" });
      const now = this.get(card.key);
      if (!now) return;
      if (now.callId === undefined) this.remove(now);
      else this.update(now, { busy: "waterfall" });
      return;
    }
    if (card.callId === undefined) return;
    this.update(card, { busy: "rpc" });
    this.emit({ kind: "answerRPC", key: card.key, session: card.session, callId: card.callId, answers });
  }

  /** Sends an outcome unless the request already has one. Returns whether it was sent. */
  private finish(card: CardState, outcome: NonNullable<LiveState["outcome"]>, effect: CardEffect): boolean {
    const now = this.get(card.key) ?? card;
    if (!now.live || now.live.outcome) return false;
    this.update(now, { live: { ...now.live, outcome } });
    this.emit(effect);
    return true;
  }

  private closeClaim(card: CardState): CardState {
    const now = this.get(card.key) ?? card;
    const live = now.live;
    if (!live || live.claimEnded) return now;
    this.emit({ kind: "claimClose", requestId: live.id });
    return this.update(now, { live: { ...live, claimEnded: true } });
  }

  /** Drops the card's forwarded request: its claim is released and its countdown stops. */
  private endLive(card: CardState): CardState {
    if (!card.live) return card;
    const closed = this.closeClaim(card);
    this.countdown(card.key, { op: "stop" });
    return this.update(closed, { live: undefined });
  }

  /** C5: a keyed card goes once its call is absent from the active projection and no forwarded request remains. */
  private removeIfGone(card: CardState): void {
    if (card.callId !== undefined && !card.call && !card.live && (this.viewed ?? this.from.viewed).has(card.session)) this.remove(card);
  }

  /** Removal closes the card and clears its draft. */
  private remove(card: CardState): void {
    this.endLive(card);
    this.countdown(card.key, { op: "drop" });
    this.emit({ kind: "removeDraft", key: card.key });
    this.cards ??= new Map(this.from.cards);
    this.cards.delete(card.key);
  }

  private create(key: string, session: string, callId: string | undefined, questions: readonly Question[], draft: Draft | undefined, visible: boolean): CardState {
    return this.put({
      key,
      session,
      callId,
      questions,
      intent: undefined,
      live: undefined,
      call: undefined,
      answers: withDefaults(questions, draft?.answers ?? {}),
      page: draft ? Math.min(draft.page, Math.max(0, questions.length - 1)) : 0,
      disposition: draft?.disposition,
      focused: false,
      visible,
      busy: undefined,
      expired: false,
      hint: undefined,
      message: undefined,
    });
  }

  private save(card: CardState): void {
    this.emit({ kind: "saveDraft", key: card.key, draft: { answers: { ...card.answers }, page: card.page, disposition: card.disposition } });
  }
}
