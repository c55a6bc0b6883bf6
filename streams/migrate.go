package streams

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover"
)

// legacyParking is the subject an old INBOX stream is left on while its
// messages move: none of Holdover's, so from the first step of the
// migration no inbox publish is stored in either stream until SESSIONS
// holds every old message and takes the inbox subjects itself. A publish
// meanwhile fails (no stream), which its caller reports or retries; none
// can land before the old messages of its subject, so every reply
// subject's last message, the call's reservation (D8), stays what it was.
const legacyParking = "holdover.legacy.inbox"

// legacyPadding is the subject SESSIONS takes for a moment to raise its
// last sequence above the old inbox's ([sourceInbox]).
const legacyPadding = "holdover.legacy.padding"

// migratePoll is how often the migration looks whether SESSIONS has
// sourced every old inbox message.
const migratePoll = 20 * time.Millisecond

// migrateInbox moves an old LegacyInboxStream into SESSIONS (want is its
// new configuration): the server copies the messages itself, in stream
// order with subject, headers and data, by sourcing INBOX into SESSIONS.
// Each step leaves a state the next run recognises, so a run that stops
// anywhere is finished by the next:
//
//  1. INBOX still takes the inbox subjects: move it to legacyParking.
//  2. SESSIONS does not take them yet: source INBOX into it, wait until
//     it holds as many inbox messages as INBOX, then take the inbox
//     subjects and drop the source (the server resumes a source where
//     its last copy left off, so a second run copies nothing twice).
//  3. SESSIONS takes them: delete INBOX.
//
// With no INBOX there is nothing to do.
func migrateInbox(ctx context.Context, js jetstream.JetStream, want jetstream.StreamConfig) error {
	old, err := js.Stream(ctx, LegacyInboxStream)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return nil
	case err != nil:
		return holdover.Wrapf(err, holdover.CodeInternal, "look up stream %s", LegacyInboxStream)
	}
	oldCfg := old.CachedInfo().Config
	if !slices.Equal(oldCfg.Subjects, []string{legacyParking}) {
		oldCfg.Subjects = []string{legacyParking}
		if old, err = js.UpdateStream(ctx, oldCfg); err != nil {
			return holdover.Wrapf(err, holdover.CodeInternal, "park stream %s on %s to move it into %s", LegacyInboxStream, legacyParking, SessionsStream)
		}
	}
	sessions, err := js.Stream(ctx, SessionsStream)
	if err != nil {
		return holdover.Wrapf(err, holdover.CodeInternal, "look up stream %s to move %s into it", SessionsStream, LegacyInboxStream)
	}
	if !slices.Contains(sessions.CachedInfo().Config.Subjects, AllInboxes) {
		if err := sourceInbox(ctx, js, old, sessions.CachedInfo().Config, want); err != nil {
			return err
		}
	}
	if err := js.DeleteStream(ctx, LegacyInboxStream); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return holdover.Wrapf(err, holdover.CodeInternal, "delete stream %s, moved into %s", LegacyInboxStream, SessionsStream)
	}
	return nil
}

// sourceInbox copies every message of the parked old inbox into SESSIONS
// (configured as have) and then gives SESSIONS the configuration want.
//
// A runtime resumes its inbox after the highest inbox seq its log
// recorded (an INBOX seq) and passes over a message at or below it, so
// every copy must land above INBOX's last seq: when SESSIONS's last seq is
// not above it already, it is raised first by messages on a subject of
// its own, purged at once. Copies of messages already spliced are passed
// over by their id, as every redelivery is.
func sourceInbox(ctx context.Context, js jetstream.JetStream, old jetstream.Stream, have, want jetstream.StreamConfig) error {
	info, err := old.Info(ctx)
	if err != nil {
		return holdover.Wrapf(err, holdover.CodeInternal, "read stream %s", LegacyInboxStream)
	}
	if err := raiseAbove(ctx, js, have, info.State.LastSeq); err != nil {
		return err
	}
	sourcing := have
	sourcing.Sources = []*jetstream.StreamSource{{Name: LegacyInboxStream}}
	if _, err := js.UpdateStream(ctx, sourcing); err != nil {
		return holdover.Wrapf(err, holdover.CodeInternal, "source %s into %s", LegacyInboxStream, SessionsStream)
	}
	for {
		copied, err := inboxMessages(ctx, js)
		if err != nil {
			return err
		}
		if copied >= info.State.Msgs {
			break
		}
		select {
		case <-ctx.Done():
			return holdover.Wrapf(ctx.Err(), holdover.CodeInternal, "move %s into %s: %d of %d messages copied", LegacyInboxStream, SessionsStream, copied, info.State.Msgs)
		case <-time.After(migratePoll):
		}
	}
	if _, err := js.UpdateStream(ctx, want); err != nil {
		return holdover.Wrapf(err, holdover.CodeInternal, "give %s the inbox subjects", SessionsStream)
	}
	return nil
}

// inboxMessages counts the messages SESSIONS holds on inbox subjects.
func inboxMessages(ctx context.Context, js jetstream.JetStream) (uint64, error) {
	sessions, err := js.Stream(ctx, SessionsStream)
	if err != nil {
		return 0, holdover.Wrapf(err, holdover.CodeInternal, "look up stream %s", SessionsStream)
	}
	var n uint64
	for _, filter := range []string{AllInboxes, ReplySubjects} {
		info, err := sessions.Info(ctx, jetstream.WithSubjectFilter(filter))
		if err != nil {
			return 0, holdover.Wrapf(err, holdover.CodeInternal, "count %s in %s", filter, SessionsStream)
		}
		for _, c := range info.State.Subjects {
			n += c
		}
	}
	return n, nil
}

// raiseAbove raises the last seq of SESSIONS (configured as have) to at
// least seq, publishing on legacyPadding and purging it again.
func raiseAbove(ctx context.Context, js jetstream.JetStream, have jetstream.StreamConfig, seq uint64) error {
	sessions, err := js.Stream(ctx, SessionsStream)
	if err != nil {
		return holdover.Wrapf(err, holdover.CodeInternal, "look up stream %s", SessionsStream)
	}
	last := sessions.CachedInfo().State.LastSeq
	if last >= seq {
		return nil
	}
	padded := have
	padded.Subjects = append(slices.Clone(have.Subjects), legacyPadding)
	if _, err := js.UpdateStream(ctx, padded); err != nil {
		return holdover.Wrapf(err, holdover.CodeInternal, "let %s take %s", SessionsStream, legacyPadding)
	}
	for ; last < seq; last++ {
		if _, err := js.Publish(ctx, legacyPadding, nil); err != nil {
			return holdover.Wrapf(err, holdover.CodeInternal, "raise the last seq of %s above %s's %d", SessionsStream, LegacyInboxStream, seq)
		}
	}
	if err := sessions.Purge(ctx, jetstream.WithPurgeSubject(legacyPadding)); err != nil {
		return holdover.Wrapf(err, holdover.CodeInternal, "purge %s from %s", legacyPadding, SessionsStream)
	}
	return nil
}
