package deploy_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/holdover-dev/holdover/auth"
)

// manifests is the folder of the Kubernetes manifests.
var manifests = filepath.Join(repoRoot, "deploy", "kubernetes")

// kustomization is what the tests read of kustomization.yaml.
type kustomization struct {
	Resources          []string
	ConfigMapGenerator []struct {
		Name     string
		Literals []string
	} `yaml:"configMapGenerator"`
	SecretGenerator []struct {
		Name  string
		Files []string
	} `yaml:"secretGenerator"`
}

// secretFiles are the files of the generated Secret name: the key each is
// mounted under, and the source path it is made from.
func (k kustomization) secretFiles(name string) map[string]string {
	for _, s := range k.SecretGenerator {
		if s.Name != name {
			continue
		}
		files := map[string]string{}
		for _, f := range s.Files {
			key, source, ok := strings.Cut(f, "=")
			if !ok {
				key, source = path.Base(f), f
			}
			files[key] = source
		}
		return files
	}
	return nil
}

// object is what the tests read of a Kubernetes object.
type object struct {
	Kind     string
	Metadata struct {
		Name   string
		Labels map[string]string
	}
	Spec struct {
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		}
		Template *struct {
			Metadata struct{ Labels map[string]string }
			Spec     podSpec
		}
	}
}

type podSpec struct {
	SecurityContext struct {
		RunAsNonRoot *bool  `yaml:"runAsNonRoot"`
		RunAsUser    *int64 `yaml:"runAsUser"`
	} `yaml:"securityContext"`
	Containers []container
	Volumes    []struct {
		Name   string
		Secret *struct {
			SecretName string `yaml:"secretName"`
		}
	}
}

type container struct {
	Name    string
	Command []string
	Args    []string
	Env     []struct {
		Name      string
		Value     string
		ValueFrom *struct {
			ConfigMapKeyRef *struct{ Name, Key string } `yaml:"configMapKeyRef"`
		} `yaml:"valueFrom"`
	}
	Ports []struct {
		Name          string
		ContainerPort int `yaml:"containerPort"`
	}
	ReadinessProbe *struct {
		HTTPGet struct {
			Path string
			Port string
		} `yaml:"httpGet"`
	} `yaml:"readinessProbe"`
	VolumeMounts []struct {
		Name      string
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

// program is the binary a container runs, with its subcommand if it has
// one: "holdover provision", "question-worker".
func (c container) program() string {
	return strings.Join(append([]string{path.Base(c.Command[0])}, c.Command[1:]...), " ")
}

// flag is the value of --name=value in the container's arguments.
func (c container) flag(name string) (string, bool) {
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(strings.TrimLeft(a, "-"), name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// The roles whose credentials each program connects with.
var roles = map[string]auth.Role{
	"holdover provision": auth.Admin,
	"question-worker":    auth.Worker,
	"gateway":            auth.Gateway,
}

// The flag of the address each long-running program serves /healthz on.
var healthFlags = map[string]string{
	"question-worker": "metrics-addr",
	"gateway":         "listen",
}

func readYAML(t *testing.T, file string, into any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(manifests, file))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(data, into), file)
}

func readObjects(t *testing.T, k kustomization) []object {
	t.Helper()
	var objects []object
	for _, file := range k.Resources {
		data, err := os.ReadFile(filepath.Join(manifests, file))
		require.NoError(t, err)
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var o object
			err := dec.Decode(&o)
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err, file)
			objects = append(objects, o)
		}
	}
	return objects
}

