// Package askuser is the model-facing ask_user_question tool (SPEC M1–M8).
//
// It owns exactly four things: the input schema and description the model
// is offered, the validation of the model's arguments and timeout, the
// choice of question-service call (blocking ask, keyed blocking ask or
// askTimed), and the text the model reads back — the answers, the pending
// object, or a structured error.
//
// It never owns a timer, never talks to NATS and never decides question
// state. Waiting, claims, deadlines and the durable question belong to the
// question service behind [Asker]; the package only turns a model call into
// one service request and the service's reply into one tool result.
package askuser
