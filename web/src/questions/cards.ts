// QuestionCards: one card per question, shared by the live forwarded request
// and the durable projection (C1–C5), with its local countdown (P1–P4) and
// browser-local draft (P2).
//
// A card has two sources of truth that arrive independently. The forwarded
// request (a Remote Event waterfall from the Host) is the foreground answer
// channel: it ends when the Host says so. The projection view (the
// userQuestions fold of the Session log) says whether the call is still open,
// has continued (answerable through the late-answer RPC), or is gone. Local
// actions — a submission, a countdown expiry, a transport cancel frame —
// never decide on their own that a question is answered; only the
// projection does (C5).

import type { Answer, Call, CallStatus, Intent, Queued, Question, View, WireError } from "../wire";
import { Codes, codeOf } from "../wire";
import type { Clock } from "./clock";
import { Countdown, type CountdownPhase, type Disposition } from "./countdown";
import { callDraftKey, type DraftAnswer, type DraftStore } from "./drafts";
import { Text } from "./text";
import { isRecord } from "../json";

/** How a card's answer would travel if submitted now (C3). */
export type ChannelKind = "waterfall" | "rpc" | "none";

/** The outcome side of one forwarded Remote Event request. Each request takes exactly one outcome. */
export interface AnswerChannel {
  settle(value: { answers: Answer[] }): void;
  reject(error: WireError): void;
  delegate(): void;
}

/** The payload of a user-questions/request Remote Event. */
export interface RequestPayload {
  questions: Question[];
  intent?: Intent;
  /** Present on keyed requests; `timed` marks a countdown with an attachWait claim (W3). */
  wait?: { callId: string; timed?: boolean };
}

/** A request the gateway forwarded from the Host. */
export interface ForwardedRequest {
  session: string;
  requestId: string;
  payload: RequestPayload;
  channel: AnswerChannel;
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

/** The result of the userQuestions.answer RPC. */
export interface AnswerResult {
  accepted: boolean;
  messageId?: string;
}

/** What the cards need from the connection to the gateway. */
export interface QuestionsTransport {
  /** Opens the attachWait claim stream of (session, callId). */
  attachWait(session: string, callId: string, handlers: ClaimHandlers): Claim;
  /** Sends a late answer; rejects with a RemoteError carrying the code. */
  answer(session: string, callId: string, answers: Answer[]): Promise<AnswerResult>;
  /** Discards a queued inbox message before admission (D8); rejects with a RemoteError carrying the code. */
  discard(session: string, messageId: string): Promise<void>;
}

/** A card as the UI renders it: a fresh snapshot on each read. */
export interface CardView {
  key: string;
  session: string;
  /** Absent for an unkeyed blocking request (C2). */
  callId: string | undefined;
  questions: readonly Question[];
  intent: Intent | undefined;
  /** The projection's status of the call, when it lists it. */
  status: CallStatus | undefined;
  /** The panel is shown; hiding it keeps claim and countdown running (P4). */
  visible: boolean;
  /** This Client holds a forwarded request for the card (a live answer channel, or one attaching). */
  live: boolean;
  channel: ChannelKind;
  canSubmit: boolean;
  /** A submission is in flight or awaiting reconciliation (C4). */
  busy: boolean;
  /** A discard of the queued reply is in flight (P5). */
  discarding: boolean;
  /** Controls are disabled: busy, or a late reply is queued. */
  locked: boolean;
  /** Whether to move focus into the panel (P3). */
  autofocus: boolean;
  countdown: { phase: CountdownPhase; label: string | undefined; remainingMs: number | undefined } | undefined;
  /** The card's situation, e.g. "Work continued — you can still answer". */
  notice: string | undefined;
  /** Why submission is disabled or must be repeated. */
  hint: string | undefined;
  /** The result of the last submission when it needs saying (REPLY_QUEUED, no longer answerable). */
  message: string | undefined;
  /** The drafted answers by question id. */
  draft: Readonly<Record<string, DraftAnswer>>;
  page: number;
  disposition: Disposition | undefined;
  queued: Queued | undefined;
}

export interface QuestionCardsOptions {
  transport: QuestionsTransport;
  clock: Clock;
  drafts: DraftStore;
}

/** The forwarded request a card currently holds. */
interface Live {
  id: string;
  channel: AnswerChannel;
  /** The answer channel is attached: at once when untimed, after the claim's first frame when timed. */
  ready: boolean;
  /** The one outcome this Client sent, if any (W8 on our side: settle once). */
  outcome: "settled" | "rejected" | "delegated" | undefined;
  claim: Claim | undefined;
  claimEnded: boolean;
}

interface Card {
  key: string;
  session: string;
  callId: string | undefined;
  questions: Question[];
  intent: Intent | undefined;
  live: Live | undefined;
  /** The projection's entry for the call, while it is active. */
  call: Call | undefined;
  countdown: Countdown | undefined;
  answers: Record<string, DraftAnswer>;
  page: number;
  disposition: Disposition | undefined;
  focused: boolean;
  visible: boolean;
  busy: "waterfall" | "rpc" | "discard" | undefined;
  expired: boolean;
  hint: string | undefined;
  message: string | undefined;
}

export class QuestionCards {
  private readonly transport: QuestionsTransport;
  private readonly clock: Clock;
  private readonly drafts: DraftStore;
  private readonly cards = new Map<string, Card>();
  /** The latest projection view of each Session; removal waits for one (C5). */
  private readonly views = new Map<string, View>();
  private readonly listeners = new Set<() => void>();

