package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/sluice-dev/sluice/exec/sandbox"
	"github.com/sluice-dev/sluice/internal/cli"
	"github.com/sluice-dev/sluice/mcpserver"
	"github.com/sluice-dev/sluice/policy"
	"github.com/sluice-dev/sluice/queue"
)

// TestMain registers the programs the scripts run: sluice itself, run in
// a process of its own as a user would run it, and exits, which checks an
// exit status (testscript alone only tells success from failure).
func TestMain(m *testing.M) {
	progs := map[string]func(){
		"sluice": func() { os.Exit(run(os.Args[1:], cli.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})) },
		"exits":  exitsMain,
		// cmd/sluice-mcp, which 'sluice mcp' finds beside itself.
		"sluice-mcp": func() { os.Exit(mcpserver.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, policy.Roots)) },
		// cmd/sluice-box, which sluice finds beside its executable (this
		// binary): the link made below.
		"sluice-box": func() { sandbox.BoxExit(os.Args[1:]) },
		// cmd/sluice-console, which 'sluice console' hands over to: here
		// it says what it was handed (its own tests are its package's).
		"sluice-console": func() {
			fmt.Println("sluice-console", strings.Join(os.Args[1:], " "))
			os.Exit(0)
		},
		// cmd/sluice-web, likewise.
		"sluice-web": func() {
			fmt.Println("sluice-web", strings.Join(os.Args[1:], " "))
			os.Exit(0)
		},
	}
	if self, err := os.Executable(); err == nil {
		_ = os.Symlink(self, filepath.Join(filepath.Dir(self), "sluice-box"))
	}
	testscript.Main(m, progs)
}

// TestScripts runs testdata/script/*.txtar. Each script gets its own spool
// ($SLUICE_SPOOL, $WORK/spool, created by the first sluice that opens it)
// and these commands besides testscript's own:
//
//	exits CODE PROG [ARGS...] [&]
//	    run PROG and require exit status CODE (a program, so '&' works)
//	waitpending [N]
//	    wait until exactly N requests (default 1) are pending; $ID is the
//	    oldest pending one
//	actor [-output TEXT] [-reason TEXT] [-command TEXT] [-nolog] [-forge] STATUS [EXIT]
//	    answer every pending request with STATUS (done, denied, timeout,
//	    killed, failed, interrupted, decided) and exit code EXIT, writing
//	    out/<id>.log first for the statuses that ran; STATUS hold claims and
//	    keeps the claim; TEXT takes Go escapes (\n, \x1b); -command: a
//	    person edited the command to TEXT before approving it
//	actor stop
//	    stop the actor (it also stops at the end of the script)
//	fixture NAME...
//	    copy the hook input hook/testdata/hooks/NAME to $WORK/NAME, moved from
//	    the project it was recorded in (/home/dev/src/shop) to $WORK/shop
//	waitserving
//	    wait until a console or sluice serve serves the spool
//	answer [-reason TEXT] [-command TEXT] allow|deny
//	    the console stand-in: wait for one pending request ($ID) and
//	    approve (an edited command with -command) or deny it as a person
//	    in the console does
//	mcpcall TOOL ARGS
//	    call TOOL with the JSON object ARGS through a 'sluice mcp' process
//	    started in $WORK; its text goes to stdout, after "error: " for an
//	    error result
func TestScripts(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir:                "testdata/script",
		RequireUniqueNames: true,
		// [runuser]: this user has a /run/user/UID, which the default
		// spool prefers to anything the environment says. [cgroup]: runs
		// get a cgroup here (root, or a delegated one), so what a killed
		// engine's run left running is killed by the next engine.
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "runuser":
				_, err := os.Stat(fmt.Sprintf("/run/user/%d", os.Getuid()))
				return err == nil, nil
			case "cgroup":
				g, err := sandbox.NewCgroup(fmt.Sprintf("%d-probe", os.Getpid()), 0)
				if err != nil {
					return false, nil
				}
				return true, g.Close()
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Setup: func(env *testscript.Env) error {
			env.Setenv("SLUICE_SPOOL", filepath.Join(env.WorkDir, "spool"))
			env.Setenv("XDG_RUNTIME_DIR", "")
			env.Setenv("SLUICE_AUDIT", filepath.Join(env.WorkDir, "audit.jsonl"))
			env.Setenv("XDG_STATE_HOME", filepath.Join(env.WorkDir, "state")) // checkpoints
			// Under -race every process sleeps a second at exit, waiting
			// for reports from other goroutines; sluice's are short-lived.
			if gorace := os.Getenv("GORACE"); !strings.Contains(gorace, "atexit_sleep_ms") {
				env.Setenv("GORACE", strings.TrimSpace(gorace+" atexit_sleep_ms=0"))
			}
			env.Values[stateKey{}] = &scriptState{t: env.T()}
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"waitpending": cmdWaitPending,
			"actor":       cmdActor,
			"auditlog":    cmdAuditLog,
			"waitrunning": cmdWaitRunning,
			"countlines":  cmdCountLines,
			"waitfile":    cmdWaitFile,
			"fixture":     cmdFixture,
			"waitserving": cmdWaitServing,
			"answer":      cmdAnswer,
			"mcpcall":     cmdMCPCall,
		},
	})
}

// exitsMain is the program "exits CODE PROG [ARGS...]": it runs PROG on
// its own stdin, stdout and stderr, passes interrupts on to it, and
// succeeds only if PROG exits with status CODE.
func exitsMain() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: exits CODE PROG [ARGS...]")
		os.Exit(2)
	}
	want, err := strconv.Atoi(os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "exits: bad exit status %q\n", os.Args[1])
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[2], os.Args[3:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "exits: %v\n", err)
		os.Exit(1)
	}
	go func() {
		for sig := range sigs {
			_ = cmd.Process.Signal(sig)
		}
	}()
	_ = cmd.Wait()
	if got := cmd.ProcessState.ExitCode(); got != want {
		fmt.Fprintf(os.Stderr, "exits: %s: %v, want exit status %d\n",
			strings.Join(os.Args[2:], " "), cmd.ProcessState, want)
		os.Exit(1)
	}
	os.Exit(0)
}

// stateKey indexes a script's *scriptState in testscript's Values.
type stateKey struct{}

// scriptState is what the custom commands of one script share.
type scriptState struct {
	t         testscript.T
	stopActor func() []error // nil when no actor runs
}

func stateOf(ts *testscript.TestScript) *scriptState {
	return ts.Value(stateKey{}).(*scriptState)
}

func openSpool(ts *testscript.TestScript) *queue.Spool {
	sp, err := queue.Open(ts.Getenv("SLUICE_SPOOL"))
	ts.Check(err)
	return sp
}

// cmdWaitPending implements "waitpending [N]".
func cmdWaitPending(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) > 1 {
		ts.Fatalf("usage: waitpending [N]")
	}
	want := 1
	if len(args) == 1 {
		n, err := strconv.Atoi(args[0])
		if err != nil || n < 0 {
			ts.Fatalf("waitpending: bad count %q", args[0])
		}
		want = n
	}
	sp := openSpool(ts)
	deadline := time.Now().Add(10 * time.Second)
	for {
		list, err := sp.List()
		ts.Check(err)
		var ids []string
		for _, e := range list {
			if e.State == queue.StatePending {
				ids = append(ids, e.ID)
			}
		}
		if len(ids) == want {
			if want > 0 {
				ts.Setenv("ID", ids[0])
			}
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("waitpending: %d requests pending after 10s (%s), want %d",
				len(ids), strings.Join(ids, ", "), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
