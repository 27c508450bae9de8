package policy

// testMachine answers for a machine as a test sets it.
type testMachine struct {
	mode         SandboxMode
	noConfine    error
	noCheckpoint string
}

func (m testMachine) Sandbox() SandboxMode     { return m.mode }
func (m testMachine) CannotConfine() error     { return m.noConfine }
func (m testMachine) CannotCheckpoint() string { return m.noCheckpoint }
