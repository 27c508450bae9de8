package queue

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Version is the protocol version this package reads and writes.
const Version = 1

// MaxRequestSize is the largest request file accepted, in bytes.
const MaxRequestSize = 1 << 20

// MaxTimeout is the longest timeout a request may ask for.
const MaxTimeout = 7 * 24 * time.Hour

// Kind says what a request asks for.
type Kind string

// The request kinds of protocol section 3.
const (
	KindExec  Kind = "exec"  // run Command with /bin/sh -c
	KindWrite Kind = "write" // replace Path with Content
	KindEdit  Kind = "edit"  // replace OldString with NewString in Path
	KindPatch Kind = "patch" // apply the unified Diff under Cwd
	KindTool  Kind = "tool"  // any other tool call; decide mode only
	// KindConnect asks whether a networked run (RunID) may reach Host at
	// Port, a host outside the set its verdict names; decide mode only:
	// nothing runs, the answer is the decision (and Result.Scope).
	KindConnect Kind = "connect"
)

// Mode says what the actor does once a request is allowed.
type Mode string

// The request modes of protocol section 3.
const (
	ModeExecute Mode = "execute" // the actor runs the command or applies the change
	ModeDecide  Mode = "decide"  // the actor only records and returns the decision
)

// Request is one request file, new/<id>.json.
type Request struct {
	Version    int             `json:"version"`
	ID         string          `json:"id"`
	Kind       Kind            `json:"kind"`
	Mode       Mode            `json:"mode,omitempty"`
	Command    string          `json:"command,omitempty"`
	Path       string          `json:"path,omitempty"`
	Content    string          `json:"content,omitempty"`
	OldString  string          `json:"old_string,omitempty"`
	NewString  string          `json:"new_string,omitempty"`
	ReplaceAll bool            `json:"replace_all,omitempty"`
	Diff       string          `json:"diff,omitempty"`
	Tool       string          `json:"tool,omitempty"`
	Input      json.RawMessage `json:"input,omitempty"`
	// Host and Port are what a connect request's run asks to reach: a
	// host name or an IP literal, and a TCP port.
	Host string `json:"host,omitempty"`
	Port int    `json:"port,omitempty"`
	// RunID is the request whose run asks (connect).
	RunID    string            `json:"run_id,omitempty"`
	Cwd      string            `json:"cwd,omitempty"`
	TimeoutS int               `json:"timeout_s,omitempty"`
	Env      map[string]string `json:"env,omitempty"`
	// TTY says whether the command wants a terminal: false runs it with
	// pipes (stdout and stderr merged in order). Absent: a terminal, as
	// before the field existed.
	TTY       *bool     `json:"tty,omitempty"`
	Agent     string    `json:"agent,omitempty"`
	Session   string    `json:"session,omitempty"`
	Note      string    `json:"note,omitempty"`
	CreatedAt time.Time `json:"created_at,omitzero"`
	ExpiresAt time.Time `json:"expires_at,omitzero"`

	// digest is the SHA-256 of the bytes the request was read from; zero
	// for a request built in memory.
	digest [32]byte
	// stamp is the file's as it was read (a watcher tells a replaced
	// file by it).
	stamp fileStamp
}

// Same reports whether r and o were read from byte-identical files: the
// request a person was shown is the request that was claimed, not one an
// agent swapped in between.
func (r *Request) Same(o *Request) bool {
	return r.digest != [32]byte{} && r.digest == o.digest
}

// Digest is the SHA-256, in hex, of the request file's bytes as they were
// read; "" for a request not read from a file. A person deciding from
// elsewhere names it (Approval.ShownDigest): what they saw is what runs.
func (r *Request) Digest() string {
	if r.digest == [32]byte{} {
		return ""
	}
	return hex.EncodeToString(r.digest[:])
}

// InvalidError says why request bytes were refused. Its message is one line
// and is what lands in bad/<id>.why and in the invalid result.
type InvalidError struct {
	Reason string
}

func (e *InvalidError) Error() string { return "invalid request: " + e.Reason }

func invalidf(format string, args ...any) error {
	return &InvalidError{Reason: fmt.Sprintf(format, args...)}
}

// DecodeRequest parses and validates request bytes. name is the file's stem
// (the id the file claims by its name); pass "" to skip that check. Every
// refusal is an *InvalidError.
func DecodeRequest(data []byte, name string) (*Request, error) {
	r, err := ParseRequest(data)
	if err != nil {
		return nil, err
	}
	if err := r.validate(); err != nil {
		return nil, err
	}
	if name != "" && r.ID != name {
		return nil, invalidf("id %q does not match the file name %q", r.ID, name)
	}
	return r, nil
}