  constructor(options: QuestionCardsOptions) {
    this.transport = options.transport;
    this.clock = options.clock;
    this.drafts = options.drafts;
  }

  /** The card key of a keyed question. */
  keyFor(session: string, callId: string): string {
    return callDraftKey(session, callId);
  }

  /** Calls listener after every change of any card. Returns the unsubscribe function. */
  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  get(key: string): CardView | undefined {
    const card = this.cards.get(key);
    return card && this.snapshot(card);
  }

  /** The cards of session, or of every Session, in arrival order. */
  list(session?: string): CardView[] {
    return [...this.cards.values()].filter((c) => session === undefined || c.session === session).map((c) => this.snapshot(c));
  }

  // ---- inputs from the connection ----

  /**
   * Takes a forwarded request. A keyed request joins its (Session, callId)
   * card (C1); an unkeyed one gets a card of its own under a reload-unique
   * key (C2). A timed request opens its attachWait claim at once; its answer
   * channel attaches when the claim's first frame arrives (W3). Returns the
   * card key, or undefined when the payload is unusable and was rejected.
   */
  receive(request: ForwardedRequest): string | undefined {
    const problem = payloadProblem(request.payload);
    if (problem) {
      request.channel.reject({ code: Codes.badRequest, message: problem });
      return undefined;
    }
    const { questions, intent, wait } = request.payload;
    const callId = wait?.callId;
    let card: Card;
    if (callId === undefined) {
      card = this.create(this.drafts.requestKey(), request.session, undefined, questions);
    } else {
      const existing = this.cards.get(this.keyFor(request.session, callId));
      if (existing?.live?.id === request.requestId) return existing.key; // forwarded again, e.g. after a reconnect
      if (existing) this.endLive(existing);
      card = existing ?? this.create(this.keyFor(request.session, callId), request.session, callId, questions);
      card.questions = questions;
      fillDefaults(card);
    }
    card.intent = intent;
    card.visible = true;
    card.busy = undefined;
    card.expired = false;
    card.hint = undefined;
    card.message = undefined;

    const timed = callId !== undefined && wait?.timed === true;
    const live: Live = { id: request.requestId, channel: request.channel, ready: !timed, outcome: undefined, claim: undefined, claimEnded: false };
    card.live = live;
    if (timed && callId !== undefined) {
      card.countdown = new Countdown({
        clock: this.clock,
        disposition: card.disposition,
        onExpire: () => this.expire(card, live),
        onChange: () => this.notify(),
      });
      if (card.focused) card.countdown.focus();
      const claim = this.transport.attachWait(request.session, callId, {
        frame: (data) => this.claimFrame(card, live, data),
        closed: (error) => this.claimClosed(card, live, error),
      });
      if (!live.claimEnded) live.claim = claim;
    }
    this.notify();
    return card.key;
  }

