package schemas_test

import (
	"encoding/json"
	"path"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/clientwire"
	"github.com/holdover-dev/holdover/schemas"
)

// Every frame of package clientwire's catalog has its schema in
// websocket/client/ or websocket/gateway/, and every schema there is a
// frame of the catalog, of the side whose folder it is in, with the
// frame's type as its type's const.
func TestEveryFrameHasASchemaAndEverySchemaAFrame(t *testing.T) {
	docs := loadDocs(t)
	for _, side := range []struct {
		dir   string
		specs []clientwire.Spec
	}{{"websocket/client", clientwire.ClientFrames()}, {"websocket/gateway", clientwire.GatewayFrames()}} {
		var files, frames []string
		for name := range docs {
			if path.Dir(name) == side.dir {
				files = append(files, name)
			}
		}
		for _, s := range side.specs {
			frames = append(frames, s.Schema())
			doc, ok := docs[s.Schema()].(map[string]any)
			if !assert.True(t, ok, "the %s frame has no schema %s", s.Type, s.Schema()) {
				continue
			}
			typ := doc["properties"].(map[string]any)["type"].(map[string]any)
			assert.Equal(t, s.Type, typ["const"], "%s: the type member's const", s.Schema())
			assert.Contains(t, doc["required"], "type", s.Schema())
		}
		sort.Strings(files)
		sort.Strings(frames)
		assert.Equal(t, frames, files, "the schemas in %s and the frames of the catalog", side.dir)
	}
}

// What Go writes of every frame fits its schema (TestWhatGoWritesFitsItsSchema)
// and reads back as the same frame through the catalog, as the side that
// receives it reads it.
func TestEveryFrameDecodesBack(t *testing.T) {
	frames := fullFrames()
	var covered []string
	for _, f := range frames {
		spec := frameSpec(f)
		covered = append(covered, spec.Schema())
		data, err := json.Marshal(f)
		require.NoError(t, err)
		back, err := spec.Decode(data)
		require.NoError(t, err, "%s", data)
		assert.Equal(t, f, back, "%s", data)
	}
	var all []string
	for _, s := range slices.Concat(clientwire.ClientFrames(), clientwire.GatewayFrames()) {
		all = append(all, s.Schema())
	}
	sort.Strings(covered)
	sort.Strings(all)
	assert.Equal(t, all, covered, "fullFrames has one frame of every type")
}

// A frame the schema accepts is never refused by the side that reads it:
// for every frame with one value spoiled (a string emptied, a number made
// -1 or 1.5) or one member left out, when the schema still accepts it, so
// does the reader. The readers may be more lenient than the schema (the
// gateway takes a hello without a client name), never stricter.
func TestReadersTakeEveryFrameTheSchemaAccepts(t *testing.T) {
	for _, f := range fullFrames() {
		spec := frameSpec(f)
		data, err := json.Marshal(f)
		require.NoError(t, err)
		var doc any
		require.NoError(t, json.Unmarshal(data, &doc))
		variants := spoil(doc, "")
		for name := range doc.(map[string]any) {
			if name == "type" {
				continue
			}
			without := map[string]any{}
			for k, v := range doc.(map[string]any) {
				if k != name {
					without[k] = v
				}
			}
			variants = append(variants, spoiled{"without /" + name, without})
		}
		for _, v := range variants {
			mod, err := json.Marshal(v.doc)
			require.NoError(t, err)
			problems, err := schemas.Validate(spec.Schema(), mod)
			require.NoError(t, err)
			if len(problems) > 0 {
				continue
			}
			_, err = spec.Decode(mod)
			assert.NoError(t, err, "%s with %s fits %s, yet its reader refuses it", spec.Type, v.what, spec.Schema())
		}
	}
}

// The welcome names a version the gateway speaks: the schema lists
// exactly the versions from clientwire.OldestProtocolVersion to
// clientwire.ProtocolVersion, so the web Client's generated type does too.
func TestTheWelcomeSpeaksTheProtocolVersions(t *testing.T) {
	doc := loadDocs(t)["websocket/gateway/welcome.json"].(map[string]any)
	var spoken []any
	for v := clientwire.OldestProtocolVersion; v <= clientwire.ProtocolVersion; v++ {
		spoken = append(spoken, float64(v))
	}
	assert.Equal(t, spoken, doc["properties"].(map[string]any)["protocol"].(map[string]any)["enum"])
	assert.True(t, strings.HasSuffix(doc["title"].(string), "Frame"))
}
