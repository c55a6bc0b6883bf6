package persistence

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/inbox"
	"github.com/holdover-dev/holdover/liveroot"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/userquestions"
)

// Catalog is the checked-in record of persisted shapes, oldest entry first.
type Catalog struct {
	Entries []Entry `json:"entries"`
}

// Entry acknowledges one shape of one persisted type.
type Entry struct {
	Type        string `json:"type"`
	Fingerprint string `json:"fingerprint"`
	Shape       string `json:"shape"`
	// Compatible says whether data stored under the previous shape still
	// reads correctly under this one. A first entry is compatible.
	Compatible bool `json:"compatible"`
	// Removed says the type is no longer persisted from this entry on;
	// the note says what happens to data stored under it.
	Removed bool   `json:"removed,omitempty"`
	Note    string `json:"note"`
}

//go:embed catalog.json
var catalogJSON []byte

// Load parses the checked-in catalog.
func Load() (Catalog, error) {
	var c Catalog
	if err := json.Unmarshal(catalogJSON, &c); err != nil {
		return Catalog{}, fmt.Errorf("persistence/catalog.json: %w", err)
	}
	return c, nil
}

// Current maps each persisted type name to its shape today. Every shape
// that reaches a stream or a KV bucket belongs here.
func Current(extra map[string]string) map[string]string {
	shapes := map[string]string{
		"events.Event":             Shape(events.Event{}),
		"events.SourceKinds":       KindsShape(events.SourceKinds()),
		"events.Message":           Shape(events.Message{}),
		"events.Reply":             Shape(events.Reply{}),
		"events.RequestHeader":     Shape(events.RequestHeader{}),
		"events.AssistantMessage":  Shape(events.AssistantMessage{}),
		"events.ToolCall":          Shape(events.ToolCall{}),
		"events.ToolResult":        Shape(events.ToolResult{}),
		"events.PTCDispatch":       Shape(events.PTCDispatch{}),
		"events.UserMessage":       Shape(events.UserMessage{}),
		"events.InboxSpliced":      Shape(events.InboxSpliced{}),
		"events.InboxClaimed":      Shape(events.InboxClaimed{}),
		"events.InboxDiscarded":    Shape(events.InboxDiscarded{}),
		"events.TurnStart":         Shape(events.TurnStart{}),
		"events.TurnEnd":           Shape(events.TurnEnd{}),
		"events.StepEnd":           Shape(events.StepEnd{}),
		"projection.View":          Shape(projection.View{}),
		"liveroot.Record":          Shape(liveroot.Record{}),
		"inbox.Marker":             MarkerShape(),
		"userquestions.ClaimFrame": Shape(userquestions.ClaimFrame{}),
	}
	for k, v := range extra {
		shapes[k] = v
	}
	return shapes
}

// MarkerShape is the shape of a reply reservation marker: a message with
// an empty body on a late-reply subject, all in its headers (D8).
func MarkerShape() string {
	return "headers{" + inbox.MarkerHeader + ":" + KindsShape(inbox.Markers()) + "," +
		inbox.MarkerMessageHeader + ":string," + inbox.MarkerSeqHeader + ":uint64}"
}

// Check compares shapes with the catalog's latest entry for each type and
// describes every type whose shape is not acknowledged, with the entry to
// add.
func (c Catalog) Check(shapes map[string]string) error {
	latest := map[string]Entry{}
	for _, e := range c.Entries {
		latest[e.Type] = e
	}
	var problems []string
	names := make([]string, 0, len(shapes))
	for name := range shapes {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		shape := shapes[name]
		fp := Fingerprint(shape)
		if e, ok := latest[name]; ok && e.Fingerprint == fp {
			continue
		}
		want, _ := json.MarshalIndent(Entry{Type: name, Fingerprint: fp, Shape: shape, Note: "say what changed"}, "    ", "  ")
		problems = append(problems, fmt.Sprintf("persisted shape of %s changed or is new; acknowledge it by appending to persistence/catalog.json (set compatible to whether stored data still reads):\n    %s", name, want))
	}
	for name, e := range latest {
		if _, ok := shapes[name]; !ok && !e.Removed {
			problems = append(problems, fmt.Sprintf("catalog lists %s, which is no longer persisted; remove it only with a migration note", name))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "\n"))
	}
	return nil
}