  /**
   * The Host ended a forwarded request (answered here or elsewhere, expired,
   * aborted). This alone never decides that the question is answered: a
   * keyed card stays while the projection lists its call (C5). An unkeyed
   * card ends with its waterfall.
   */
  cancelled(session: string, requestId: string): void {
    const card = [...this.cards.values()].find((c) => c.session === session && c.live?.id === requestId);
    if (!card) return;
    this.endLive(card);
    if (card.callId === undefined) this.remove(card);
    else this.removeIfGone(card);
    this.notify();
  }

  /**
   * Folds a new projection view of session into the cards: creates hidden
   * cards for calls this Client has no request for, moves cards to the RPC
   * channel when their call continued (re-arming a waterfall submission that
   * did not arrive, C4), and removes keyed cards whose call left the active
   * projection once no forwarded request remains (C5).
   */
  reconcile(session: string, view: View): void {
    this.views.set(session, view);
    const active = new Set<string>();
    for (const call of view.active) {
      active.add(call.callId);
      const key = this.keyFor(session, call.callId);
      const card = this.cards.get(key) ?? this.create(key, session, call.callId, call.questions, false);
      card.call = call;
      if (!card.live) {
        card.questions = call.questions;
        fillDefaults(card);
      }
      if (call.status === "continued") {
        card.countdown?.stop(); // the foreground wait is over
        if (card.busy === "waterfall") {
          card.busy = undefined;
          card.hint = Text.resubmit;
        }
      }
    }
    for (const card of [...this.cards.values()]) {
      if (card.session !== session || card.callId === undefined || active.has(card.callId)) continue;
      card.call = undefined;
      this.removeIfGone(card);
    }
    this.notify();
  }

  /** The connection dropped: every forwarded request and claim of this Client is gone. */
  disconnected(): void {
    for (const card of [...this.cards.values()]) {
      if (!card.live) continue;
      card.live.claimEnded = true;
      card.live.claim = undefined;
      this.endLive(card);
      if (card.callId === undefined) this.remove(card);
      else this.removeIfGone(card);
    }
    this.notify();
  }

  /**
   * Client teardown (page unload): each unanswered request releases its
   * claim and then delegates, so the Host can pass it on (W4). Drafts stay
   * for the next load.
   */
  teardown(): void {
    for (const card of this.cards.values()) {
      const live = card.live;
      if (!live) continue;
      closeClaim(live);
      finish(live, "delegated", () => live.channel.delegate());
      card.countdown?.stop();
    }
  }

  // ---- panel actions ----

  /** Shows the panel, e.g. from the tool row (P4). */
  open(key: string): void {
    const card = this.cards.get(key);
    if (!card) return;
    card.visible = true;
    this.notify();
  }

  /**
   * The user closes the panel. A keyed card only hides: its claim and
   * countdown keep running and nothing is sent (P4, D9). An unkeyed blocking
   * request is rejected with ASK_CANCELLED and its card ends (C2).
   */
  dismiss(key: string): void {
    const card = this.cards.get(key);
    if (!card) return;
    if (card.callId === undefined) {
      const live = card.live;
      if (live) finish(live, "rejected", () => live.channel.reject({ code: Codes.askCancelled, message: Text.cancelled }));
      this.remove(card);
    } else {
      card.visible = false;
    }
    this.notify();
  }

  /**
   * Manual focus on the answer surface pauses the countdown (P1). Only a
   * pristine surface has a countdown left to pause: the first edit or Take
   * time froze it for good.
   */
  focus(key: string): void {
    const card = this.cards.get(key);
    if (!card) return;
    card.focused = true;
    card.countdown?.focus();
    this.notify();
  }

  blur(key: string): void {
    const card = this.cards.get(key);
    if (!card) return;
    card.focused = false;
    card.countdown?.blur();
    this.notify();
  }

