package auth_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/streams"
)

// Init keeps its keys: a second run names the same accounts (whose public
// keys name their JetStream data), adds a new tenant beside the old ones,
// and issues every role's credentials again, readable by their owner only.
func TestInitIsIdempotent(t *testing.T) {
	dir := t.TempDir()
	first, err := auth.Init(dir)
	require.NoError(t, err)
	require.Equal(t, []string{auth.DefaultTenant}, first.Tenants())
	second, err := auth.Init(dir, "acme")
	require.NoError(t, err)
	require.Equal(t, []string{"acme", auth.DefaultTenant}, second.Tenants())
	require.Equal(t, first.Account(auth.DefaultTenant), second.Account(auth.DefaultTenant))
	for _, r := range auth.Roles {
		st, err := os.Stat(second.Creds("acme", r))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "%s credentials", r)
		role, err := auth.RoleOf(second.Creds("acme", r))
		require.NoError(t, err)
		require.Equal(t, r, role)
	}
	_, err = auth.Init(dir, "a.b")
	require.ErrorContains(t, err, "tenant \"a.b\"")
}

// The server fragment Init writes is a nats-server configuration that
// admits exactly these credentials: a server started from it (as an
// operator would include it) takes a role's credentials and refuses a
// connection without any.
func TestServerConfigFragmentAdmitsTheCredentials(t *testing.T) {
	dir := t.TempDir()
	setup, err := auth.Init(dir)
	require.NoError(t, err)
	conf := filepath.Join(dir, "server.conf")
	require.NoError(t, os.WriteFile(conf, []byte("listen: 127.0.0.1:-1\njetstream: {store_dir: "+
		`"`+filepath.Join(dir, "js")+`"`+"}\ninclude "+auth.ServerConfigFile+"\n"), 0o600))
	opts, err := server.ProcessConfigFile(conf)
	require.NoError(t, err)
	opts.NoSigs = true
	ns, err := server.NewServer(opts)
	require.NoError(t, err)
	go ns.Start()
	require.True(t, ns.ReadyForConnections(10*time.Second))
	t.Cleanup(ns.Shutdown)

	_, err = nats.Connect(ns.ClientURL())
	require.ErrorContains(t, err, "Authorization Violation")
	secure, err := ops.NATSConfig{Creds: setup.Creds(auth.DefaultTenant, auth.Operator)}.Options()
	require.NoError(t, err)
	nc, err := nats.Connect(ns.ClientURL(), secure...)
	require.NoError(t, err)
	defer nc.Close()
	_, err = nc.Request("$JS.API.INFO", nil, 5*time.Second)
	require.NoError(t, err, "the operator reads JetStream in its tenant's account, replies under its own inbox prefix")
}

// Restore credentials are a user of the tenant's data account itself,
// where a restore's chunks arrive intact (no import between): they see
// the tenant's streams without crossing, may snapshot and restore them and
// nothing else (a direct get is refused), and expire.
func TestRestoreCredsReachTheDataAccountForAWhile(t *testing.T) {
	env := embeddedtest.StartSecure(t, streams.Config{Memory: true})
	dir := env.Auth.Dir()
	_, err := auth.RestoreCreds(dir, "nobody", time.Hour)
	require.True(t, holdover.HasCode(err, holdover.CodeNotFound), "%v", err)
	_, err = auth.RestoreCreds(dir, auth.DefaultTenant, 48*time.Hour)
	require.True(t, holdover.HasCode(err, holdover.CodeBadRequest), "%v", err)

	path, err := auth.RestoreCreds(dir, auth.DefaultTenant, time.Hour)
	require.NoError(t, err)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	token, err := jwt.ParseDecoratedJWT(data)
	require.NoError(t, err)
	uc, err := jwt.DecodeUserClaims(token)
	require.NoError(t, err)
	require.Equal(t, env.Auth.Account(auth.DefaultTenant), uc.Issuer, "signed by the data account")
	require.InDelta(t, time.Now().Add(time.Hour).Unix(), uc.Expires, 60)

	refused := make(chan error, 4)
	nc, js := embeddedtest.Connect(t, env.Server.ClientURL(), nats.UserCredentials(path), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { refused <- err }))
	var names []string
	for n := range js.StreamNames(context.Background()).Name() {
		names = append(names, n)
	}
	require.ElementsMatch(t, []string{streams.SessionsStream, streams.ClaimsStream, "KV_userQuestions", "KV_liveRoots"}, names)
	require.NoError(t, nc.PublishRequest("$JS.API.DIRECT.GET.KV_userQuestions", nats.NewInbox(), []byte(`{"seq":1}`)))
	require.NoError(t, nc.Flush())
	select {
	case err := <-refused:
		require.ErrorContains(t, err, "Permissions Violation")
	case <-time.After(patience):
		t.Fatal("a direct get was not refused")
	}
}
