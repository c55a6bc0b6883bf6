package streams

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover"
)

// Config chooses how the topology is stored. The zero value is one replica
// on file storage.
type Config struct {
	// Replicas per stream and bucket: 1 for a single server, 3 for a cluster.
	Replicas int
	// Memory keeps streams and buckets in memory instead of files (tests).
	Memory bool
	// MaxConsumers bounds consumers per stream; claims are consumers, so it
	// must allow the number of concurrent claims. 0 leaves the account's
	// bound (holdover auth init --max-consumers), or the server's default.
	MaxConsumers int
	// Durables names durable consumers on SESSIONS that an admin keeps
	// besides the shared ones (SharedDurables): a notifier's --durable,
	// say. The worker deletes any other durable there once it has been
	// idle for its bound (package worker, "consumers that outlive their
	// readers"). They are kept in the stream's metadata (DurablesMetadata).
	Durables []string
	// DuplicateWindow is how long a message id makes a retried publish a
	// no-op. 0 means 10 minutes.
	DuplicateWindow time.Duration
	// ClaimFrameAge is how long the claims stream keeps a frame a worker sent
	// into a claim; frames are delivered at once, so it only bounds the
	// stream's size. 0 means 10 minutes.
	ClaimFrameAge time.Duration
}

func (c Config) replicas() int {
	if c.Replicas < 1 {
		return 1
	}
	return c.Replicas
}

func (c Config) storage() jetstream.StorageType {
	if c.Memory {
		return jetstream.MemoryStorage
	}
	return jetstream.FileStorage
}

func (c Config) duplicates() time.Duration {
	if c.DuplicateWindow <= 0 {
		return 10 * time.Minute
	}
	return c.DuplicateWindow
}

func (c Config) claimFrameAge() time.Duration {
	if c.ClaimFrameAge <= 0 {
		return 10 * time.Minute
	}
	return c.ClaimFrameAge
}

// Topology holds handles to every provisioned stream and bucket.
type Topology struct {
	// Sessions holds the Session logs and inboxes.
	Sessions  jetstream.Stream
	Claims    jetstream.Stream
	Questions jetstream.KeyValue
	Roots     jetstream.KeyValue
}

// StreamConfigs returns the desired stream configurations.
func (c Config) StreamConfigs() []jetstream.StreamConfig {
	base := func(name, description string, subjects ...string) jetstream.StreamConfig {
		return jetstream.StreamConfig{
			Name:         name,
			Description:  description,
			Subjects:     subjects,
			Retention:    jetstream.LimitsPolicy,
			Storage:      c.storage(),
			Replicas:     c.replicas(),
			MaxConsumers: c.MaxConsumers,
			MaxMsgSize:   1 << 20,
			Duplicates:   c.duplicates(),
			AllowDirect:  true,
		}
	}
	claims := base(ClaimsStream, "Holdover Client claims and liveness leases: ephemeral consumers and the frames sent into them", ClaimPrefix+".>")
	claims.MaxAge = c.claimFrameAge()
	claims.Duplicates = min(claims.Duplicates, claims.MaxAge) // JetStream refuses a window beyond MaxAge
	sessions := base(SessionsStream, "Holdover Sessions: the log of each, its durable steered messages and its late replies per call",
		SessionSubjects...)
	if len(c.Durables) > 0 {
		names := slices.Sorted(slices.Values(c.Durables))
		sessions.Metadata = map[string]string{DurablesMetadata: strings.Join(slices.Compact(names), ",")}
	}
	return []jetstream.StreamConfig{sessions, claims}
}

// DurablesMetadata is the key of SESSIONS' metadata that lists, comma
// separated, the durable consumers an admin keeps besides the shared ones
// (Config.Durables).
const DurablesMetadata = "holdover.durables"

