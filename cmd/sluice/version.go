package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
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

func cmdVersion(args []string, std stdio, g *globals) int {
	fs := newFlags("version", "", "Print the version of sluice and of the Go toolchain that built it\n(sluice --version prints the same).\n", std, g).unused("config", "spool")
	pos, code, ok := fs.parse(args, true)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return usageErr(std, "version", "takes no arguments")
	}
	fmt.Fprintln(std.out, versionString())
	return exitOK
}
