// Package clientwire is the wire of the WebSocket protocol between the
// gateway and its Clients (docs/protocol.md): the protocol versions, every
// frame type with its Go struct and the fields it needs, the catalog of
// frames each side sends, how a message carries several frames, the codes
// and close codes the protocol gives failures, and the names Clients use
// (the question request's Remote Event name, the userQuestions methods).
//
// The gateway and the terminal Client both import it, and neither declares
// any of it again; the web Client's types are generated from the same
// frames' JSON Schemas (schemas/websocket/), and the schemas package's
// tests keep those schemas and this package's structs in step.
//
// It must never hold behaviour: no connection, no I/O, no handler. What a
// side does with a frame is that side's business (the gateway's table of
// frame specs, the terminal Client's routing). It imports nothing of the
// worker's core (waiter, worker, projection), so a Client pulls in none.
package clientwire
