package integration

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/embedded"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/streams"
)

// cluster is n embedded servers joined into one JetStream cluster on
// loopback, each with its own store folder.
type cluster struct {
	t       testing.TB
	servers []*embedded.Server
	names   []string
}

// startCluster starts n servers routed to each other and waits until the
// cluster can provision the topology with cfg (a JetStream meta leader is
// elected), returning the provisioned topology.
func startCluster(t testing.TB, n int, cfg streams.Config) (*cluster, jetstream.JetStream, *streams.Topology) {
	t.Helper()
	ports := make([]int, n)
	routes := make([]string, n)
	for i := range ports {
		ports[i] = freePort(t)
		routes[i] = fmt.Sprintf("nats-route://127.0.0.1:%d", ports[i])
	}
	c := &cluster{t: t}
	for i := range n {
		name := fmt.Sprintf("n%d", i+1)
		srv, err := embedded.Start(embedded.Options{
			StoreDir: t.TempDir(),
			Name:     name,
			Cluster:  &embedded.ClusterOptions{Name: "holdover-test", Port: ports[i], Routes: routes},
		})
		require.NoError(t, err)
		c.servers = append(c.servers, srv)
		c.names = append(c.names, name)
	}
	t.Cleanup(func() {
		for _, s := range c.servers {
			if s != nil {
				s.Stop()
			}
		}
	})
	_, js := embeddedtest.Connect(t, c.url(), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	deadline := time.Now().Add(30 * time.Second)
	for {
		topo, err := streams.Provision(context.Background(), js, cfg)
		if err == nil {
			return c, js, topo
		}
		require.True(t, time.Now().Before(deadline), "the cluster never provisioned: %v", err)
		time.Sleep(100 * time.Millisecond) // the meta leader is being elected
	}
}

// url lists every running server, for clients that fail over.
func (c *cluster) url() string {
	var urls []string
	for _, s := range c.servers {
		if s != nil {
			urls = append(urls, s.ClientURL())
		}
	}
	return strings.Join(urls, ",")
}

// stop shuts down the server called name, gracefully.
func (c *cluster) stop(name string) {
	for i, n := range c.names {
		if n == name && c.servers[i] != nil {
			c.servers[i].Stop()
			c.servers[i] = nil
			return
		}
	}
	c.t.Fatalf("no running server %s", name)
}

func freePort(t testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
