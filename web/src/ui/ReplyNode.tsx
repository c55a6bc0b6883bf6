// The reply node (G1–G3): a late answer in the transcript, shown as the
// questions and the answers given — collapsed to one line, expandable, and
// copyable. It is chosen by the message source only (transcript/model.ts);
// a recorded text it cannot read is shown as recorded.

import { useState } from "preact/hooks";
import type { Message } from "../wire";
import { readReply } from "../questions/reply";
import { replySummary, replyText } from "../questions/form";
import { Text } from "../questions/text";
import { AnswerList } from "./AnswerList";
import { useId } from "./hooks";

export function ReplyNode({ message }: { message: Message }) {
  const view = readReply(message);
  const [open, setOpen] = useState(false);
  const [copied, setCopied] = useState(false);
  const titleId = useId("reply");
  const bodyId = `${titleId}-body`;
  if (!view) return null;

  const copy = async () => setCopied(await copyText(view.kind === "answers" ? replyText(view.items) : view.text));
  return (
    <div class="row reply" role="group" aria-labelledby={titleId} data-call-id={view.callId}>
      <div class="who" id={titleId}>
        {message.source.user ?? "You"} · {Text.replyTitle}
      </div>
      {view.kind === "raw" ? (
        <>
          <p class="hint">{Text.replyRaw}</p>
          <pre class="raw">{view.text}</pre>
        </>
      ) : (
        <>
          {!open && <p class="reply-summary">{replySummary(view.items)}</p>}
          {open && <AnswerList id={bodyId} items={view.items} label={Text.replyTitle} />}
        </>
      )}
      <div class="row-actions">
        {view.kind === "answers" && (
          <button type="button" class="expand" aria-expanded={open} aria-controls={bodyId} onClick={() => setOpen(!open)}>
            {open ? Text.collapse : Text.expand}
          </button>
        )}
        <button type="button" class="copy" onClick={() => void copy()}>
          {copied ? Text.copied : Text.copy}
        </button>
      </div>
    </div>
  );
}

/**
 * Puts text on the clipboard. The Clipboard API needs a secure context; a
 * gateway reached over plain http on another host falls back to a
 * selected, off-screen text area and the copy command.
 */
async function copyText(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.append(area);
    area.select();
    const copied = document.execCommand("copy");
    area.remove();
    return copied;
  }
}
