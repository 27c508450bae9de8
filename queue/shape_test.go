package queue

import (
	"strings"
	"testing"
)

// FuzzShape: the fast shape check never passes what the token walk
// refuses (duplicate keys at any depth, case-misspelled fields, nesting,
// trailing data, a top level that is not an object).
func FuzzShape(f *testing.F) {
	for _, data := range fixtures(f) {
		f.Add(data)
	}
	for _, s := range []string{
		`{"version":1,"id":"A1","kind":"exec","command":"ls","command":"rm -rf ~"}`,
		`{"version":1,"id":"A1","kind":"exec","Command":"rm -rf ~"}`,
		`{"version":1,"id":"A1","kind":"exec","\u0063ommand":"rm -rf ~","command":"ls"}`,
		`{"version":1,"id":"A1","kind":"tool","input":{"a":{"b":1,"b":2}}}`,
		`{"version":1,"id":"A1","kind":"tool","input":[{"x":1},{"x":1,"x":2}]}`,
		`{"version":1,"id":"A1","kind":"exec","env":{"A":"1","A":"2"}}`,
		`{"version":1,"id":"A1","kind":"exec","command":"echo \"}\" '{' \\\" ]"}`,
		`{"version":1,"id":"A1","kind":"exec","command":"ls"} {}`,
		`[{"version":1}]`,
		`{"version":1,"id":"A1","kind":"exec","KInd":"exec"}`,
		`{"version":1,"id":"A1","kind":"tool","input":` + strings.Repeat(`{"a":`, 70) + `1` + strings.Repeat(`}`, 70) + `}`,
		`{"version":1,"id":"A1","kind":"tool","input":` + strings.Repeat(`[`, 62) + strings.Repeat(`]`, 62) + `}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if shapeOK(data) {
			if err := checkJSONShapeTokens(data); err != nil {
				t.Fatalf("fast check passed what the token walk refuses: %v\n%q", err, data)
			}
		}
	})
}

// TestShapeFastPath: the requests agents write take the fast path.
func TestShapeFastPath(t *testing.T) {
	n := 0
	for name, data := range fixtures(t) {
		if checkJSONShapeTokens(data) != nil {
			continue // a fixture of a bad request
		}
		n++
		if !shapeOK(data) && !strings.Contains(string(data), `\u`) {
			t.Errorf("%s: a good request took the slow path", name)
		}
	}
	if n == 0 {
		t.Fatal("no good fixtures")
	}
}

// BenchmarkDecodeRequest: what the engine spends reading one request,
// with the fast shape check and with the token walk only.
func BenchmarkDecodeRequest(b *testing.B) {
	data := fixtures(b)["exec-claude-bash.json"]
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodeRequest(data, ""); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("tokens", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := checkJSONShapeTokens(data); err != nil {
				b.Fatal(err)
			}
			if _, err := ParseRequest(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}
