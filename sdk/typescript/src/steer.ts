// Queuing a user's message in a Session's inbox (steering). An agent may
// not write inboxes (package auth): what the user says reaches a Session
// through a role that may, an admin's, or a gateway's UI, never through
// the runtime's own connection. This is the TypeScript twin of
// `holdover agent --prompt-creds`.

import { jetstream } from "@nats-io/jetstream";
import { Code, wrap } from "./errors.js";
import { inboxSubject } from "./names.js";
import { connectNats, encoder, type ConnectOptions } from "./nats.js";
import { newID } from "./session.js";

/**
 * Queues an ordinary user message in sid's inbox on a connection of its
 * own made with opts (credentials that may write the inbox: an admin's);
 * the Session's live root admits it at the next step boundary, or starts a
 * Turn with it when idle. The same id queues the message once
 * (Nats-Msg-Id), so a restart cannot queue a prompt twice. Returns the id.
 */
export async function steer(opts: ConnectOptions, sid: string, text: string, id = newID("msg")): Promise<string> {
  const subject = inboxSubject(sid);
  const nc = await connectNats({ name: "holdover-steer-ts", ...opts });
  try {
    const message = { id, role: "user", content: [{ type: "text", text }], source: { kind: "user" } };
    await jetstream(nc, { checkAPI: false }).publish(subject, encoder.encode(JSON.stringify(message)), { msgID: id });
    return id;
  } catch (err) {
    throw wrap(err, Code.Internal, `queue message ${id} in the inbox of session ${sid}`);
  } finally {
    await nc.close();
  }
}
