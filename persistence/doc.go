// Package persistence owns the catalog of every shape Holdover stores: the
// Session events, the message-source kinds, and the values kept in KV
// buckets. A change to any of them fails the build until catalog.json
// records it, saying whether stored data keeps reading the same (D10).
//
// It only describes shapes; it never reads or writes stored data.
package persistence
