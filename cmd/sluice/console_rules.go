package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/sluice-dev/sluice/policy"
	"github.com/sluice-dev/sluice/queue"
)

// matchCounter counts the exec requests in the audit log (their queued
// lines) that a proposed command rule would have matched.
func matchCounter(j *policy.Judge, auditFile string) func(pattern string) (int, error) {
	return func(pattern string) (int, error) {
		f, err := os.Open(auditFile)
		if errors.Is(err, fs.ErrNotExist) {
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
		defer f.Close()
		matchers := map[string]func(string, policy.Env) bool{} // by cwd's policy
		n := 0
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			var ev queue.Event
			if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Event != queue.EventQueued || ev.Kind != queue.KindExec {
				continue
			}
			match, ok := matchers[ev.Cwd]
			if !ok {
				p, err := j.Policy(ev.Cwd)
				if err != nil {
					return 0, err
				}
				if match, err = p.Matcher(pattern); err != nil {
					return 0, err
				}
				matchers[ev.Cwd] = match
			}
			if match(ev.Command, policy.Env{Cwd: ev.Cwd}) {
				n++
			}
		}
		return n, sc.Err()
	}
}

// ruleAdder appends an allow rule to the user's policy file and makes the
// judge read it again.
func ruleAdder(j *policy.Judge, file string) func(pattern, command string) error {
	return func(pattern, command string) error {
		if file == "" {
			return errors.New("no user policy file (set SLUICE_POLICY or --policy)")
		}
		err := policy.AppendRule(file, policy.NewRule{Action: "allow", Command: pattern,
			Reason: "added in the console", Comment: fmt.Sprintf("approved %q", command)})
		if err != nil {
			return err
		}
		j.Reset()
		return nil
	}
}
