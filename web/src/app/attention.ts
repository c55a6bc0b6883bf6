// Attention: what brings a person to a question they are not looking at
// (issue 13 item 2). The page title and favicon carry the count of
// questions waiting for an answer; an opt-in desktop notification and an
// optional short sound mark a question that arrives and a live wait about
// to end — never for a question already on screen. This file decides; the
// page (main.ts) shows, notifies and plays.

/** A question that waits for the person. */
export interface Waiting {
  /** The card key (one per Session and call). */
  key: string;
  session: string;
  callId: string;
  question: string;
  /** When its live wait ends (ms since the epoch), if it is live and that is known. */
  deadline: number | undefined;
}

export type AlertKind = "arrived" | "ending";

export interface Alert {
  kind: AlertKind;
  item: Waiting;
}

/** How long before a live wait's end the "about to end" alert comes. */
export const endingSoonMs = 10_000;

export class Attention {
  private primed = false;
  private readonly seen = new Set<string>();
  private readonly warned = new Set<string>();

  constructor(private readonly soonMs = endingSoonMs) {}

  /**
   * Takes what waits now and returns the alerts to raise: a question not
   * seen before arrived, a live wait passed into its last soonMs. Each is
   * raised once per question, and not at all while it is on screen. What
   * waits when the page first looks is what the person came to see: no
   * alert for it.
   */
  update(items: readonly Waiting[], now: number, onScreen: (item: Waiting) => boolean): Alert[] {
    const out: Alert[] = [];
    const present = new Set(items.map((i) => i.key));
    for (const key of [...this.seen]) if (!present.has(key)) this.seen.delete(key);
    for (const key of [...this.warned]) if (!present.has(key)) this.warned.delete(key);
    for (const item of items) {
      if (!this.seen.has(item.key)) {
        this.seen.add(item.key);
        if (this.primed && !onScreen(item)) out.push({ kind: "arrived", item });
      }
      const left = item.deadline === undefined ? undefined : item.deadline - now;
      if (left !== undefined && left > 0 && left <= this.soonMs && !this.warned.has(item.key)) {
        this.warned.add(item.key);
        if (!onScreen(item)) out.push({ kind: "ending", item });
      }
    }
    this.primed = true;
    return out;
  }
}

/** The page title: "(3) Holdover" while three questions wait. */
export function titleFor(count: number, base = "Holdover"): string {
  return count > 0 ? `(${count}) ${base}` : base;
}

/** The favicon for a count: icon.svg with none waiting, icon-1.svg … icon-9.svg, icon-9plus.svg beyond. */
export function iconFor(count: number): string {
  if (count <= 0) return "icon.svg";
  return count > 9 ? "icon-9plus.svg" : `icon-${count}.svg`;
}

/** What a notification says. */
export function alertText(alert: Alert): { title: string; body: string } {
  const { item } = alert;
  return alert.kind === "arrived"
    ? { title: `Question from ${item.session}`, body: item.question }
    : { title: `Answer soon: ${item.session} moves on`, body: item.question };
}

/** The person's choices, kept in localStorage: notifications and sound are off until asked for. */
export interface AttentionSettings {
  notify: boolean;
  sound: boolean;
}

const settingsKey = "holdover.attention.v1";

export function loadSettings(storage: Storage | undefined): AttentionSettings {
  try {
    const v: unknown = JSON.parse(storage?.getItem(settingsKey) ?? "{}");
    const r = typeof v === "object" && v !== null ? (v as Record<string, unknown>) : {};
    return { notify: r.notify === true, sound: r.sound === true };
  } catch {
    return { notify: false, sound: false };
  }
}

export function saveSettings(storage: Storage | undefined, s: AttentionSettings): void {
  try {
    storage?.setItem(settingsKey, JSON.stringify(s));
  } catch {
    // A refused storage forgets the choice at the next load; nothing else.
  }
}
