// Package bridge is the agent runtime for hosts Holdover did not write:
// agents such as Claude Code, Cursor or Codex CLI, whose model runs in the
// host and takes its tools from MCP servers (docs/mcp.md).
//
// For each host session it is a runtime in the sense of
// docs/agent-protocol.md, built from the same parts as the Go runtime: it
// registers as the Session's live root (liveroot, refusing a second host
// whose root lease is alive), holds the root and caller leases (lease,
// caller), records the request/header, every tool/call and tool/result in
// the Session log (sessionlog), asks through askuser (the same schema,
// description and result texts as runtime's ask_user_question), and repairs
// a call a killed host left without a result as TOOL_OUTCOME_UNKNOWN
// (runtime.Interrupted).
//
// What differs is who runs the model. The host decides when its model
// reads anything, so a late answer waiting in the inbox is handed over at
// the host's own step boundaries: the next ask_user_question result, the
// pending_answers tool, or a Claude Code hook (`holdover hook`). Each
// hand-over is one Session-log transaction (Deliverer): splice what the
// inbox holds, claim a reply (agent/inbox/claimed, fenced by the log's
// last seq, so of two racing deliverers one wins), hand the text over, and
// admit it (user/message with the reply's id and source). A deliverer
// killed between its claim and its admission leaves the reply claimed but
// not admitted; once the claim is older than the claim bound any later
// deliverer claims it again, so no reply is lost and none is admitted twice.
//
// The package decides nothing about questions: the projection folds the
// log, the question service waits and validates answers.
package bridge
