//go:build linux

package sandbox_test

import (
	"net/http"
	"os"
	osexec "os/exec"

	"github.com/sluice-dev/sluice/exec/sandbox"
)

// A networked run that reaches only its proxy: the caller serves its
// proxy on the confinement's listener, names it in the run's environment
// and says in the sandbox line how the run is held to it.
func ExampleConfinement_ProxyListener() {
	c, err := sandbox.Prepare(sandbox.Spec{Profile: sandbox.Networked, Proxy: true, Box: sandbox.BoxPath(),
		Roots: []string{"/home/me/project"}, TmpDir: "/tmp/run-1"})
	if err != nil {
		return // not confined: the caller's decision
	}
	defer c.Close() // and the listener with it

	// The engine's proxy in place of this one.
	proxy := &http.Server{Handler: http.NotFoundHandler()}
	go func() { _ = proxy.Serve(c.ProxyListener()) }()
	defer proxy.Close()

	cmd := osexec.Command("npm", "install")
	cmd.Env = sandbox.ProxyEnv(os.Environ(), c.ProxyURL())
	os.Stderr.WriteString("sandbox: networked, " + c.Network() + "\n")
	if err := sandbox.Start(cmd, c, nil); err == nil {
		_ = cmd.Wait()
	}
}
