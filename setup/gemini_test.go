package setup

import (
	"path/filepath"
	"strings"
	"testing"
)

func geminiFailOpen() []failOpenCase {
	settings := func(extra, matcher, command string, timeout int) setupFn {
		return func(t *testing.T, opt Options) {
			write(t, filepath.Join(opt.Home, ".gemini", "settings.json"),
				`{`+extra+`"hooks":{"BeforeTool":[{"matcher":`+quote(matcher)+`,"hooks":[{"name":"sluice","type":"command","command":`+
					quote(strings.ReplaceAll(command, "SLUICE", opt.Sluice))+`,"timeout":`+itoa(timeout)+`}]}]}}`)
		}
	}
	return []failOpenCase{
		{"gemini: timeout in seconds, not milliseconds", "gemini", settings("", geminiMatcher, "SLUICE hook gemini", 120), "the agent kills the hook after 120ms", FailOpen},
		{"gemini: hooks turned off", "gemini", settings(`"hooksConfig":{"enabled":false},`, geminiMatcher, "SLUICE hook gemini", 120000), "sets hooksConfig.enabled to false", FailOpen},
		{"gemini: sluice's hook disabled by name", "gemini", settings(`"hooksConfig":{"disabled":["sluice"]},`, geminiMatcher, "SLUICE hook gemini", 120000), "hooksConfig.disabled lists", FailOpen},
		{"gemini: matcher leaves out the shell", "gemini", settings("", "write_file|replace", "SLUICE hook gemini", 120000), "leaves out some of run_shell_command", FailOpen},
		{"gemini: relative program", "gemini", settings("", ".*", "sluice hook gemini", 120000), "by a relative name", FailOpen},
	}
}