// KeptDurables are the durable consumers on SESSIONS that live while
// nobody reads them: the shared ones (ProjectionDurable, RepliesDurable,
// NotifyDurable) and those the stream's metadata declares (cfg is SESSIONS'
// configuration as the server reports it).
func KeptDurables(cfg jetstream.StreamConfig) map[string]bool {
	kept := map[string]bool{ProjectionDurable: true, RepliesDurable: true, NotifyDurable: true}
	if declared := cfg.Metadata[DurablesMetadata]; declared != "" {
		for _, name := range strings.Split(declared, ",") {
			kept[name] = true
		}
	}
	return kept
}

// BucketConfigs returns the desired KV bucket configurations.
func (c Config) BucketConfigs() []jetstream.KeyValueConfig {
	kv := func(name, description string) jetstream.KeyValueConfig {
		return jetstream.KeyValueConfig{
			Bucket:      name,
			Description: description,
			History:     1,
			Storage:     c.storage(),
			Replicas:    c.replicas(),
		}
	}
	return []jetstream.KeyValueConfig{
		kv(QuestionsBucket, "Holdover userQuestions projection, key = Session id"),
		kv(RootsBucket, "Holdover live runtime root per Session, key = Session id"),
	}
}

// Provision creates or updates every stream and bucket. It is idempotent.
// A change JetStream cannot make in place (storage type, say) is an error
// that names the stream and field.
//
// A topology of an older version, which kept the inbox subjects in a
// stream of their own (LegacyInboxStream), is migrated first without
// losing a message ([migrateInbox]).
func Provision(ctx context.Context, js jetstream.JetStream, c Config) (*Topology, error) {
	wants := c.StreamConfigs()
	if err := migrateInbox(ctx, js, wants[0]); err != nil {
		return nil, err
	}
	var handles []jetstream.Stream
	for _, want := range wants {
		s, err := ensureStream(ctx, js, want)
		if err != nil {
			return nil, err
		}
		handles = append(handles, s)
	}
	var buckets []jetstream.KeyValue
	for _, want := range c.BucketConfigs() {
		kv, err := ensureBucket(ctx, js, want)
		if err != nil {
			return nil, err
		}
		buckets = append(buckets, kv)
	}
	return &Topology{
		Sessions: handles[0], Claims: handles[1],
		Questions: buckets[0], Roots: buckets[1],
	}, nil
}

// Open looks up the provisioned topology on js and changes nothing: what a
// process whose credentials may not provision (every role but admin,
// package auth) starts from. A missing stream or bucket is an error that
// says to provision first.
func Open(ctx context.Context, js jetstream.JetStream) (*Topology, error) {
	t := &Topology{}
	for _, s := range []struct {
		name string
		into *jetstream.Stream
	}{{SessionsStream, &t.Sessions}, {ClaimsStream, &t.Claims}} {
		h, err := js.Stream(ctx, s.name)
		if err != nil {
			return nil, missing(err, jetstream.ErrStreamNotFound, "stream", s.name)
		}
		*s.into = h
	}
	for _, b := range []struct {
		name string
		into *jetstream.KeyValue
	}{{QuestionsBucket, &t.Questions}, {RootsBucket, &t.Roots}} {
		h, err := js.KeyValue(ctx, b.name)
		if err != nil {
			return nil, missing(err, jetstream.ErrBucketNotFound, "bucket", b.name)
		}
		*b.into = h
	}
	return t, nil
}

// missing is Open's error for a stream or bucket it could not look up:
// NOT_FOUND when it is not provisioned (notFound), INTERNAL otherwise.
func missing(err, notFound error, kind, name string) error {
	if errors.Is(err, notFound) {
		return holdover.Wrapf(err, holdover.CodeNotFound, "%s %s is not provisioned (run holdover provision)", kind, name)
	}
	return holdover.Wrapf(err, holdover.CodeInternal, "look up %s %s", kind, name)
}

