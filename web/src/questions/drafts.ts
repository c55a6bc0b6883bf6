// Browser-local drafts of question answers (P2, C2, C5).
//
// A draft is what the user has chosen or typed so far, the page they were
// on, and the countdown disposition (held by Take time, or edited). It lives
// in localStorage so a reload restores it. Drafts are local UI state only:
// nothing here reaches the Host, and a draft never decides that a question
// is answered.
//
// Keys: a keyed card's draft is found again by (Session, callId). An unkeyed
// blocking request has no stable identity, so its draft key holds this
// page load's id: after a reload no request can ever find that draft again,
// and the next prune removes it.

import type { Clock } from "./clock";
import type { Disposition } from "./countdown";
import { isRecord, isStringArray } from "../json";

const prefix = "holdover.draft.v1/";
const callPrefix = `${prefix}call/`;
const requestPrefix = `${prefix}request/`;

/** Thirty days: a draft older than this is dropped. */
export const defaultMaxAgeMs = 30 * 24 * 60 * 60 * 1000;

/** The answer to one question as drafted. */
export interface DraftAnswer {
  selected: string[];
  /** Free text; "" when none. */
  custom: string;
  /** The user chose Skip: an empty answer on purpose, not one left unanswered. */
  skipped?: boolean;
}

export interface Draft {
  /** By question id. */
  answers: Record<string, DraftAnswer>;
  page: number;
  disposition?: Disposition | undefined;
  /** When the draft was last written, by the store's clock. */
  savedAt: number;
}

/** The key of a keyed card's draft: one per (Session, callId). */
export function callDraftKey(session: string, callId: string): string {
  return `${callPrefix}${encodeURIComponent(session)}/${encodeURIComponent(callId)}`;
}

export interface DraftStoreOptions {
  clock: Clock;
  /** Drafts older than this are pruned and never restored. */
  maxAgeMs?: number;
  /** This page load's id; a fresh random one by default. */
  loadId?: string;
}

/**
 * Reads and writes drafts in a Storage (localStorage in the browser).
 * Storage failures — a full quota, storage disabled — lose only the draft:
 * the card keeps working from memory.
 */
export class DraftStore {
  readonly loadId: string;
  private readonly storage: Storage | undefined;
  private readonly clock: Clock;
  private readonly maxAgeMs: number;
  private requests = 0;

  constructor(storage: Storage | undefined, options: DraftStoreOptions) {
    this.storage = storage;
    this.clock = options.clock;
    this.maxAgeMs = options.maxAgeMs ?? defaultMaxAgeMs;
    this.loadId = options.loadId ?? randomId();
  }

  /** A reload-unique key for an unkeyed request's draft (C2). */
  requestKey(): string {
    this.requests += 1;
    return `${requestPrefix}${encodeURIComponent(this.loadId)}/${this.requests}`;
  }

  /** The draft under key, unless it is missing, unreadable, too old, or an unkeyed draft of another page load. */
  load(key: string): Draft | undefined {
    const raw = this.read(key);
    if (raw === undefined) return undefined;
    const draft = parseDraft(raw);
    if (!draft || this.stale(key, draft)) {
      this.remove(key);
      return undefined;
    }
    return draft;
  }

  /** Writes the draft under key, stamped with the current time. */
  save(key: string, draft: Omit<Draft, "savedAt">): void {
    const value: Draft = { answers: draft.answers, page: draft.page, savedAt: this.clock.now() };
    if (draft.disposition) value.disposition = draft.disposition;
    try {
      this.storage?.setItem(key, JSON.stringify(value));
    } catch {
      // A full or disabled storage loses the draft, not the answer in memory.
    }
  }

  remove(key: string): void {
    try {
      this.storage?.removeItem(key);
    } catch {
      // Nothing to keep consistent: a draft that cannot be removed ages out.
    }
  }

  /**
   * Removes drafts that can never be restored: older than the maximum age,
   * unreadable, or unkeyed drafts of other page loads. Returns how many.
   */
  prune(): number {
    const doomed: string[] = [];
    for (const key of this.keys()) {
      const raw = this.read(key);
      const draft = raw === undefined ? undefined : parseDraft(raw);
      if (!draft || this.stale(key, draft)) doomed.push(key);
    }
    doomed.forEach((key) => this.remove(key));
    return doomed.length;
  }

  private stale(key: string, draft: Draft): boolean {
    if (this.clock.now() - draft.savedAt > this.maxAgeMs) return true;
    return key.startsWith(requestPrefix) && !key.startsWith(`${requestPrefix}${encodeURIComponent(this.loadId)}/`);
  }

  private keys(): string[] {
    const out: string[] = [];
    try {
      if (!this.storage) return out;
      for (let i = 0; i < this.storage.length; i++) {
        const key = this.storage.key(i);
        if (key?.startsWith(prefix)) out.push(key);
      }
    } catch {
      // Unreadable storage has nothing to prune.
    }
    return out;
  }

  private read(key: string): string | undefined {
    try {
      return this.storage?.getItem(key) ?? undefined;
    } catch {
      return undefined;
    }
  }
}

/** Parses a stored draft, or undefined when it is not one this version wrote. */
function parseDraft(raw: string): Draft | undefined {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return undefined;
  }
  if (!isRecord(value) || !isRecord(value.answers)) return undefined;
  if (typeof value.savedAt !== "number" || typeof value.page !== "number") return undefined;
  const disposition = value.disposition;
  if (disposition !== undefined && disposition !== "held" && disposition !== "edited") return undefined;
  const answers: Record<string, DraftAnswer> = {};
  for (const [id, a] of Object.entries(value.answers)) {
    if (!isRecord(a) || !isStringArray(a.selected) || typeof a.custom !== "string") return undefined;
    answers[id] = a.skipped === true ? { selected: a.selected, custom: a.custom, skipped: true } : { selected: a.selected, custom: a.custom };
  }
  const draft: Draft = { answers, page: value.page, savedAt: value.savedAt };
  if (disposition) draft.disposition = disposition;
  return draft;
}



function randomId(): string {
  const c = globalThis.crypto;
  if (c && typeof c.randomUUID === "function") return c.randomUUID();
  return `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
}
