// Package policy judges what an agent asks to run: it parses a command line
// as the shell would (mvdan.cc/sh), finds every simple command in it —
// through pipelines, lists, subshells, substitutions, function and loop
// bodies, wrappers such as sudo, env, timeout, xargs, find -exec and sh -c —
// classifies each from an embedded knowledge table, applies the user's
// rules, and checks every path written or read against the jail and the
// protected paths.
//
// It never matches a rule against the raw command string, only against the
// argv of one simple command, so "allow git status *" cannot allow
// "git status; rm -rf ~". A line is allowed only if every part is. What it
// cannot see through (a dynamic command name, eval, inline interpreter code)
// is unknown, never allowed by default.
//
// Judge returns the verdict whole: after the rules, it applies the agent
// session's trust windows (TrustStore) and asks the machine (Machine,
// which the caller implements) whether what the policy allows can be
// checkpointed and confined there; what cannot asks a person. Nothing
// downstream edits the verdict.
package policy
