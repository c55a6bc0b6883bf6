// The Session transcript: Turns with their disclosure control, the process
// groups inside them, and the rows (transcript/model.ts decides the layout).
// A Turn's disclosure control always comes before the content it folds,
// also when a late reply opens the Turn (G3).

import { useMemo, useState } from "preact/hooks";
import type { QuestionCards } from "../questions";
import { buildTranscript, questionTool, type ProcessGroup, type Row, type ToolRow, type Turn } from "../transcript/model";
import type { SessionEvent, View } from "../wire";
import { joinText } from "../wire";
import { Markdown } from "./MarkdownView";
import { QuestionToolRow } from "./QuestionToolRow";
import { ReplyNode } from "./ReplyNode";

interface Context {
  session: string;
  view: View | undefined;
  cards: QuestionCards;
  isOpen(key: string, fallback: boolean): boolean;
  toggle(key: string, fallback: boolean): void;
}

export function Transcript({ session, events, view, cards }: { session: string; events: readonly SessionEvent[]; view: View | undefined; cards: QuestionCards }) {
  const count = events.length;
  const blocks = useMemo(() => buildTranscript(events, view), [events, count, view]);
  const [folds, setFolds] = useState<Record<string, boolean>>({});
  const ctx: Context = {
    session,
    view,
    cards,
    isOpen: (key, fallback) => folds[key] ?? fallback,
    toggle: (key, fallback) => setFolds((f) => ({ ...f, [key]: !(f[key] ?? fallback) })),
  };
  if (blocks.length === 0) return <p class="hint">No events in this Session yet.</p>;
  return (
    <ol class="blocks">
      {blocks.map((b) => (
        <li key={b.key}>{b.kind === "turn" ? <TurnBlock turn={b} ctx={ctx} /> : <RowView row={b} ctx={ctx} />}</li>
      ))}
    </ol>
  );
}

function TurnBlock({ turn, ctx }: { turn: Turn; ctx: Context }) {
  const open = ctx.isOpen(turn.key, turn.expanded);
  const bodyId = `body-${turn.key}`;
  return (
    <div class={`turn${turn.ended ? "" : " running"}`} data-turn={turn.turn}>
      {turn.trigger && <RowView row={turn.trigger} ctx={ctx} />}
      <Disclosure className="turn-toggle" open={open} controls={bodyId} label={turn.summary} onToggle={() => ctx.toggle(turn.key, turn.expanded)} />
      {open && (
        <div class="turn-body" id={bodyId}>
          {turn.content.map((part) => (part.kind === "group" ? <Group key={part.key} group={part} ctx={ctx} /> : <RowView key={part.key} row={part} ctx={ctx} />))}
        </div>
      )}
    </div>
  );
}

function Group({ group, ctx }: { group: ProcessGroup; ctx: Context }) {
  const open = ctx.isOpen(group.key, group.expanded);
  const bodyId = `body-${group.key}`;
  return (
    <div class="group">
      <Disclosure className="group-toggle" open={open} controls={bodyId} label={group.summary} onToggle={() => ctx.toggle(group.key, group.expanded)} />
      {open && (
        <div class="group-body" id={bodyId}>
          {group.rows.map((r) => (
            <RowView key={r.key} row={r} ctx={ctx} />
          ))}
        </div>
      )}
    </div>
  );
}

function Disclosure({ className, open, controls, label, onToggle }: { className: string; open: boolean; controls: string; label: string; onToggle: () => void }) {
  return (
    <button type="button" class={`disclosure ${className}`} aria-expanded={open} aria-controls={controls} onClick={onToggle}>
      <span class="chev" aria-hidden="true">
        {open ? "▾" : "▸"}
      </span>
      <span>{label}</span>
    </button>
  );
}

function RowView({ row, ctx }: { row: Row; ctx: Context }) {
  switch (row.kind) {
    case "user":
      return (
        <div class="row user">
          <div class="who">You</div>
          <div class="text">{row.text}</div>
        </div>
      );
    case "reply":
      return <ReplyNode message={row.message} />;
    case "assistant":
      return (
        <div class="row assistant">
          <div class="who">Agent</div>
          <Markdown text={row.text} />
        </div>
      );
    case "tool":
      return row.name === questionTool ? <QuestionToolRow row={row} session={ctx.session} view={ctx.view} cards={ctx.cards} /> : <GenericToolRow row={row} />;
  }
}

function GenericToolRow({ row }: { row: ToolRow }) {
  const status = !row.result ? (row.turnEnded ? "interrupted" : "running") : row.result.isError ? "failed" : "done";
  const args = JSON.stringify(row.arguments ?? null);
  return (
    <div class={`row tool status-${status}`} data-call-id={row.callId}>
      <details>
        <summary>
          <code class="tool-name">{row.name}</code>
          {row.parentCallId && <span class="via">via run_code</span>}
          <span class="args">{args.length > 80 ? `${args.slice(0, 79)}…` : args}</span>
          <span class="status">{status}</span>
        </summary>
        <pre class="args-full">{JSON.stringify(row.arguments ?? null, null, 2)}</pre>
        {row.result && <pre class="result">{joinText(row.result.content)}</pre>}
      </details>
    </div>
  );
}
