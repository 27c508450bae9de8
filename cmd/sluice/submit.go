package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/sluice-dev/sluice/internal/cli"
	"github.com/sluice-dev/sluice/queue"
)

const submitHelp = `Queue one request of any kind from its JSON on stdin, as docs/protocol.md
(section 3, "Request") in sluice's repository describes. sluice fills in what
a writer may leave out: version, id (a new ULID), created_at, and cwd (the
current directory). It prints the id, or with --wait the result JSON once a
decision (and, in execute mode, the run) is done.

Fields by kind (all kinds also take mode, cwd, timeout_s, env, agent,
session, note, expires_at):
  exec    command      a shell line, run with bash -c (else /bin/sh -c)
  write   path         the file to write (relative to cwd)
          content      its whole new content
  edit    path         the file to change
          old_string   the text to replace; must occur in the file
          new_string   what replaces it
          replace_all  true: every occurrence (else exactly one must match)
  patch   diff         a unified diff against files under cwd
  tool    tool, input  any other tool of an agent and its arguments (a JSON
                       object); decide mode only
mode is "execute" (sluice runs or applies it on approval; the default) or
"decide" (sluice only records and returns the decision).

Examples:
  echo '{"kind":"exec","command":"make test","note":"after the fix"}' | sluice submit --wait
  echo '{"kind":"write","path":"notes.txt","content":"hello\n"}' | sluice submit --wait
  echo '{"kind":"edit","path":"main.go","old_string":"v1","new_string":"v2"}' | sluice submit

Exit codes: 0 submitted (or, with --wait, a result came back; read its
status), 1 the request was refused, the spool is unusable, or (--wait) a
result says the request was allowed or ran and the audit log does not hold
the decision (it is not printed), 2 usage.
`

func cmdSubmit(args []string, std cli.Stdio, g *cli.Globals) int {
	fs := cli.NewFlags("submit", "[--wait] < request.json", submitHelp, std, g).Unused("config")
	wait := fs.Bool("wait", false, "wait for the result and print it as JSON")
	pos, code, ok := fs.ParseArgs(args, true)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return cli.UsageErr(std, "submit", "takes the request on stdin, not as arguments")
	}
	data, err := io.ReadAll(io.LimitReader(std.In, queue.MaxRequestSize+1))
	if err != nil {
		fmt.Fprintf(std.Err, "sluice submit: read stdin: %v\n", err)
		return cli.ExitFail
	}
	if len(bytes.TrimSpace(data)) == 0 {
		fmt.Fprintln(std.Err, "sluice submit: no request on stdin; pipe in its JSON (see 'sluice submit --help')")
		return cli.ExitFail
	}
	req, err := queue.ParseRequest(data)
	if err != nil {
		fmt.Fprintf(std.Err, "sluice submit: %v\n", err)
		return cli.ExitFail
	}
	if req.Version == 0 {
		req.Version = queue.Version
	}
	if req.ID == "" {
		req.ID = queue.NewID()
	}
	if req.Cwd == "" && req.Kind != queue.KindTool {
		if req.Cwd, err = os.Getwd(); err != nil {
			fmt.Fprintf(std.Err, "sluice submit: no cwd in the request and none here: %v\n", err)
			return cli.ExitFail
		}
	}
	if err := req.Validate(); err != nil {
		fmt.Fprintf(std.Err, "sluice submit: %v\n", err)
		return cli.ExitFail
	}
	sp, err := g.OpenSpool()
	if err != nil {
		return cli.SpoolErr(std, "submit", err)
	}
	if !*wait {
		if err := sp.Submit(req); err != nil {
			return submitErr(std, err)
		}
		fmt.Fprintln(std.Out, req.ID)
		return cli.ExitOK
	}
	ctx := cli.NewSignals().ArmFor(sp.Serving())
	res, err := submitAndWait(ctx, sp, req, nil, std.Err, "submit")
	if err != nil {
		return submitErr(std, err)
	}
	cli.WriteJSON(std.Out, res)
	return cli.ExitOK
}

func submitErr(std cli.Stdio, err error) int {
	if errors.Is(err, queue.ErrExists) {
		fmt.Fprintf(std.Err, "sluice submit: %v; leave \"id\" out to get a fresh one\n", err)
	} else {
		fmt.Fprintf(std.Err, "sluice submit: %s\n", cli.Show(err.Error()))
	}
	return cli.ExitFail
}