  /** Chooses an option: replaces the choice of a single-select question, toggles a multi-select one. An edit (P2). */
  select(key: string, questionId: string, label: string): void {
    const card = this.editable(key);
    const question = card?.questions.find((q) => q.id === questionId);
    const answer = card?.answers[questionId];
    if (!card || !question || !answer || !question.options?.some((o) => o.label === label)) return;
    if (!question.multiSelect) answer.selected = [label];
    else if (answer.selected.includes(label)) answer.selected = answer.selected.filter((l) => l !== label);
    else answer.selected = [...answer.selected, label];
    delete answer.skipped;
    this.edited(card);
  }

  /** Sets a question's free text. An edit (P2). */
  setCustom(key: string, questionId: string, text: string): void {
    const card = this.editable(key);
    const answer = card?.answers[questionId];
    if (!card || !answer) return;
    answer.custom = text;
    if (text.trim() !== "") delete answer.skipped;
    this.edited(card);
  }

  /** Skips a question: an empty answer (no selection, no text) given on purpose. An edit (P2). */
  skip(key: string, questionId: string): void {
    const card = this.editable(key);
    const answer = card?.answers[questionId];
    if (!card || !answer) return;
    answer.selected = [];
    answer.custom = "";
    answer.skipped = true;
    this.edited(card);
  }

  /** Take time: freezes the countdown without an edit; saved with the draft (P2). */
  takeTime(key: string): void {
    const card = this.cards.get(key);
    if (!card || card.disposition) return;
    card.disposition = "held";
    card.countdown?.freeze("held");
    this.save(card);
    this.notify();
  }

  /** Moves between questions. Not an edit: the countdown keeps running (P2). */
  setPage(key: string, page: number): void {
    const card = this.cards.get(key);
    if (!card || !Number.isInteger(page) || page < 0 || page >= card.questions.length) return;
    card.page = page;
    if (card.disposition) this.save(card);
    this.notify();
  }

  /**
   * Submits the draft through the card's channel (C3). Through the
   * waterfall the card keeps its draft and stays busy until the projection
   * reconciles (C4); an unkeyed card ends with its outcome. Through the RPC
   * an accepted answer hides the panel without settling anything; a refusal
   * becomes the card's message. Resolves true when the answer was handed to
   * the waterfall or accepted by the RPC.
   */
  async submit(key: string): Promise<boolean> {
    const card = this.cards.get(key);
    if (!card || !this.snapshot(card).canSubmit) return false;
    const answers = batchOf(card);
    card.hint = undefined;
    card.message = undefined;
    const live = card.live;
    if (this.channelOf(card) === "waterfall" && live) {
      finish(live, "settled", () => live.channel.settle({ answers }));
      card.countdown?.stop();
      if (card.callId === undefined) this.remove(card);
      else card.busy = "waterfall";
      this.notify();
      return true;
    }
    const callId = card.callId;
    if (callId === undefined) return false;
    card.busy = "rpc";
    this.notify();
    let accepted = false;
    try {
      accepted = (await this.transport.answer(card.session, callId, answers)).accepted;
      if (accepted) card.visible = false;
      else card.message = Text.notAnswerable;
    } catch (err) {
      card.message = codeOf(err) === Codes.replyQueued ? Text.replyQueued : errorText(err);
    }
    card.busy = undefined;
    this.notify();
    return accepted;
  }

  /**
   * Takes back the card's queued late reply before the agent admits it
   * (P5, D8, §7): the Session's agent discards the inbox message. The card
   * stays locked until the projection drops the queued reply, and is then
   * answerable again (C4). A refusal — the agent took the reply meanwhile,
   * or is not running — becomes the card's message. Resolves true when the
   * discard went through.
   */
  async discardQueued(key: string): Promise<boolean> {
    const card = this.cards.get(key);
    const queued = card?.call?.queued;
    if (!card || !queued || card.busy) return false;
    card.busy = "discard";
    card.message = undefined;
    this.notify();
    let discarded = false;
    try {
      await this.transport.discard(card.session, queued.messageId);
      discarded = true;
    } catch (err) {
      const code = codeOf(err);
      card.message = code === Codes.conflict || code === Codes.notFound ? Text.discardTooLate : errorText(err);
    }
    card.busy = undefined;
    this.notify();
    return discarded;
  }

