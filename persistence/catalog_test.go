package persistence_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/persistence"
)

// D10: every persisted shape is acknowledged in the catalog.
func TestCatalogAcknowledgesEveryPersistedShape(t *testing.T) {
	c, err := persistence.Load()
	require.NoError(t, err)
	require.NoError(t, c.Check(persistence.Current(nil)))
}

// D10: a shape change without a catalog entry fails.
func TestCatalogRejectsUnacknowledgedChange(t *testing.T) {
	c, err := persistence.Load()
	require.NoError(t, err)
	shapes := persistence.Current(nil)
	shapes["events.SourceKinds"] = persistence.KindsShape([]string{"user", "user-question-reply", "invented"})
	err = c.Check(shapes)
	require.Error(t, err)
	require.Contains(t, err.Error(), "events.SourceKinds")
}

func TestShapeFollowsJSONNames(t *testing.T) {
	type inner struct {
		A string `json:"a,omitempty"`
	}
	type outer struct {
		X      int     `json:"x"`
		In     []inner `json:"in"`
		hidden int
		Skip   string `json:"-"`
	}
	require.Equal(t, "{x:int,in:[{a?:string}]}", persistence.Shape(outer{}))
}

// D10: a type may stop being persisted only with an entry that says it
// was removed; persisting it again needs a new entry.
func TestCatalogAcknowledgesRemovedTypes(t *testing.T) {
	c := persistence.Catalog{Entries: []persistence.Entry{{Type: "x.Gone", Fingerprint: persistence.Fingerprint("{a:int}"), Shape: "{a:int}", Compatible: true}}}
	require.ErrorContains(t, c.Check(map[string]string{}), "no longer persisted")
	c.Entries = append(c.Entries, persistence.Entry{Type: "x.Gone", Removed: true, Note: "gone, not migrated"})
	require.NoError(t, c.Check(map[string]string{}))
	require.ErrorContains(t, c.Check(map[string]string{"x.Gone": "{a:int}"}), "x.Gone")
}
