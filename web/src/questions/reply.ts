// The late-reply message (G1, G2): how the transcript recognises a user
// message that carries a late answer, and the question-and-answer view it
// renders instead of the raw text.
//
// The message source decides, never the text: a late answer is a user
// message whose source kind is "user-question-reply". Identical JSON pasted
// into an ordinary message stays an ordinary message.

import type { Answer, Message, Question } from "../wire";
import { ReplyKind, SourceUserQuestionReply, joinText, readAnswers, readQuestions } from "../wire";
import { isRecord } from "../json";

/** One question with its recorded answer. */
export interface ReplyItem {
  id: string;
  /** The question text; the id when the reply does not repeat the question. */
  question: string;
  header: string | undefined;
  selected: readonly string[];
  custom: string | undefined;
  skipped: boolean;
}

/**
 * What a reply node shows: the questions and answers when the recorded text
 * reads as a reply, else the raw text (an unreadable payload is shown as
 * recorded, never hidden or reinterpreted).
 */
export type ReplyView =
  | { kind: "answers"; callId: string | undefined; items: ReplyItem[] }
  | { kind: "raw"; callId: string | undefined; text: string };

/**
 * Whether message is a late reply. The reply renderer claims such messages
 * exclusively: the ordinary user-message renderer must skip them, so a
 * reply renders exactly once (G2).
 */
export function isQuestionReply(message: Pick<Message, "source">): boolean {
  return message.source?.kind === SourceUserQuestionReply;
}

/** The reply view of message, or undefined when it is not a late reply. */
export function readReply(message: Pick<Message, "source" | "content">): ReplyView | undefined {
  if (!isQuestionReply(message)) return undefined;
  const text = joinText(message.content);
  const callId = message.source.callId;
  const parsed = parseReplyText(text);
  if (!parsed) return { kind: "raw", callId, text };
  return { kind: "answers", callId: callId ?? parsed.callId, items: pair(parsed.questions, parsed.answers) };
}

interface ParsedReply {
  callId: string | undefined;
  questions: Question[];
  answers: Answer[];
}

/** Reads the recorded JSON of a reply, like the Go events.ParseReply: right kind, an answers list. */
function parseReplyText(text: string): ParsedReply | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isRecord(value) || value.kind !== ReplyKind) return undefined;
  const answers = readAnswers(value.answers);
  if (!answers) return undefined;
  const questions = readQuestions(value.questions) ?? [];
  return { callId: typeof value.callId === "string" ? value.callId : undefined, questions, answers };
}

/** Pairs answers with their questions, in question order; answers to unknown ids follow. */
export function pair(questions: readonly Question[], answers: readonly Answer[]): ReplyItem[] {
  const byId = new Map(answers.map((a) => [a.id, a]));
  const items: ReplyItem[] = questions.map((q) => item(q.id, q.question, q.header, byId.get(q.id)));
  const known = new Set(questions.map((q) => q.id));
  for (const a of answers) if (!known.has(a.id)) items.push(item(a.id, a.id, undefined, a));
  return items;
}

function item(id: string, question: string, header: string | undefined, answer: Answer | undefined): ReplyItem {
  const selected = answer?.selected ?? [];
  const custom = answer?.custom || undefined;
  return { id, question, header, selected, custom, skipped: selected.length === 0 && custom === undefined };
}

