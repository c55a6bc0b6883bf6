// What a card looks like to the UI: a snapshot of the reducer's card
// state and its countdown, with the rules that decide what the panel
// offers — which channel an answer would take (C3), whether it is locked
// (C4), whether it may take focus (P3), which hint it shows.

import type { CallStatus, Intent, Queued, Question } from "../wire";
import type { CardState } from "./cardState";
import type { CountdownPhase, Disposition } from "./countdown";
import type { DraftAnswer } from "./drafts";
import { Text } from "./text";

/** How a card's answer would travel if submitted now (C3). */
export type ChannelKind = "waterfall" | "rpc" | "none";

/** The countdown facts the controller reports for a card. */
export interface CountdownInfo {
  phase: CountdownPhase;
  label: string | undefined;
  remainingMs: number | undefined;
  /** Running or paused: a deadline exists and no edit has frozen it (P3 reads this). */
  active: boolean;
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

/** The card as the UI sees it, given what its countdown reports. */
export function cardView(card: CardState, countdown: CountdownInfo | undefined): CardView {
  const channel = channelOf(card);
  const queued = card.call?.queued;
  const busy = card.busy !== undefined;
  const locked = busy || queued !== undefined;
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
    countdown: countdown && { phase: countdown.phase, label: countdown.label, remainingMs: countdown.remainingMs },
    notice: card.call?.status === "continued" || card.expired ? Text.workContinued : undefined,
    hint: hintOf(card, channel, busy, queued),
    message: card.message,
    draft: Object.fromEntries(Object.entries(card.answers).map(([id, a]) => [id, a.skipped ? { selected: [], custom: "", skipped: true } : { selected: [...a.selected], custom: a.custom }])),
    page: card.page,
    disposition: card.disposition,
    queued,
  };
}

/** The channel an answer would take now: the RPC once the call continued, else a ready, unanswered waterfall. */
export function channelOf(card: CardState): ChannelKind {
  if (card.call?.status === "continued" && card.callId !== undefined) return "rpc";
  const live = card.live;
  if (live && live.ready && !live.outcome) return "waterfall";
  return "none";
}

function hintOf(card: CardState, channel: ChannelKind, busy: boolean, queued: Queued | undefined): string | undefined {
  if (busy) return undefined;
  if (queued) return Text.queued;
  if (card.hint) return card.hint;
  if (channel !== "none") return undefined;
  const live = card.live;
  if (live && !live.outcome && !live.ready) return Text.attaching;
  if (live?.outcome || card.expired) return undefined; // our outcome is out; the projection decides next
  return Text.noChannel;
}

