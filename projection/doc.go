// Package projection owns the userQuestions projection: which ask_user_question
// calls of a Session are active (open or continued) and which are settled,
// derived only from the Session's own events (D1–D5).
//
// The fold is pure: Apply never reads a clock, a network or a store, so the
// same log always yields the same View. The worker in this package folds the
// Session log into the userQuestions KV bucket; it never decides question
// state any other way than through Apply.
package projection
