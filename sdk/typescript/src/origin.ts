// Which requests a runtime answers, by where they came from: the rule of
// Go's auth.CheckOrigin, over the same table (generated/permissions.ts,
// made from auth/roles.go; test/origin-cases.json holds the Go side's
// verdicts, which origin.test.ts checks this one against).
//
// NATS lets whoever receives a request publish one reply to the subject
// the request named, past the receiver's deny rules (allow_responses), and
// a stored message that JetStream replays onto a subject (a direct get, a
// pull) arrives there as a request with no reply or JetStream's. A
// process's own requests reply under its role's inbox prefix,
// _INBOX.<role>, the only subjects that role may subscribe to. So a
// request is served only when its reply is an inbox and, when the inbox is
// a role's, that role may publish the request's subject; a request whose
// reply names a stream, or none, is refused with no reply.

import { Code, HoldoverError } from "./errors.js";
import { publishRights } from "./generated/permissions.js";

const inboxRoot = "_INBOX.";

/** Why a request on subject replying to reply must not be served, or undefined when it may. */
export function checkOrigin(subject: string, reply: string): HoldoverError | undefined {
  if (!reply.startsWith(inboxRoot)) {
    if (reply === "") {
      return new HoldoverError(Code.BadRequest, `a request on ${subject} without a reply subject: a stored message that a direct get or an API response sent there`);
    }
    return new HoldoverError(Code.BadRequest, `a request on ${subject} replying to ${reply}, not an inbox: a stored message that a JetStream consumer delivered there`);
  }
  const role = reply.slice(inboxRoot.length).split(".")[0] ?? "";
  if (!Object.hasOwn(publishRights, role) || mayPublish(role, subject)) return undefined;
  return new HoldoverError(Code.BadRequest, `a request on ${subject} from the ${role} role, which may not send it`);
}

/** Whether role's permissions let it publish subject: an allow pattern matches it and no deny pattern does. */
export function mayPublish(role: string, subject: string): boolean {
  const rights = Object.hasOwn(publishRights, role) ? publishRights[role] : undefined;
  if (!rights) return false;
  return rights.allow.some((p) => subjectMatches(p, subject)) && !rights.deny.some((p) => subjectMatches(p, subject));
}

/** Whether the literal subject matches the NATS pattern: '*' matches one token, a final '>' one or more. */
export function subjectMatches(pattern: string, subject: string): boolean {
  const p = pattern.split(".");
  const s = subject.split(".");
  for (let i = 0; i < p.length; i++) {
    if (p[i] === ">" && i === p.length - 1) return s.length > i;
    if (i >= s.length || (p[i] !== "*" && p[i] !== s[i])) return false;
  }
  return p.length === s.length;
}

/**
 * Whether a request to endpoint (resume, discard) may be served; a refusal
 * is logged with warn, and the caller sends no reply and changes nothing.
 */
export function admit(
  endpoint: string,
  m: { subject: string; reply?: string },
  warn: (msg: string, fields?: Record<string, unknown>) => void,
): boolean {
  const err = checkOrigin(m.subject, m.reply ?? "");
  if (!err) return true;
  warn("request refused for its origin", { endpoint, subject: m.subject, reply: m.reply ?? "", err: err.message });
  return false;
}
