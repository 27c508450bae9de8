package queue

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// FuzzDecodeResult: what the hand decoder decodes is what encoding/json
// decodes, field for field; what it declines, encoding/json decides.
func FuzzDecodeResult(f *testing.F) {
	code, zero := 3, 0
	at := time.Date(2026, 11, 25, 13, 37, 11, 123456000, time.UTC)
	for _, r := range []Result{
		{Version: 1, ID: "01M89GBA6BDB7YV9HNE8Z059N9", Status: StatusDone, Decision: Allow, DecidedBy: ByPolicy, ExitCode: &zero,
			StartedAt: at, FinishedAt: at.Add(2 * time.Millisecond), DurationMS: 2, OutputTail: "ok\n\x1b[31mred\x1b[0m \u2028 <&>",
			Verdict: &Verdict{Action: ActionAllow, Category: "read_only", Risk: "low", Reasons: []string{"ls lists files"}, Profile: "read_only"},
			Sandbox: "read_only", Log: "/run/user/1000/sluice/spool/out/01M89GBA6BDB7YV9HNE8Z059N9.log", OutputBytes: 1234},
		{Version: 1, ID: "A1", Status: StatusDenied, Decision: Deny, DecidedBy: ByHuman, Reason: "denied by \"alice\" \\ in the console",
			Verdict: &Verdict{Action: ActionDeny, Reasons: []string{}}},
		{Version: 1, ID: "A2", Status: StatusTimeout, ExitCode: &code, Command: "go test ./... 2>&1 | tail -n 20",
			ChangedFiles: []FileChange{{Path: "/home/me/p/a.go", Change: "changed"}, {Path: "/home/me/p/b é.go", Change: "created"}},
			Checkpoint:   &Checkpoint{Roots: []string{"/home/me/p"}}, StartedAt: at.In(time.FixedZone("x", 3600))},
		{Version: 1, ID: "A3", Status: StatusExpired, Checkpoint: &Checkpoint{Error: "not in a git project"}, ChangedFiles: []FileChange{}},
		{Version: 1, ID: "A4", Status: StatusDone, Verdict: &Verdict{Action: ActionAsk, Category: "networked", Profile: "networked",
			Hosts: []string{"registry.npmjs.org", "example.com:8443", "10.0.0.0/8", "[::1]:443"}}},
	} {
		line, err := marshalLine(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(line)
	}
	for _, s := range []string{
		`{"version":1,"id":"A1","status":"done","status":"denied"}`,
		`{"version":1,"id":"A1","Status":"done"}`,
		`{"version":1,"id":"A1","status":"done","verdict":null,"exit_code":1e0}`,
		`{"version":1,"id":"A1","status":"d\ud83d\ude00ne","reason":"\u00e9\/\b"}`,
		`{"version":1,"id":"A1","status":"done","started_at":"2026-11-25T13:37:11\u002e5Z"}`,
		"{\"version\":1,\"id\":\"A1\",\"status\":\"\xff\"}",
		`{"version":01,"id":"A1","status":"done"} trailing`,
		`{"version":-0,"id":"A1","status":"done","exit_code":-1,"duration_ms":9223372036854775807}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, ok := decodeResultFast(data)
		if !ok {
			return
		}
		var want Result
		if err := json.NewDecoder(bytes.NewReader(data)).Decode(&want); err != nil {
			t.Fatalf("decoded what encoding/json refuses (%v): %q", err, data)
		}
		if !reflect.DeepEqual(*got, want) {
			t.Fatalf("decoded differently from encoding/json:\n got %+v\nwant %+v\n%q", *got, want, data)
		}
	})
}

// TestDecodeResultFastPath: the results the engine writes take the fast
// path (and so cost no reflection in a writer's process).
func TestDecodeResultFastPath(t *testing.T) {
	zero := 0
	r := Result{Version: 1, ID: "01M89GBA6BDB7YV9HNE8Z059N9", Status: StatusDone, Decision: Allow, DecidedBy: ByPolicy, ExitCode: &zero,
		StartedAt: time.Now().UTC(), FinishedAt: time.Now().UTC(), OutputTail: "hi\n", Sandbox: "read_only",
		Verdict: &Verdict{Action: ActionAllow, Category: "read_only", Risk: "low", Reasons: []string{"echo prints"}, Profile: "read_only"}}
	networked := r
	networked.Verdict = &Verdict{Action: ActionAllow, Category: "networked", Risk: "medium", Profile: "networked",
		Hosts: []string{"registry.npmjs.org", "example.com:8443"}, HostsBy: map[string]string{"registry.npmjs.org": "knowledge: npm"}}
	for _, r := range []Result{r, networked} {
		line, err := marshalLine(r)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := decodeResultFast(line)
		if !ok {
			t.Fatalf("a result the engine writes took the slow path: %s", line)
		}
		if !reflect.DeepEqual(got.Verdict.Hosts, r.Verdict.Hosts) {
			t.Fatalf("hosts decoded as %q, want %q", got.Verdict.Hosts, r.Verdict.Hosts)
		}
	}
}
