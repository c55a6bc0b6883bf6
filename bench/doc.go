// Package bench measures Holdover's question paths against a NATS
// deployment, each beside the raw NATS primitive it is built on, measured
// in the same run: askTimed to the Client's delivery and the Client's
// answer to the caller's result (a core request-reply), a late answer to
// its reply durable on the call's reply subject (a synchronous JetStream
// publish), and a gateway's fan-out of requests to the WebSocket Clients
// watching their Sessions, one request and a burst of them (core NATS
// messages to as many connections). A ratio survives a faster or slower
// machine; the absolute figures do not.
//
// The raw primitive is timed between the path's samples, not before or
// after them all, so both see the same machine: on a shared one, load
// comes and goes.
//
// Both `holdover bench` and the `go test -bench` benchmarks of package
// integration measure through this package (the measuring pieces are
// exported for them: [ForegroundCalls], [LateAnswers], [RoundTrip],
// [ReplyPublisher], [Rig.FanOut]), so the figures an operator checks a
// deployment with are the ones the repository's targets are stated in
// (docs/operations.md, "Measured"). It talks to Holdover only through the clients every other
// process uses, each on its role's credentials: the agent's caller, the
// Client side's answerer, the Session log, the live-root registry, and a
// gateway serving the fan-out's Clients.
package bench