  // ---- internals ----

  private create(key: string, session: string, callId: string | undefined, questions: Question[], visible = true): Card {
    const card: Card = {
      key,
      session,
      callId,
      questions,
      intent: undefined,
      live: undefined,
      call: undefined,
      countdown: undefined,
      answers: {},
      page: 0,
      disposition: undefined,
      focused: false,
      visible,
      busy: undefined,
      expired: false,
      hint: undefined,
      message: undefined,
    };
    const draft = this.drafts.load(key);
    if (draft) {
      card.answers = draft.answers;
      card.page = Math.min(draft.page, Math.max(0, questions.length - 1));
      card.disposition = draft.disposition;
    }
    fillDefaults(card);
    this.cards.set(key, card);
    return card;
  }

  private channelOf(card: Card): ChannelKind {
    if (card.call?.status === "continued" && card.callId !== undefined) return "rpc";
    const live = card.live;
    if (live && live.ready && !live.outcome) return "waterfall";
    return "none";
  }

  private snapshot(card: Card): CardView {
    const channel = this.channelOf(card);
    const queued = card.call?.queued;
    const busy = card.busy !== undefined;
    const locked = busy || queued !== undefined;
    const countdown = card.countdown;
    return {
      key: card.key,
      session: card.session,
      callId: card.callId,
      questions: card.questions,
      intent: card.intent,
      status: card.call?.status,
      visible: card.visible,
      live: card.live !== undefined && card.live.outcome === undefined,
      channel,
      canSubmit: channel !== "none" && !locked,
      busy,
      discarding: card.busy === "discard",
      locked,
      autofocus: card.visible && channel !== "none" && !countdown?.active && !locked,
      countdown: countdown && { phase: countdown.phase, label: countdown.label(), remainingMs: countdown.remainingMs() },
      notice: card.call?.status === "continued" || card.expired ? Text.workContinued : undefined,
      hint: this.hintOf(card, channel, busy, queued),
      message: card.message,
      draft: Object.fromEntries(Object.entries(card.answers).map(([id, a]) => [id, a.skipped ? { selected: [], custom: "", skipped: true } : { selected: [...a.selected], custom: a.custom }])),
      page: card.page,
      disposition: card.disposition,
      queued,
    };
  }

  private hintOf(card: Card, channel: ChannelKind, busy: boolean, queued: Queued | undefined): string | undefined {
    if (busy) return undefined;
    if (queued) return Text.queued;
    if (card.hint) return card.hint;
    if (channel !== "none") return undefined;
    const live = card.live;
    if (live && !live.outcome && !live.ready) return Text.attaching;
    if (live?.outcome || card.expired) return undefined; // our outcome is out; the projection decides next
    return Text.noChannel;
  }

  /**
   * The claim's first frame attaches the answer channel and starts the local
   * countdown from the Host's remainingMs (W3); -1 means the wait has no Host
   * deadline, so no countdown runs. The Host's closing frame ({closed: true})
   * ends the claim like a close.
   */
  private claimFrame(card: Card, live: Live, data: unknown): void {
    if (card.live !== live || live.claimEnded) return;
    if (isRecord(data) && data.closed === true) {
      this.claimClosed(card, live, undefined);
      return;
    }
    if (live.ready || live.outcome) return;
    const remainingMs = isRecord(data) ? data.remainingMs : undefined;
    if (typeof remainingMs !== "number" || !Number.isFinite(remainingMs) || (remainingMs < 0 && remainingMs !== noHostDeadline)) {
      this.claimFailed(card, live, { code: Codes.badRequest, message: "the attachWait frame carries no valid remainingMs" });
      return;
    }
    live.ready = true;
    if (remainingMs === noHostDeadline) {
      card.countdown?.stop();
      card.countdown = undefined;
    } else {
      card.countdown?.attach(remainingMs);
    }
    this.notify();
  }

