// Package e2e runs sluice's real programs as a user and an agent would
// ('sluice serve', 'sluice run', 'sluice approve', 'sluice-hub'), built
// once per test process, and checks what each agent was told against
// what really ran: the audit log, a marker each run appends to, the
// processes left in /proc.
//
// It is the one harness of the end-to-end suites: the programs built once
// (Programs), an engine started, killed and waited for (Launch,
// LaunchServe, Proc), a scripted person (Person), its own audit reader
// (ReadAudit, AuditTail), and the checkers as functions over a spool and
// a log (CheckOnce, CheckChain, CheckTold, CheckHub), each with a test
// that hands it a broken run. On it stand the fault suite of issue 28
// (faults_linux_test.go: a full and a read-only spool, and the engine,
// 'sluice approve', a box's bridge and the hub killed with SIGKILL
// mid-run; 'go test' runs the quick cases, 'make faults' all of them,
// -faults.full), the crash, load and crashhub harnesses (Crash, Load,
// CrashHub; their quick forms run in 'go test'), and the real-agent
// suite (Agents: Claude Code, Codex and Gemini CLI against a scripted
// model; make e2e-agents). scripts/crash, scripts/load,
// scripts/crashhub and scripts/e2eagents are their flags (Main).
//
// The programs run are this module's ./cmd/..., or those in
// $SLUICE_E2E_BIN (built from an older commit, to see a case fail
// there). Most helpers are Unix only, some Linux only: they mount file
// systems and read /proc.
package e2e