func ensureStream(ctx context.Context, js jetstream.JetStream, want jetstream.StreamConfig) (jetstream.Stream, error) {
	existing, err := js.Stream(ctx, want.Name)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		s, err := js.CreateStream(ctx, want)
		if err != nil {
			return nil, refused(err, want.Replicas, "create stream %s", want.Name)
		}
		return s, nil
	case err != nil:
		return nil, holdover.Wrapf(err, holdover.CodeInternal, "look up stream %s", want.Name)
	}
	have := existing.CachedInfo().Config
	if err := immutable(want.Name, have.Storage != want.Storage, "storage", have.Storage, want.Storage); err != nil {
		return nil, err
	}
	if err := immutable(want.Name, have.Retention != want.Retention, "retention", have.Retention, want.Retention); err != nil {
		return nil, err
	}
	s, err := js.UpdateStream(ctx, want)
	if err != nil {
		return nil, refused(err, want.Replicas, "update stream %s", want.Name)
	}
	return s, nil
}

func ensureBucket(ctx context.Context, js jetstream.JetStream, want jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	existing, err := js.KeyValue(ctx, want.Bucket)
	if err == nil {
		status, err := existing.Status(ctx)
		if err != nil {
			return nil, holdover.Wrapf(err, holdover.CodeInternal, "read bucket %s", want.Bucket)
		}
		info := status.(*jetstream.KeyValueBucketStatus).StreamInfo()
		if err := immutable("KV "+want.Bucket, info.Config.Storage != want.Storage, "storage", info.Config.Storage, want.Storage); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, holdover.Wrapf(err, holdover.CodeInternal, "look up bucket %s", want.Bucket)
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, want)
	if err != nil {
		return nil, refused(err, want.Replicas, "provision bucket %s", want.Bucket)
	}
	return kv, nil
}

// Unavailable reports whether err says JetStream did not answer for now,
// as on a cluster without a quorum (no reply in time, or "JetStream
// system temporarily unavailable"), rather than refused: what is worth
// trying again.
func Unavailable(err error) bool {
	var apiErr *jetstream.APIError
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrNoResponders) ||
		(errors.As(err, &apiErr) && apiErr.Code == http.StatusServiceUnavailable)
}

// JetStream's error codes for replicas it cannot place.
const (
	errCodeReplicasNotSupported jetstream.ErrorCode = 10074 // a server that runs alone, not in a cluster
	errCodeNoPeers              jetstream.ErrorCode = 10005 // fewer servers up than replicas
	errCodeInsufficientResource jetstream.ErrorCode = 10023 // too few servers with room
)

// refused is the error of a stream or bucket JetStream would not create
// or update. One it refuses for its replicas is a BAD_REQUEST that says
// what the replicas need, since the server's words ("replicas > 1 not
// supported in non-clustered mode") name no fix; any other is INTERNAL.
func refused(err error, replicas int, format string, args ...any) error {
	var apiErr *jetstream.APIError
	if replicas > 1 && errors.As(err, &apiErr) {
		format += ": %d replicas need a NATS cluster of at least %d JetStream servers, "
		args = append(args, replicas, replicas)
		switch apiErr.ErrorCode {
		case errCodeReplicasNotSupported:
			return holdover.Wrapf(err, holdover.CodeBadRequest, format+"and this server runs alone: point --nats at a cluster, or provision a single server with --replicas 1", args...)
		case errCodeNoPeers, errCodeInsufficientResource:
			return holdover.Wrapf(err, holdover.CodeBadRequest, format+"up and with room; fewer are: start the missing servers, or lower --replicas", args...)
		}
	}
	return holdover.Wrapf(err, holdover.CodeInternal, format, args...)
}

func immutable(name string, changed bool, field string, have, want any) error {
	if !changed {
		return nil
	}
	return holdover.Newf(holdover.CodeBadRequest, "stream %s exists with %s %v; JetStream cannot change it to %v in place: migrate the data or use a fresh server", name, field, have, want)
}
