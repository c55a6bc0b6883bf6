// Errors with the stable codes of docs/spec.md §8. Every error that crosses
// NATS is `{code, message}` (and the Nats-Service-Error-Code header); this
// side rebuilds it as a HoldoverError with the same code, so an agent
// branches on `err.code` whichever runtime or worker it talks to.

/** The stable codes of docs/spec.md §8, and the transport codes beside them. */
export const Code = {
  AskTimedOut: "ASK_TIMED_OUT",
  AskAborted: "ASK_ABORTED",
  AskCancelled: "ASK_CANCELLED",
  NoProvider: "NO_PROVIDER",
  BadTimeout: "BAD_TIMEOUT",
  DuplicateWait: "DUPLICATE_WAIT",
  EmptyQuestions: "EMPTY_QUESTIONS",
  BadIntent: "BAD_INTENT",
  CallerNotLive: "CALLER_NOT_LIVE",
  DelegatedCaller: "DELEGATED_CALLER",
  ReplyQueued: "REPLY_QUEUED",
  BadAnswer: "BAD_ANSWER",
  UntrackedCall: "UNTRACKED_CALL",
  ToolOutcomeUnknown: "TOOL_OUTCOME_UNKNOWN",
  BadRequest: "BAD_REQUEST",
  NotFound: "NOT_FOUND",
  Internal: "INTERNAL",
  Conflict: "CONFLICT",
} as const;

export type Code = (typeof Code)[keyof typeof Code] | (string & {});

/** An error with a stable code; `cause` keeps what went wrong underneath. */
export class HoldoverError extends Error {
  readonly code: Code;
  constructor(code: Code, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "HoldoverError";
    this.code = code;
  }

  /** The `{code, message}` form that crosses a process boundary. */
  toWire(): { code: Code; message: string } {
    return { code: this.code, message: this.fullMessage() };
  }

  /** The message followed by the cause's, as Go's holdover.Error prints. */
  fullMessage(): string {
    const cause = this.cause;
    if (cause instanceof HoldoverError) return `${this.message}: ${cause.fullMessage()}`;
    if (cause instanceof Error) return `${this.message}: ${cause.message}`;
    return this.message;
  }
}

/** The code of err, or "" when it carries none. */
export function codeOf(err: unknown): string {
  return err instanceof HoldoverError ? err.code : "";
}

/** Wraps err with code and message, keeping it as the cause. */
export function wrap(err: unknown, code: Code, message: string): HoldoverError {
  return new HoldoverError(code, message, { cause: err });
}

/** The wire form of any error: INTERNAL when it has no code. */
export function wire(err: unknown): { code: Code; message: string } {
  if (err instanceof HoldoverError) return err.toWire();
  return { code: Code.Internal, message: err instanceof Error ? err.message : String(err) };
}
