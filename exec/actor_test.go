package exec

import (
	"fmt"
	"testing"
)

// A flood of asks from one project looks at its roots once; another
// project is looked at on its own, and the memory of cwds stays bounded.
func TestWarmDueOncePerCwd(t *testing.T) {
	var a Actor
	if !a.warmDue("/src/app") {
		t.Fatal("first ask from a project not warmed")
	}
	for range 100 {
		if a.warmDue("/src/app") {
			t.Fatal("the project's roots looked at again within warmAgain")
		}
	}
	if !a.warmDue("/src/other") {
		t.Fatal("a second project not warmed")
	}
	for i := range 5000 {
		a.warmDue(fmt.Sprintf("/src/p%d", i))
	}
	if n := len(a.warmed); n > 1024 {
		t.Errorf("%d cwds remembered, want at most 1024", n)
	}
}
