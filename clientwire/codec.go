package clientwire

import gojson "github.com/goccy/go-json"

// unmarshal is the JSON decoder of every frame the wire reads, its head
// and its body alike, so that both read the same members.
//
// The gateway reads a Client frame twice, its head (ReadHead) and then
// its type's struct (Decode), and with encoding/json that cost twice what
// one read of the old catch-all frame did (BenchmarkReadFrame in package
// gateway). goccy/go-json gives encoding/json's results several times
// faster, as in package events' codec: the same values, the same
// strictness and errors at the same inputs, which FuzzReadMatchesStd
// checks against encoding/json, the reference, for the head and every
// frame type.
var unmarshal = gojson.Unmarshal
