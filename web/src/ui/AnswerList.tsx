import type { ReplyItem } from "../questions/reply";
import { answerText } from "../questions/form";
import { shown } from "../questions/text";

/** A read-only list of questions and the answers given to them. */
export function AnswerList({ items, label, id }: { items: readonly ReplyItem[]; label: string; id?: string }) {
  return (
    <dl class="answers" id={id} aria-label={label}>
      {items.map((i) => (
        <div class={`answer${i.skipped ? " skipped" : ""}`} key={i.id}>
          <dt>{shown(i.question)}</dt>
          <dd>{shown(answerText(i))}</dd>
        </div>
      ))}
    </dl>
  );
}
