package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"syscall"
)

// sluice is several programs, so that what an agent starts once per
// command links nothing it does not use: the console's Charm stack, the
// MCP SDK, NATS and net/http each cost every process that links them a
// fraction of a millisecond or more to start. 'sluice console', 'sluice
// mcp', 'sluice hub' and 'sluice web' run the program beside sluice, and
// so do 'sluice serve', 'sluice approve' and a networked 'sluice sandbox',
// which host networked runs' proxies (net/http).
const (
	EngineProgram  = "sluice-engine"
	ConsoleProgram = "sluice-console"
	MCPProgram     = "sluice-mcp"
	HubProgram     = "sluice-hub"
	WebProgram     = "sluice-web"
)

// what each program is, for the message that says it is missing.
var programWhat = map[string]string{
	EngineProgram:  "the engine (serve, approve, a networked sandbox)",
	ConsoleProgram: "the console",
	MCPProgram:     "the MCP server",
	HubProgram:     "the fleet hub",
	WebProgram:     "the web approver",
}

// MissingError says a program of sluice's is not installed beside the
// running one, and how to install it.
type MissingError struct {
	Program string // sluice-hub
	Self    string // the running program's path
}

func (e *MissingError) Error() string {
	what := programWhat[e.Program]
	if what == "" {
		what = "this command"
	}
	return fmt.Sprintf(`%s is a separate program, %s, not found next to
%s nor on $PATH. Install the programs together:
  go install github.com/sluice-dev/sluice/cmd/...@latest
or, in a checkout, 'make build' (every program into bin/) or 'make install'.`, what, e.Program, e.Self)
}

// Program is the path of program: next to the running one, else on
// $PATH; a *MissingError when neither has it.
func Program(program string) (string, error) {
	self, _ := os.Executable()
	p, err := findBeside(self, program)
	if err != nil {
		return "", &MissingError{Program: program, Self: self}
	}
	return p, nil
}

// findBeside looks for program next to self, then on $PATH.
func findBeside(self, program string) (string, error) {
	if self != "" {
		p := filepath.Join(filepath.Dir(self), program)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	p, err := osexec.LookPath(program)
	if err != nil {
		return "", errors.New(program + " not found")
	}
	return filepath.Abs(p)
}

// Handover replaces this process with program, argv[0] being its path
// and args the rest, with the same environment, stdin and stdout: 'sluice
// NAME' is then the other program in every way. It returns only when it
// could not: the message is said, and the exit code returned (2 for a
// program not installed).
func Handover(std Stdio, name, program string, args []string) int {
	prog, err := Program(program)
	if err != nil {
		fmt.Fprintf(std.Err, "sluice %s: %v\n", name, err)
		return ExitUsage
	}
	err = syscall.Exec(prog, append([]string{prog}, args...), os.Environ())
	fmt.Fprintf(std.Err, "sluice %s: run %s: %v\n", name, prog, err)
	return ExitFail
}

// TakeOver reads what Handover passes a program beside sluice: the global
// flags, then the rest (the command's name and its own flags). A flag
// error is said on std.Err, with what to do, and returned; flag.ErrHelp
// is returned unsaid, for the program to answer.
func TakeOver(args []string, std Stdio) (*Globals, []string, error) {
	g := &Globals{}
	fs := flag.NewFlagSet("sluice", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	g.Register(fs)
	if err := fs.Parse(args); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(std.Err, ExplainFlagErr(fs, nil, err))
		}
		return g, nil, err
	}
	return g, fs.Args(), nil
}
