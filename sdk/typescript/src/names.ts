// Subject, key and consumer names, built by the same rules as Go's
// streams/ and lease/ packages: Session ids are plain words, every other id
// goes through `token`, so a bad id is a clear error and never a wildcard.

import { Code, HoldoverError } from "./errors.js";

// SESSIONS holds each Session's log and its inbox (steered messages and
// per-call replies): one stream, so one fenced write can expect the whole
// Session as a reader saw it.
export const SessionsStream = "SESSIONS";
export const ClaimsStream = "CLAIMS";
export const QuestionsBucket = "userQuestions";
export const RootsBucket = "liveRoots";

const root = "holdover";
const sessionPrefix = `${root}.session.`;
/** The subject group of the userQuestions micro service. */
export const ServicePrefix = `${root}.q`;
/** Where the runtime pool takes resume requests (D7). */
export const ResumeSubject = `${root}.runtime.resume`;
/** The queue group of the resume pool: each request reaches one instance. */
export const ResumeQueue = "runtimes";
export const ClaimPrefix = `${root}.claim`;
/** The role an agent runtime connects as (auth.Agent). */
export const AgentRole = "agent";
/** The prefix of the agent role's reply subjects (auth.Role.InboxPrefix): it may subscribe only below it. */
export const AgentInboxPrefix = `_INBOX.${AgentRole}`;

/** The longest Session or call id. */
export const MaxIDLength = 128;

const plainID = /^[A-Za-z0-9_-]+$/;

/** Refuses a Session id that is empty, too long or not a plain word. */
export function checkSession(id: string): void {
  if (id === "") throw new HoldoverError(Code.BadRequest, "session id is empty");
  const n = Buffer.byteLength(id);
  if (n > MaxIDLength) {
    throw new HoldoverError(Code.BadRequest, `session id is ${n} bytes, over the ${MaxIDLength} byte limit`);
  }
  if (!plainID.test(id)) {
    throw new HoldoverError(Code.BadRequest, `session id ${JSON.stringify(id)} may hold only letters, digits, '-' and '_'`);
  }
}

/**
 * Turns any non-empty id into a subject token: plain ids stay as they are,
 * others become "=" and their unpadded base64url form (streams.Token).
 */
export function token(id: string): string {
  if (id === "") throw new HoldoverError(Code.BadRequest, "id is empty");
  const n = Buffer.byteLength(id);
  if (n > MaxIDLength) throw new HoldoverError(Code.BadRequest, `id is ${n} bytes, over the ${MaxIDLength} byte limit`);
  if (plainID.test(id)) return id;
  return "=" + Buffer.from(id, "utf8").toString("base64url");
}

export function sessionSubject(sid: string, suffix: string): string {
  checkSession(sid);
  return `${sessionPrefix}${sid}.${suffix}`;
}

/** The Session log subject. */
export const eventsSubject = (sid: string): string => sessionSubject(sid, "events");
/** The Session's own inbox subject (steered messages). */
export const inboxSubject = (sid: string): string => sessionSubject(sid, "inbox");
/** The subject of the late replies to one call: its last message is the call's reservation (D8). */
export const replySubject = (sid: string, callId: string): string => sessionSubject(sid, `inbox.${token(callId)}`);
/** What an inbox reader filters on: the Session's inbox and every call's reply subject. */
export const inboxSubjects = (sid: string): string[] => [inboxSubject(sid), `${inboxSubject(sid)}.*`];
/** Where the live root takes requests to discard a queued message. */
export const discardSubject = (sid: string): string => sessionSubject(sid, "discard");
/** Discard and resume requests, as a refusal for their origin names them (runtime.DiscardEndpoint, liveroot.ResumeEndpoint). */
export const DiscardEndpoint = "discard";
export const ResumeEndpoint = "resume";

/** The subject of a userQuestions endpoint. */
export const serviceSubject = (op: string): string => `${ServicePrefix}.${op}`;
/** Where the worker holding `lease` takes `verb` (abort, status) for its waits. */
export const workerSubject = (lease: string, verb: string): string => `${ServicePrefix}.wait.${lease}.${verb}`;

/** A lease's consumer name on the claims stream: lease~<role>~<id>. */
export const leaseName = (role: string, id: string): string => `lease~${role}~${id}`;
/**
 * The subject a lease's consumer filters on, holdover.claim.lease.<role>.<id>;
 * nothing is ever published there. It names the lease's role so the
 * permissions can scope who holds which leases: the filter is a token of
 * the consumer's create subject (package auth).
 */
export const leaseTopic = (role: string, id: string): string => `${ClaimPrefix}.lease.${role}.${id}`;
/** The advisory JetStream publishes when the named claims-stream consumer is deleted. */
export const deletedAdvisory = (name: string): string => `$JS.EVENT.ADVISORY.CONSUMER.DELETED.${ClaimsStream}.${name}`;
/** The root lease of a runtime instance, which says whether its live roots still run. */
export const rootLeaseName = (instance: string): string => leaseName("root", instance);

/** Checks that a lease role or id is a plain word. */
export function checkWord(what: string, v: string): void {
  if (v === "" || Buffer.byteLength(v) > MaxIDLength || !plainID.test(v)) {
    throw new HoldoverError(Code.BadRequest, `lease ${what} ${JSON.stringify(v)} must be 1 to ${MaxIDLength} letters, digits, '-' or '_'`);
  }
}
