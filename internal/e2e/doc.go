// Package e2e runs sluice's real programs as a user and an agent would
// ('sluice serve', 'sluice run', 'sluice approve', 'sluice-hub'), built
// once per test process, and checks what each agent was told against
// what really ran: the audit log, a marker each run appends to, the
// processes left in /proc.
//
// Its first piece is the fault suite of issue 28 (faults_test.go): a
// full and a read-only spool, and the engine, 'sluice approve', a box's
// bridge and the hub killed with SIGKILL mid-run. 'go test' runs the
// quick cases; 'make faults' runs them all (-faults.full). The programs
// run are this module's ./cmd/..., or those in $SLUICE_E2E_BIN (built
// from an older commit, to see a case fail there).
//
// The helpers here are Linux only: they mount file systems and read
// /proc.
package e2e
