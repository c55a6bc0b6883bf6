package deploy_test

import (
	"bufio"
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// repoRoot is the repository's root, this package's parent folder.
const repoRoot = ".."

// dockerfile is what the tests read of the Dockerfile, its instructions
// with continuation lines joined and comments dropped.
type dockerfile struct {
	froms  [][]string // the words after each FROM, in order
	build  string     // the RUN command that runs go build
	copies [][]string // the words after each COPY
	user   string     // the last USER
}

func readDockerfile(t *testing.T) dockerfile {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot, "Dockerfile"))
	require.NoError(t, err)
	defer f.Close()
	var (
		d    dockerfile
		line string
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		text := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(text, "#") {
			continue
		}
		if cont, ok := strings.CutSuffix(text, `\`); ok {
			line += cont + " "
			continue
		}
		line += text
		instruction, rest, _ := strings.Cut(line, " ")
		line = ""
		switch strings.ToUpper(instruction) {
		case "FROM":
			d.froms = append(d.froms, strings.Fields(rest))
		case "RUN":
			if strings.Contains(rest, "go build") {
				d.build = rest
			}
		case "COPY":
			d.copies = append(d.copies, strings.Fields(rest))
		case "USER":
			d.user = rest
		}
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, d.froms, "the Dockerfile has no FROM")
	require.NotEmpty(t, d.build, "the Dockerfile runs no go build")
	return d
}

// outDir is the folder the build stage writes the binaries to, which the
// final stage copies to binDir.
func (d dockerfile) outDir(t *testing.T) string {
	t.Helper()
	for _, c := range d.copies {
		if len(c) == 3 && strings.HasPrefix(c[0], "--from=") && c[2] == binDir+"/" {
			return c[1]
		}
	}
	t.Fatalf("the final stage copies no build output to %s/: %q", binDir, d.copies)
	return ""
}

// binDir is where the image keeps the binaries, and so where the
// manifests' commands must find them.
const binDir = "/usr/local/bin"

// The build stage is the Go of go.mod and builds every command under cmd/
// without cgo; the final stage is an image with nothing but the binaries
// and runs them as a numeric user that is not root.
func TestDockerfile(t *testing.T) {
	d := readDockerfile(t)

	out, err := exec.Command("go", "mod", "edit", "-json", filepath.Join(repoRoot, "go.mod")).Output()
	require.NoError(t, err)
	var mod struct{ Go string }
	require.NoError(t, json.Unmarshal(out, &mod))
	require.Equal(t, "golang:"+mod.Go, d.froms[0][0], "the build stage's Go is go.mod's")

	require.Contains(t, d.build, "CGO_ENABLED=0", "binaries for an image without a C library")
	require.Contains(t, d.build, " -o "+d.outDir(t)+" ")
	var built []string
	for _, w := range strings.Fields(d.build) {
		if strings.HasPrefix(w, "./") {
			built = append(built, w)
		}
	}
	require.ElementsMatch(t, mainPackages(t), built, "the image builds every command under cmd/")

	final := d.froms[len(d.froms)-1][0]
	require.True(t, final == "scratch" || strings.HasPrefix(final, "gcr.io/distroless/static"),
		"the final stage is scratch or distroless/static, not %s", final)
	require.NotZero(t, imageUID(t, d), "the image runs as a user that is not root")
}

// The binaries the Dockerfile's build command makes need no C library or
// dynamic loader, so they run on the static base image.
func TestImageBinariesAreStatic(t *testing.T) {
	bins := imageBinaries(t)
	require.Len(t, bins, len(mainPackages(t)))
	for name, path := range bins {
		f, err := elf.Open(path)
		require.NoError(t, err, name)
		for _, p := range f.Progs {
			require.NotEqual(t, elf.PT_INTERP, p.Type, "%s asks for a dynamic loader", name)
		}
		libs, err := f.ImportedLibraries()
		require.NoError(t, err, name)
		require.Empty(t, libs, "%s links shared libraries", name)
		require.NoError(t, f.Close())
	}
}

// imageUID is the numeric user of the Dockerfile's USER line, which must
// be numeric for Kubernetes' runAsNonRoot to check it.
func imageUID(t *testing.T, d dockerfile) int64 {
	t.Helper()
	user, _, _ := strings.Cut(d.user, ":")
	uid, err := strconv.ParseInt(user, 10, 64)
	require.NoError(t, err, "USER %q is not numeric", d.user)
	return uid
}

// mainPackages are the commands under cmd/, as ./cmd/<name>.
func mainPackages(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{if eq .Name "main"}}{{.Dir}}{{end}}`, "./cmd/...")
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	require.NoError(t, err)
	root, err := filepath.Abs(repoRoot)
	require.NoError(t, err)
	var pkgs []string
	for _, dir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, dir)
		require.NoError(t, err)
		pkgs = append(pkgs, "./"+filepath.ToSlash(rel))
	}
	slices.Sort(pkgs)
	return pkgs
}

// imageBinaries runs the Dockerfile's build command, writing to a
// temporary folder instead of the build stage's, and returns each binary
// by name. The binaries are built once per test run.
func imageBinaries(t *testing.T) map[string]string {
	t.Helper()
	if built == nil {
		d := readDockerfile(t)
		dir, err := os.MkdirTemp("", "holdover-image-")
		require.NoError(t, err)
		builtDir = dir
		cmd := exec.Command("sh", "-c", strings.Replace(d.build, " -o "+d.outDir(t)+" ", " -o "+dir+"/ ", 1))
		cmd.Dir = repoRoot
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		built = map[string]string{}
		for _, e := range entries {
			built[e.Name()] = filepath.Join(dir, e.Name())
		}
	}
	return built
}

var (
	built    map[string]string
	builtDir string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if builtDir != "" {
		_ = os.RemoveAll(builtDir)
	}
	os.Exit(code)
}
