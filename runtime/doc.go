// Package runtime is Holdover's Go agent runtime: a small but complete agent
// that records its Session log, asks timed questions through the question
// service and takes late answers from its inbox.
//
// It owns the agent side of the protocol. The runtime is the only writer of
// its Session log while it is the live root (appends are fenced by the
// previous seq and the instance is registered with an epoch, M9); every
// model request records a request/header with the tool schemas it offers;
// tool calls and results are recorded before and after they run; queued
// inbox messages are spliced, claimed and admitted as user/message at the
// nearest step boundary, or discarded (D8); a Session resumes from its log
// alone, and a tool call recorded without a result is repaired as
// TOOL_OUTCOME_UNKNOWN (D3). It also runs child agents (subagent) and
// programmatic tool calls (run_code, recorded as tool/ptc-dispatch, D4).
//
// It never decides question state: whether a question is open, continued
// or settled is the projection's fold of the log, and waiting, deadlines and
// late-answer validation belong to the question service.
package runtime