  private claimClosed(card: Card, live: Live, error: WireError | undefined): void {
    live.claimEnded = true;
    live.claim = undefined;
    if (card.live !== live) return;
    if (error) {
      this.claimFailed(card, live, error);
      return;
    }
    // The Host closes claims when the foreground request settles (W4); its
    // end notice follows. No claim, no local deadline.
    card.countdown?.stop();
    this.notify();
  }

  /** A terminal claim-stream failure rejects the foreground question (SPEC §7). */
  private claimFailed(card: Card, live: Live, error: WireError): void {
    closeClaim(live);
    finish(live, "rejected", () => live.channel.reject(error));
    card.countdown?.stop();
    this.notify();
  }

  /** Countdown expiry rejects the request with ASK_TIMED_OUT, once (W5). The claim stays until the Host closes it (W4). */
  private expire(card: Card, live: Live): void {
    if (card.live !== live) return;
    if (finish(live, "rejected", () => live.channel.reject({ code: Codes.askTimedOut, message: Text.timedOut }))) card.expired = true;
    this.notify();
  }

  /** Drops the card's forwarded request: its claim is released and its countdown stops. */
  private endLive(card: Card): void {
    if (!card.live) return;
    closeClaim(card.live);
    card.countdown?.stop();
    card.live = undefined;
  }

  /** C5: a keyed card goes once its call is absent from the active projection and no forwarded request remains. */
  private removeIfGone(card: Card): void {
    if (card.callId !== undefined && !card.call && !card.live && this.views.has(card.session)) this.remove(card);
  }

  /** Removal closes the card and clears its draft. */
  private remove(card: Card): void {
    this.endLive(card);
    this.drafts.remove(card.key);
    this.cards.delete(card.key);
  }

  private editable(key: string): Card | undefined {
    const card = this.cards.get(key);
    return card && !card.busy && !card.call?.queued ? card : undefined;
  }

  /** The first edit freezes the countdown; every edit is saved (P2). */
  private edited(card: Card): void {
    if (card.disposition !== "edited") {
      card.disposition = "edited";
      card.countdown?.freeze("edited");
    }
    this.save(card);
    this.notify();
  }

  private save(card: Card): void {
    this.drafts.save(card.key, { answers: card.answers, page: card.page, disposition: card.disposition });
  }

  private notify(): void {
    for (const listener of [...this.listeners]) listener();
  }
}

/** Sends an outcome unless the request already has one. Returns whether it was sent. */
function finish(live: Live, outcome: NonNullable<Live["outcome"]>, send: () => void): boolean {
  if (live.outcome) return false;
  live.outcome = outcome;
  send();
  return true;
}

function closeClaim(live: Live): void {
  const claim = live.claim;
  live.claim = undefined;
  live.claimEnded = true;
  claim?.close();
}

/** The remainingMs of a claimed wait without a Host deadline. */
const noHostDeadline = -1;

const recommended = /\(Recommended\)\s*$/;

/**
 * Gives every question without a drafted answer its starting one: the
 * "(Recommended)" option pre-selected (only the first for a single-select
 * question). A pre-selection is not an edit (P2).
 */
function fillDefaults(card: Card): void {
  for (const q of card.questions) {
    if (card.answers[q.id]) continue;
    const labels = (q.options ?? []).map((o) => o.label).filter((l) => recommended.test(l));
    card.answers[q.id] = { selected: q.multiSelect ? labels : labels.slice(0, 1), custom: "" };
  }
}

/** The answer batch of a card: every question exactly once, in question order (D6). */
function batchOf(card: Card): Answer[] {
  return card.questions.map((q) => {
    const drafted = card.answers[q.id];
    const answer: Answer = { id: q.id, selected: [...(drafted?.selected ?? [])] };
    if (drafted && drafted.custom.trim() !== "") answer.custom = drafted.custom;
    return answer;
  });
}

function payloadProblem(payload: RequestPayload | undefined): string | undefined {
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


function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