// jsonReason shortens encoding/json's messages to the part a writer needs.
func jsonReason(err error) string {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "unexpected end of input (empty or truncated)"
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("field %q must be %s, not %s", te.Field, te.Type, te.Value)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// checkJSONShape rejects what encoding/json would silently accept: trailing
// data, duplicate keys (a reader that keeps the first would show a
// different command from the one that runs), and a top level that is not
// an object.
func checkJSONShape(data []byte) error {
	if shapeOK(data) {
		return nil
	}
	return checkJSONShapeTokens(data)
}

// checkJSONShapeTokens is checkJSONShape by encoding/json's tokens: the
// reference, and what says why a request is refused.
func checkJSONShapeTokens(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return invalidf("not JSON: %s", jsonReason(err))
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return invalidf("not a JSON object")
	}
	if err := checkObject(dec, 1); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return invalidf("trailing data after the JSON object")
	}
	return nil
}

// requestFields are the members of a request, as spelled; built on first
// use (by reflection), not when every sluice process starts.
var requestFields = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	t := reflect.TypeOf(Request{})
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			m[name] = true
		}
	}
	return m
})

// maxDepth bounds nesting in a request (tool inputs are the deepest part).
const maxDepth = 64

func checkObject(dec *json.Decoder, depth int) error {
	if depth > maxDepth {
		return invalidf("JSON nested deeper than %d levels", maxDepth)
	}
	seen := make(map[string]bool)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return invalidf("not JSON: %s", jsonReason(err))
		}
		key, _ := tok.(string)
		if seen[key] {
			return invalidf("duplicate key %q", key)
		}
		seen[key] = true
		// encoding/json matches struct fields without regard to case (and
		// folds U+212A to k): "COMMAND" would fill command, and a second
		// spelling would win over what a case-sensitive reader sees.
		if depth == 1 && !requestFields()[key] {
			for f := range requestFields() {
				if strings.EqualFold(key, f) {
					return invalidf("unknown field %q (the field is spelled %q)", key, f)
				}
			}
		}
		if err := checkValue(dec, depth); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return invalidf("not JSON: %s", jsonReason(err))
	}
	return nil
}

func checkValue(dec *json.Decoder, depth int) error {
	tok, err := dec.Token()
	if err != nil {
		return invalidf("not JSON: %s", jsonReason(err))
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	switch d {
	case '{':
		return checkObject(dec, depth+1)
	case '[':
		if depth+1 > maxDepth {
			return invalidf("JSON nested deeper than %d levels", maxDepth)
		}
		for dec.More() {
			if err := checkValue(dec, depth+1); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return invalidf("not JSON: %s", jsonReason(err))
		}
	}
	return nil
}

// Validate checks a request built in memory (by Submit's callers) against
// the same rules as a request read from the spool.
func (r *Request) Validate() error { return r.validate() }

func (r *Request) validate() error {
	if r.Version == 0 {
		return invalidf("missing required field \"version\"")
	}
	if r.Version != Version {
		return invalidf("unsupported version %d (this sluice reads version %d)", r.Version, Version)
	}
	if r.ID == "" {
		return invalidf("missing required field \"id\"")
	}
	if !ValidID(r.ID) {
		return invalidf("id %q is not 1-64 letters, digits, '_' or '-' starting with a letter or digit", r.ID)
	}
	if r.Kind == "" {
		return invalidf("missing required field \"kind\"")
	}
	switch r.Mode {
	case "", ModeExecute, ModeDecide:
	default:
		return invalidf("mode %q is not \"execute\" or \"decide\"", r.Mode)
	}
	if err := r.validateKind(); err != nil {
		return err
	}
	if r.Cwd != "" {
		if err := checkPath("cwd", r.Cwd); err != nil {
			return err
		}
		if !filepath.IsAbs(r.Cwd) {
			return invalidf("cwd %q is not an absolute path", r.Cwd)
		}
	}
	if r.TimeoutS < 0 {
		return invalidf("timeout_s is negative")
	}
	if r.TimeoutS > int(MaxTimeout/time.Second) {
		return invalidf("timeout_s %d is over the %d second limit", r.TimeoutS, int(MaxTimeout/time.Second))
	}
	for k, v := range r.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return invalidf("env name %q is empty or holds '=' or NUL", k)
		}
		if strings.ContainsRune(v, 0) {
			return invalidf("env %q holds a NUL byte", k)
		}
	}
	if !r.CreatedAt.IsZero() && !r.ExpiresAt.IsZero() && !r.ExpiresAt.After(r.CreatedAt) {
		return invalidf("expires_at is not after created_at")
	}
	return nil
}

func (r *Request) validateKind() error {
	switch r.Kind {
	case KindExec:
		if r.Command == "" {
			return invalidf("kind exec needs a \"command\"")
		}
		if strings.ContainsRune(r.Command, 0) {
			return invalidf("command holds a NUL byte")
		}
	case KindWrite, KindEdit:
		if r.Path == "" {
			return invalidf("kind %s needs a \"path\"", r.Kind)
		}
		if err := checkPath("path", r.Path); err != nil {
			return err
		}
		if r.Kind == KindEdit && r.OldString == "" {
			return invalidf("kind edit needs a non-empty \"old_string\"")
		}
	case KindPatch:
		if r.Diff == "" {
			return invalidf("kind patch needs a \"diff\"")
		}
	case KindTool:
		if r.Tool == "" {
			return invalidf("kind tool needs a \"tool\" name")
		}
		if r.Mode == ModeExecute {
			return invalidf("kind tool is decide mode only")
		}
		if len(r.Input) > 0 && bytes.TrimLeft(r.Input, " \t\r\n")[0] != '{' {
			return invalidf("tool input must be a JSON object")
		}
	case KindConnect:
		return r.validateConnect()
	default:
		return invalidf("unknown kind %q (want one of %s)", r.Kind, strings.Join(kindNames(), ", "))
	}
	return nil
}

