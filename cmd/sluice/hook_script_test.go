package main

import (
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/policy"
	"github.com/sluice-dev/sluice/queue"
)

// fixtureRoot is the project directory the hook fixtures were recorded
// in; "fixture" moves them into the script's $WORK.
const fixtureRoot = "/home/dev/src/shop"

// cmdFixture implements "fixture NAME...": copy testdata/hooks/NAME to
// $WORK/NAME with fixtureRoot replaced by $WORK/shop.
func cmdFixture(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: fixture NAME...")
	}
	for _, name := range args {
		data, err := os.ReadFile(filepath.Join("..", "..", "hook", "testdata", "hooks", name))
		ts.Check(err)
		data = []byte(strings.ReplaceAll(string(data), fixtureRoot, filepath.Join(ts.Getenv("WORK"), "shop")))
		dst := ts.MkAbs(name)
		ts.Check(os.MkdirAll(filepath.Dir(dst), 0o755))
		ts.Check(os.WriteFile(dst, data, 0o644))
	}
}

// cmdWaitServing implements "waitserving": wait until a console or sluice
// serve holds the spool's serving lock.
func cmdWaitServing(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) > 0 {
		ts.Fatalf("usage: waitserving")
	}
	sp := openSpool(ts)
	for deadline := time.Now().Add(10 * time.Second); !sp.Serving(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			ts.Fatalf("waitserving: nobody serves %s after 10s", sp.Dir())
		}
	}
}

// cmdAnswer implements "answer [-reason TEXT] [-command TEXT] allow|deny":
// the console stand-in. It waits for one pending request ($ID) and
// approves or denies it as a person pressing a key in the console does
// (queue.Engine ApproveAs / Deny, judged by the embedded default policy,
// recorded in $SLUICE_AUDIT); -command approves an edited command.
func cmdAnswer(ts *testscript.TestScript, neg bool, args []string) {
	fs := flag.NewFlagSet("answer", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	reason := fs.String("reason", "", "the person's reason for a denial")
	command := fs.String("command", "", "the command as the person edited it")
	if neg || fs.Parse(args) != nil || fs.NArg() != 1 || (fs.Arg(0) != "allow" && fs.Arg(0) != "deny") {
		ts.Fatalf("usage: answer [-reason TEXT] [-command TEXT] allow|deny")
	}
	cmdWaitPending(ts, false, nil)
	id := ts.Getenv("ID")
	sp := openSpool(ts)
	log, err := audit.Open(ts.Getenv("SLUICE_AUDIT"))
	ts.Check(err)
	defer log.Close()
	sp.Recorder = log
	judge := &policy.Judge{Options: policy.Options{Home: ts.Getenv("HOME"),
		Protect: []string{sp.Dir(), ts.Getenv("SLUICE_AUDIT")}}}
	eng := &queue.Engine{Spool: sp, Judge: judge, Recorder: log}
	if fs.Arg(0) == "allow" {
		_, err = eng.ApproveAs(context.Background(), id, queue.Approval{Actor: "tester", Command: *command})
	} else {
		_, err = eng.Deny(id, "tester", *reason)
	}
	ts.Check(err)
}