// Every container of the manifests runs a binary of the image with flags
// and environment variables that binary has, reads its credentials and
// tokens from files its Secrets hold, connects with its role's
// credentials, runs as the image's user, and is ready by /healthz on the
// port the binary serves it on; every Deployment has a disruption budget.
func TestManifestsMatchTheBinaries(t *testing.T) {
	var k kustomization
	readYAML(t, "kustomization.yaml", &k)
	objects := readObjects(t, k)
	bins := imageBinaries(t)
	uid := imageUID(t, readDockerfile(t))
	authDir := t.TempDir()
	_, err := auth.Init(authDir)
	require.NoError(t, err)

	pods := 0
	for _, o := range objects {
		if o.Spec.Template == nil {
			continue
		}
		pods++
		pod := o.Spec.Template.Spec
		t.Run(o.Kind+"/"+o.Metadata.Name, func(t *testing.T) {
			require.NotNil(t, pod.SecurityContext.RunAsNonRoot)
			require.True(t, *pod.SecurityContext.RunAsNonRoot)
			require.NotNil(t, pod.SecurityContext.RunAsUser)
			require.Equal(t, uid, *pod.SecurityContext.RunAsUser, "the pod runs as the image's user")
			require.NotEmpty(t, pod.Containers)
			for _, c := range pod.Containers {
				require.NotEmpty(t, c.Command, c.Name)
				dir, bin := path.Split(c.Command[0])
				require.Equal(t, binDir+"/", dir, "%s runs a binary of the image", c.Name)
				require.Contains(t, bins, bin, "%s runs a binary the image has", c.Name)
				checkFlagsAndEnv(t, bins[bin], c)
				checkFiles(t, k, pod, c, authDir)
				if o.Kind == "Deployment" {
					checkReadiness(t, c)
				}
			}
			if o.Kind == "Deployment" {
				require.True(t, hasBudget(objects, o.Spec.Template.Metadata.Labels), "%s has a PodDisruptionBudget", o.Metadata.Name)
			}
		})
	}
	require.NotZero(t, pods, "the manifests run no pods")
}

// checkFlagsAndEnv runs the container's command and arguments with -h
// after them and its environment variables set to values of their own
// name: the binary must parse every argument, and show each variable's
// value as a flag's default, so each one reaches a flag.
func checkFlagsAndEnv(t *testing.T, bin string, c container) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(append(append([]string{}, c.Command[1:]...), c.Args...), "-h")...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for _, e := range c.Env {
		cmd.Env = append(cmd.Env, e.Name+"="+envProbe(e.Name))
	}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s %q -h: %s", c.program(), c.Args, out)
	for _, e := range c.Env {
		require.Contains(t, string(out), strconv.Quote(envProbe(e.Name)), "%s reads no flag's default from %s", c.program(), e.Name)
	}
}

// envProbe is the value checkFlagsAndEnv gives variable name.
func envProbe(name string) string { return "from-" + name }

// checkFiles checks the files the container names, as flag values and
// environment variables, against the volumes it mounts: each is a file of
// a Secret the kustomization generates, and credentials are those of the
// container's role, as `holdover auth init` writes them.
func checkFiles(t *testing.T, k kustomization, pod podSpec, c container, authDir string) {
	t.Helper()
	values := map[string]string{}
	for _, a := range c.Args {
		if name, v, ok := strings.Cut(strings.TrimLeft(a, "-"), "="); ok {
			values["--"+name] = v
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			ref := e.ValueFrom.ConfigMapKeyRef
			require.NotNil(t, ref, "%s: %s comes from a ConfigMap", c.Name, e.Name)
			require.True(t, hasConfigKey(k, ref.Name, ref.Key), "%s: the kustomization generates no %s with key %s", c.Name, ref.Name, ref.Key)
			continue
		}
		values[e.Name] = e.Value
	}
	creds := false
	for name, v := range values {
		for _, m := range c.VolumeMounts {
			key, ok := strings.CutPrefix(v, m.MountPath+"/")
			if !ok {
				continue
			}
			secret := secretOf(pod, m.Name)
			require.NotEmpty(t, secret, "%s: volume %s is a Secret", c.Name, m.Name)
			files := k.secretFiles(secret)
			require.Contains(t, files, key, "%s: %s=%s is no file of Secret %s", c.Name, name, v, secret)
			if name != "HOLDOVER_NATS_CREDS" && name != "--creds" {
				continue
			}
			creds = true
			source, ok := strings.CutPrefix(files[key], "auth/")
			require.True(t, ok, "%s: the credentials come from the folder of `holdover auth init`", c.Name)
			role, err := auth.RoleOf(filepath.Join(authDir, source))
			require.NoError(t, err, "%s: `holdover auth init` writes no %s", c.Name, source)
			require.Equal(t, roles[c.program()], role, "%s connects with %s credentials", c.program(), roles[c.program()])
		}
	}
	require.True(t, creds, "%s connects with credentials from a Secret", c.Name)
}

