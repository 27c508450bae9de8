// Package cli is what sluice's programs share on the command line: the
// global flags (--spool, --config) and the spool they name, a subcommand's
// flag set with its --help text, flag errors said with what to do
// (including "did you mean"), and the exit codes every subcommand uses.
//
// It prints and parses, nothing else: what a command does is its own
// package's, and what it is built from (configuration, engine) is
// internal/app's.
package cli
