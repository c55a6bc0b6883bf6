// A harness for QuestionCards tests: a recording transport and answer
// channels, a manual clock and in-memory storage. The transport records
// what the cards send and lets the test play the gateway's part: push the
// claim's frame, close it, answer RPCs.

import type { AnswerChannel, AnswerResult, ClaimHandlers, QuestionsTransport, RequestPayload } from "../questions/cards";
import { QuestionCards } from "../questions/cards";
import { DraftStore } from "../questions/drafts";
import type { Answer, Call, Question, View, WireError } from "../wire";
import { RemoteError } from "../wire";
import { ManualClock } from "./manualClock";
import { MemoryStorage } from "./memoryStorage";

/** Everything that went out, in order, across channels and claims. */
export type Sent =
  | { kind: "settle"; request: string; answers: Answer[] }
  | { kind: "reject"; request: string; error: WireError }
  | { kind: "delegate"; request: string }
  | { kind: "claim-close"; callId: string };

export class RecordingTransport implements QuestionsTransport {
  readonly claims: { session: string; callId: string; handlers: ClaimHandlers; closed: boolean }[] = [];
  readonly answers: { session: string; callId: string; answers: Answer[]; resolve(r: AnswerResult): void; reject(e: RemoteError): void }[] = [];

  readonly discards: { session: string; messageId: string; resolve(): void; reject(e: RemoteError): void }[] = [];

  constructor(private readonly log: Sent[]) {}

  attachWait(session: string, callId: string, handlers: ClaimHandlers) {
    const claim = { session, callId, handlers, closed: false };
    this.claims.push(claim);
    return {
      close: () => {
        claim.closed = true;
        this.log.push({ kind: "claim-close", callId });
      },
    };
  }

  answer(session: string, callId: string, answers: Answer[]): Promise<AnswerResult> {
    return new Promise((resolve, reject) => this.answers.push({ session, callId, answers, resolve, reject }));
  }

  discard(session: string, messageId: string): Promise<void> {
    return new Promise((resolve, reject) => this.discards.push({ session, messageId, resolve, reject }));
  }

  /** The latest claim opened for callId. */
  claim(callId: string) {
    const claim = [...this.claims].reverse().find((c) => c.callId === callId);
    if (!claim) throw new Error(`no claim for ${callId}`);
    return claim;
  }
}

export class Harness {
  readonly clock: ManualClock;
  readonly storage: MemoryStorage;
  readonly sent: Sent[] = [];
  readonly transport = new RecordingTransport(this.sent);
  readonly drafts: DraftStore;
  readonly cards: QuestionCards;
  private requests = 0;

  constructor(options: { clock?: ManualClock; storage?: MemoryStorage; loadId?: string } = {}) {
    this.clock = options.clock ?? new ManualClock();
    this.storage = options.storage ?? new MemoryStorage();
    this.drafts = new DraftStore(this.storage, { clock: this.clock, loadId: options.loadId ?? "load-1" });
    this.cards = new QuestionCards({ transport: this.transport, clock: this.clock, drafts: this.drafts });
  }

  /** A harness for the same browser after a reload: same storage and clock, a new page load. */
  reload(): Harness {
    return new Harness({ clock: this.clock, storage: this.storage, loadId: `${this.drafts.loadId}+` });
  }

  channel(request: string): AnswerChannel {
    return {
      settle: (value) => this.sent.push({ kind: "settle", request, answers: value.answers }),
      reject: (error) => this.sent.push({ kind: "reject", request, error }),
      delegate: () => this.sent.push({ kind: "delegate", request }),
    };
  }

  /** Forwards a request as the gateway would; returns the card key. */
  forward(payload: RequestPayload, session = "s1", requestId = `r${++this.requests}`): { key: string; requestId: string } {
    const key = this.cards.receive({ session, requestId, payload, channel: this.channel(requestId) });
    if (key === undefined) throw new Error("request rejected");
    return { key, requestId };
  }

  /** Forwards a timed request for callId and, unless told otherwise, delivers the claim's frame. */
  forwardTimed(callId: string, remainingMs: number | undefined, questions = sampleQuestions, session = "s1") {
    const forwarded = this.forward({ questions, wait: { callId, timed: true } }, session);
    if (remainingMs !== undefined) this.transport.claim(callId).handlers.frame({ remainingMs });
    return forwarded;
  }

  outcomes(): Sent[] {
    return this.sent.filter((s) => s.kind !== "claim-close");
  }
}

export const sampleQuestions: Question[] = [
  { id: "db", question: "Which database?", options: [{ label: "Postgres (Recommended)" }, { label: "SQLite" }] },
  { id: "extras", question: "Which extras?", multiSelect: true, options: [{ label: "Metrics" }, { label: "Tracing" }] },
];

export function call(callId: string, status: Call["status"], extra: Partial<Call> = {}): Call {
  return { callId, status, questions: sampleQuestions, seq: 1, ...extra };
}

export function view(active: Call[], lastSeq = 10, settled: View["settled"] = []): View {
  return { active, settled, timed: true, lastSeq };
}