// checkReadiness checks the container is ready by /healthz on the port
// its binary serves it on.
func checkReadiness(t *testing.T, c container) {
	t.Helper()
	require.NotNil(t, c.ReadinessProbe, "%s has a readiness probe", c.Name)
	require.Equal(t, "/healthz", c.ReadinessProbe.HTTPGet.Path)
	port := c.ReadinessProbe.HTTPGet.Port
	for _, p := range c.Ports {
		if p.Name == port {
			port = strconv.Itoa(p.ContainerPort)
		}
	}
	flagName, ok := healthFlags[c.program()]
	require.True(t, ok, "which flag of %s serves /healthz", c.program())
	addr, ok := c.flag(flagName)
	require.True(t, ok, "%s sets --%s: the default is loopback only, out of the kubelet's reach", c.Name, flagName)
	host, served, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	require.Contains(t, []string{"", "0.0.0.0", "::"}, host, "--%s listens on every interface", flagName)
	require.Equal(t, served, port, "the probe asks the port --%s serves /healthz on", flagName)
}

func secretOf(pod podSpec, volume string) string {
	for _, v := range pod.Volumes {
		if v.Name == volume && v.Secret != nil {
			return v.Secret.SecretName
		}
	}
	return ""
}

func hasConfigKey(k kustomization, name, key string) bool {
	for _, g := range k.ConfigMapGenerator {
		for _, l := range g.Literals {
			if g.Name == name && strings.HasPrefix(l, key+"=") {
				return true
			}
		}
	}
	return false
}

// hasBudget reports whether a PodDisruptionBudget selects pods labelled labels.
func hasBudget(objects []object, labels map[string]string) bool {
	for _, o := range objects {
		if o.Kind != "PodDisruptionBudget" || len(o.Spec.Selector.MatchLabels) == 0 {
			continue
		}
		matches := true
		for k, v := range o.Spec.Selector.MatchLabels {
			matches = matches && labels[k] == v
		}
		if matches {
			return true
		}
	}
	return false
}

// The NATS chart's values run as many servers as the provision Job asks
// replicas of, and include the server fragment of `holdover auth init`
// from where they mount its Secret.
func TestNATSValues(t *testing.T) {
	var values struct {
		Config struct {
			Cluster struct {
				Enabled  bool
				Replicas int
			}
			Jetstream struct{ Enabled bool }
			Merge     map[string]string
		}
		PodTemplate struct {
			Patch []struct {
				Value struct {
					Name   string
					Secret struct {
						SecretName string `yaml:"secretName"`
					}
				}
			}
		} `yaml:"podTemplate"`
		Container struct {
			Patch []struct {
				Value struct {
					Name      string
					MountPath string `yaml:"mountPath"`
				}
			}
		}
	}
	readYAML(t, "nats-values.yaml", &values)
	require.True(t, values.Config.Cluster.Enabled)
	require.True(t, values.Config.Jetstream.Enabled)

	var k kustomization
	readYAML(t, "kustomization.yaml", &k)
	provisioned := false
	for _, o := range readObjects(t, k) {
		if o.Spec.Template == nil {
			continue
		}
		for _, c := range o.Spec.Template.Spec.Containers {
			if c.program() == "holdover provision" {
				replicas, ok := c.flag("replicas")
				require.True(t, ok, "the provision Job sets --replicas")
				require.Equal(t, strconv.Itoa(values.Config.Cluster.Replicas), replicas, "one replica of each stream per server")
				provisioned = true
			}
		}
	}
	require.True(t, provisioned, "a Job runs `holdover provision`")

	include := values.Config.Merge["$include"]
	require.NotEmpty(t, include)
	require.Len(t, values.PodTemplate.Patch, 1)
	require.Len(t, values.Container.Patch, 1)
	volume, mount := values.PodTemplate.Patch[0].Value, values.Container.Patch[0].Value
	require.Equal(t, volume.Name, mount.Name)
	require.NotEmpty(t, volume.Secret.SecretName)
	// The chart writes its configuration to /etc/nats-config/nats.conf.
	require.Equal(t, path.Join(mount.MountPath, auth.ServerConfigFile), path.Join("/etc/nats-config", include))
}
