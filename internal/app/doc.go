// Package app is what sluice's programs are built from: config.toml
// (parsed strictly, its errors said with the line and what to do, watched
// for changes), the paths sluice keeps its own files in, and App, which
// makes the configuration, the spool and the engine's concrete parts
// (judge, actor, audit log) the first time a command asks for each, so
// that run, hook, sandbox and check build no engine.
//
// It links no console package: the agent-side commands start through
// it, and their start is measured (BENCHMARKS.md).
package app