// validateConnect checks a connect request: a host that could be a name or
// an IP literal, a port, the run's id; never execute mode.
func (r *Request) validateConnect() error {
	switch {
	case r.Mode == ModeExecute:
		return invalidf("kind connect is decide mode only")
	case r.Host == "":
		return invalidf("kind connect needs a \"host\"")
	case len(r.Host) > 255 || strings.IndexFunc(r.Host, func(c rune) bool {
		return c <= ' ' || c >= 0x7f || strings.ContainsRune("/@?#\\\"'`", c)
	}) >= 0:
		return invalidf("host %q is not a host name or an IP address", r.Host)
	case r.Port < 1 || r.Port > 65535:
		return invalidf("kind connect needs a \"port\" from 1 to 65535")
	case r.RunID != "" && !ValidID(r.RunID):
		return invalidf("run_id %q is not a request id", r.RunID)
	case strings.ContainsRune(r.Command, 0):
		return invalidf("command holds a NUL byte")
	}
	return nil
}

// Target is a connect request's host and port as host:port, with brackets
// around an IPv6 address.
func (r *Request) Target() string {
	host := r.Host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return host + ":" + strconv.Itoa(r.Port)
}

func kindNames() []string {
	return []string{string(KindExec), string(KindWrite), string(KindEdit), string(KindPatch), string(KindTool), string(KindConnect)}
}

func checkPath(field, p string) error {
	if strings.ContainsRune(p, 0) {
		return invalidf("%s holds a NUL byte", field)
	}
	if len(p) > 4096 {
		return invalidf("%s is longer than 4096 bytes", field)
	}
	return nil
}

// EffectiveMode returns the request's mode with the default applied:
// decide for tool requests, execute for everything else.
func (r *Request) EffectiveMode() Mode {
	switch {
	case r.Mode != "":
		return r.Mode
	case r.Kind == KindTool, r.Kind == KindConnect:
		return ModeDecide
	default:
		return ModeExecute
	}
}

// Summary is the one-line description of what the request wants: the
// command line for exec, the path for file changes, the tool name for tool.
// It is raw agent text; pass it through Printable before showing it.
func (r *Request) Summary() string {
	switch r.Kind {
	case KindExec:
		return r.Command
	case KindWrite, KindEdit:
		return string(r.Kind) + " " + r.Path
	case KindPatch:
		return "patch in " + r.Cwd
	case KindTool:
		return "tool " + r.Tool
	case KindConnect:
		if r.Command != "" {
			return r.Command + " wants " + r.Target()
		}
		return "connect " + r.Target()
	}
	return string(r.Kind)
}

// WantsTTY reports whether the command runs under a terminal.
func (r *Request) WantsTTY() bool { return r.TTY == nil || *r.TTY }

// Expired reports whether the request's expires_at has passed at now.
func (r *Request) Expired(now time.Time) bool {
	return !r.ExpiresAt.IsZero() && !now.Before(r.ExpiresAt)
}

// ParseRequest decodes request JSON as strictly as DecodeRequest (size,
// UTF-8, shape, unknown fields) but does not validate it, so a writer can
// fill in defaults first. Refusals are *InvalidError.
func ParseRequest(data []byte) (*Request, error) {
	if len(data) > MaxRequestSize {
		return nil, invalidf("request is %d bytes, over the %d byte limit", len(data), MaxRequestSize)
	}
	if !utf8.Valid(data) {
		return nil, invalidf("not valid UTF-8")
	}
	if err := checkJSONShape(data); err != nil {
		return nil, err
	}
	var r Request
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, invalidf("not a request object: %s%s", jsonReason(err), fieldHint(err))
	}
	return &r, nil
}

// fieldHint suggests the field a writer probably meant.
func fieldHint(err error) string {
	for wrong, right := range map[string]string{
		`"timeout"`: "timeout_s", `"cmd"`: "command", `"file_path"`: "path", `"content_diff"`: "diff",
		`"working_dir"`: "cwd", `"workdir"`: "cwd", `"old"`: "old_string", `"new"`: "new_string",
		`"args"`: "input", `"tool_input"`: "input", `"tool_name"`: "tool", `"expires"`: "expires_at",
	} {
		if strings.HasSuffix(err.Error(), "unknown field "+wrong) {
			return fmt.Sprintf(" (did you mean %q?)", right)
		}
	}
	return ""
}
