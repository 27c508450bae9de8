package app

import (
	"fmt"
	"os"
	"strings"

	"github.com/sluice-dev/sluice/exec"
	"github.com/sluice-dev/sluice/exec/sandbox"
	"github.com/sluice-dev/sluice/queue"
)

// ttyName is the path of the controlling terminal's device, if stdin is
// one, so the confined command can open it by name (/dev/stdin, tee
// /dev/stderr).
func TTYName() string {
	for _, f := range []*os.File{os.Stdin, os.Stdout, os.Stderr} {
		if p, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd())); err == nil && strings.HasPrefix(p, "/dev/pts/") {
			return p
		}
	}
	return ""
}

// SandboxProxy starts the proxy of a networked command in box: the
// hosts given and network_allow admitted, a person asked through the
// spool about the rest, naming the request the hook allowed.
func SandboxProxy(box *sandbox.Confinement, words []string, dir string, hosts []string, conf *exec.Confine, spool string) (*exec.RunProxy, error) {
	if box.ProxyListener() == nil {
		return nil, nil
	}
	var ask exec.AskFunc
	if sp, err := queue.Open(spool); err == nil {
		ask = NetworkAsk(sp, "")
	}
	run := exec.Connect{RunID: os.Getenv(exec.RequestIDVar), Command: strings.Join(words, " "), Cwd: dir}
	if len(words) == 3 && words[1] == "-c" {
		run.Command = words[2] // the agent's line, as the hook wrapped it
	}
	if !queue.ValidID(run.RunID) {
		run.RunID = ""
	}
	return exec.StartProxy(box, run, hosts, conf, ask)
}
