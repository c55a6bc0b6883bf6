package auth_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/ops"
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
