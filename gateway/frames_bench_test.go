package gateway

import "testing"

// benchFrames are Client frames as a Client sends them, the common ones
// of each pace and need.
var benchFrames = []struct{ name, data string }{
	{"hello", `{"type":"hello","protocol":2,"client":"holdover-web","token":"t0k3n-0123456789abcdef"}`},
	{"watch", `{"type":"watch","id":"w1","session":"s-42","fromSeq":18}`},
	{"call", `{"type":"call","id":"c2","method":"userQuestions.answer","params":{"session":"s-42","callId":"c1","answers":[{"id":"db","selected":["SQLite"]}]}}`},
	{"settle", `{"type":"settle","id":"R0Kd9SWv2mHbLq7yXcT4aa","value":{"answers":[{"id":"db","selected":["SQLite"]},{"id":"go","selected":["Yes"],"custom":"but test it first"}]}}`},
	{"close", `{"type":"close","id":"s3"}`},
}

// BenchmarkReadFrame measures what the connection does with a Client
// frame before its handler: parse it, its metrics label and its pace.
func BenchmarkReadFrame(b *testing.B) {
	for _, f := range benchFrames {
		b.Run(f.name, func(b *testing.B) {
			data := []byte(f.data)
			b.ReportAllocs()
			for b.Loop() {
				fr, err := parseFrame(data)
				if err != nil {
					b.Fatal(err)
				}
				benchLabel, benchReleases = fr.label(), fr.spec.pace == releases
			}
		})
	}
}

var (
	benchLabel    string
	benchReleases bool
)
