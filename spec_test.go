package holdover_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// requirementID matches a requirement id as code, tests and docs cite it.
var requirementID = regexp.MustCompile(`\b[MWDCPG][0-9]{1,2}\b`)

// definedID matches a requirement's definition in docs/spec.md.
var definedID = regexp.MustCompile(`(?m)^- \*\*([MWDCPG][0-9]{1,2}) —`)

// TestEveryCitedRequirementResolves keeps the repository standing alone:
// every requirement id cited anywhere in it is defined in docs/spec.md.
func TestEveryCitedRequirementResolves(t *testing.T) {
	spec, err := os.ReadFile("docs/spec.md")
	require.NoError(t, err)
	defined := map[string]bool{}
	for _, m := range definedID.FindAllStringSubmatch(string(spec), -1) {
		defined[m[1]] = true
	}
	require.NotEmpty(t, defined, "docs/spec.md defines no requirement")

	missing := map[string][]string{}
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "dist", "bin", ".holdover":
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".ts", ".tsx", ".md", ".mjs":
		default:
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, id := range requirementID.FindAllString(string(data), -1) {
			if !defined[id] && !slices.Contains(missing[id], path) {
				missing[id] = append(missing[id], path)
			}
		}
		return nil
	})
	require.NoError(t, err)
	for id, paths := range missing {
		t.Errorf("%s is cited in %s but not defined in docs/spec.md", id, strings.Join(paths, ", "))
	}
}
