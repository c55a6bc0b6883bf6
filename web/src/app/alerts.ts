// The browser side of attention (attention.ts decides): the title and the
// favicon, desktop notifications through the Notification API, and a short
// tone made with Web Audio (no sound file to load). Permission is asked for
// only from a click (requestPermission), never on load.

import { alertText, iconFor, loadSettings, saveSettings, titleFor, type Alert, type AttentionSettings } from "./attention";

export class BrowserAlerts {
  private settingsNow: AttentionSettings;
  private audio: AudioContext | undefined;
  private readonly listeners = new Set<() => void>();

  constructor(private readonly storage: Storage | undefined) {
    this.settingsNow = loadSettings(storage);
    // Browsers start audio only after a gesture: the first one wakes a tone that was chosen before a reload.
    const wake = () => {
      if (this.settingsNow.sound) void this.context()?.resume();
    };
    window.addEventListener("pointerdown", wake, { once: true });
    window.addEventListener("keydown", wake, { once: true });
  }

  get settings(): AttentionSettings {
    return this.settingsNow;
  }

  /** Whether this browser can notify at all, and what it allows now. */
  get permission(): NotificationPermission | "unsupported" {
    return typeof Notification === "undefined" ? "unsupported" : Notification.permission;
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Turns notifications on (asking for permission, from the click that calls this) or off. */
  async setNotify(on: boolean): Promise<void> {
    if (on && this.permission === "default") await Notification.requestPermission();
    this.set({ ...this.settingsNow, notify: on && this.permission === "granted" });
  }

  /** Turns the tone on or off; turning it on plays it once, so the person hears what it is. */
  setSound(on: boolean): void {
    this.set({ ...this.settingsNow, sound: on });
    if (on) this.beep("arrived");
  }

  /** Shows the count in the title and the favicon. */
  badge(count: number): void {
    const title = titleFor(count);
    if (document.title !== title) document.title = title;
    const icon = document.querySelector<HTMLLinkElement>('link[rel="icon"]');
    const href = iconFor(count);
    if (icon && icon.getAttribute("href") !== href) icon.setAttribute("href", href);
  }

  /** Raises one alert: a notification whose click runs open, and the tone, as chosen. */
  raise(alert: Alert, open: () => void): void {
    if (this.settingsNow.notify && this.permission === "granted") {
      const { title, body } = alertText(alert);
      const n = new Notification(title, { body, tag: `${alert.item.key}|${alert.kind}` });
      n.onclick = () => {
        window.focus();
        open();
        n.close();
      };
    }
    if (this.settingsNow.sound) this.beep(alert.kind);
  }

  /** A short tone: one for a new question, two for a wait about to end. */
  private beep(kind: Alert["kind"]): void {
    const ctx = this.context();
    if (!ctx) return;
    const times = kind === "arrived" ? [0] : [0, 0.25];
    for (const at of times) {
      const osc = ctx.createOscillator();
      const gain = ctx.createGain();
      osc.frequency.value = kind === "arrived" ? 880 : 660;
      gain.gain.setValueAtTime(0.15, ctx.currentTime + at);
      gain.gain.exponentialRampToValueAtTime(0.001, ctx.currentTime + at + 0.18);
      osc.connect(gain).connect(ctx.destination);
      osc.start(ctx.currentTime + at);
      osc.stop(ctx.currentTime + at + 0.2);
    }
  }

  private context(): AudioContext | undefined {
    if (this.audio) return this.audio;
    if (typeof AudioContext === "undefined") return undefined;
    this.audio = new AudioContext();
    return this.audio;
  }

  private set(s: AttentionSettings): void {
    this.settingsNow = s;
    saveSettings(this.storage, s);
    for (const l of [...this.listeners]) l();
  }
}
