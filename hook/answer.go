package hook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// editedInput is the hook input's tool_input with its command replaced.
func editedInput(data []byte, command string) json.RawMessage {
	var in hookInput
	var args map[string]json.RawMessage
	if json.Unmarshal(data, &in) != nil || json.Unmarshal(in.ToolInput, &args) != nil || args == nil {
		return nil
	}
	args["command"] = marshalPlain(command)
	return marshalPlain(args)
}

// marshalPlain is json.Marshal without escaping <, > and &, which the
// agents show to people.
func marshalPlain(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return nil
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

// FromResult maps a result to the hook's answer.
func FromResult(res *queue.Result, wait time.Duration, fallback Decision) Answer {
	by := "a person"
	if res.DecidedBy == queue.ByPolicy {
		by = "policy"
	}
	switch {
	case res.Status == queue.StatusDecided && res.Decision == queue.Allow:
		why := "sluice: allowed by " + by
		if res.DecidedBy == queue.ByHuman {
			why = "sluice: approved by a person"
		}
		if v := res.Verdict; v != nil && res.DecidedBy == queue.ByPolicy {
			why += fmt.Sprintf(" (%s, risk %s)", v.Category, v.Risk)
		}
		return Answer{Decision: Allow, Reason: why}
	case (res.Status == queue.StatusDecided || res.Status == queue.StatusDenied) && res.Decision == queue.Deny:
		why := "sluice: denied by " + by
		switch {
		case strings.HasPrefix(res.Reason, "denied by "):
			why = "sluice: " + res.Reason
		case res.Reason != "":
			why += ": " + res.Reason
		}
		return Answer{Decision: Deny, Reason: why}
	case res.Status == queue.StatusExpired:
		return Answer{Decision: fallback, Reason: fmt.Sprintf("sluice: no decision within %s; the request was withdrawn", wait)}
	case res.Status == queue.StatusInvalid:
		return Answer{Decision: fallback, Reason: "sluice: the request was refused as invalid: " + res.Reason}
	case res.Status == queue.StatusStopped:
		return Answer{Decision: Deny, Reason: "sluice: stopped: " + res.Reason}
	case res.Status == queue.StatusInterrupted:
		return Answer{Decision: fallback, Reason: "sluice: the console acting on the request stopped before it decided"}
	}
	why := fmt.Sprintf("sluice: no decision (the request ended %s)", res.Status)
	if res.Reason != "" {
		why += ": " + res.Reason
	}
	return Answer{Decision: fallback, Reason: why}
}
