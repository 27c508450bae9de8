package main

import (
	"github.com/sluice-dev/sluice/exec/sandbox"
	"github.com/sluice-dev/sluice/queue"
)

// requireSandbox is the judge under sandbox = "require": where the kernel
// cannot confine a run, nothing runs without a person, so what the policy
// would allow alone asks instead.
type requireSandbox struct{ inner queue.Judge }

// Judge implements queue.Judge.
func (r requireSandbox) Judge(req *queue.Request) queue.Verdict {
	v := r.inner.Judge(req)
	if v.Action != "allow" || req.Kind != queue.KindExec {
		return v
	}
	if _, err := sandbox.Available(); err != nil {
		v.Action = "ask"
		v.Reasons = append(v.Reasons, "sandbox = \"require\" and this machine cannot confine runs: "+err.Error())
	}
	return v
}
