package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/sluice-dev/sluice/internal/cli"
)

// version is set at build time: -ldflags "-X main.version=v1.2.3".
var version = ""

func versionString() string {
	v := version
	if v == "" {
		v = "dev"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
	}
	return fmt.Sprintf("sluice %s (%s %s/%s)", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func cmdVersion(args []string, std cli.Stdio, g *cli.Globals) int {
	fs := cli.NewFlags("version", "", "Print the version of sluice and of the Go toolchain that built it\n(sluice --version prints the same).\n", std, g).Unused("config", "spool")
	pos, code, ok := fs.ParseArgs(args, true)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return cli.UsageErr(std, "version", "takes no arguments")
	}
	fmt.Fprintln(std.Out, versionString())
	return cli.ExitOK
}
