// The header's two switches: desktop notifications and the tone. Both are
// off until the person turns them on; notifications ask the browser for
// permission from that click.

import { useCallback } from "preact/hooks";
import type { BrowserAlerts } from "../app/alerts";
import { useSubscription } from "./hooks";

export const AttentionText = {
  notify: "Notify me",
  notifyBlocked: "Notifications blocked",
  sound: "Sound",
  group: "When a question arrives",
} as const;

export function AttentionControls({ alerts }: { alerts: BrowserAlerts }) {
  useSubscription(useCallback((l: () => void) => alerts.subscribe(l), [alerts]));
  const permission = alerts.permission;
  const { notify, sound } = alerts.settings;
  return (
    <div class="attention" role="group" aria-label={AttentionText.group}>
      {permission !== "unsupported" && (
        <button
          type="button"
          class="toggle notify-toggle"
          aria-pressed={notify}
          disabled={permission === "denied"}
          onClick={() => void alerts.setNotify(!notify)}
        >
          {permission === "denied" ? AttentionText.notifyBlocked : AttentionText.notify}
        </button>
      )}
      <button type="button" class="toggle sound-toggle" aria-pressed={sound} onClick={() => alerts.setSound(!sound)}>
        {AttentionText.sound}
      </button>
    </div>
  );
}
