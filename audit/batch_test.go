package audit

import (
	"testing"

	"github.com/sluice-dev/sluice/queue"
)

// RecordAll writes its events as consecutive, chained lines, between the
// lines other appends write.
func TestRecordAllChains(t *testing.T) {
	t.Parallel()
	l := openTestLog(t)
	if _, err := l.Append(testEvent(0)); err != nil {
		t.Fatal(err)
	}
	if err := l.RecordAll([]queue.Event{testEvent(1), testEvent(2)}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(testEvent(3)); err != nil {
		t.Fatal(err)
	}
	res, err := VerifyFile(l.Path())
	if err != nil {
		t.Fatalf("chain broken: %v", err)
	}
	if res.Lines != 4 {
		t.Errorf("%d lines, want 4", res.Lines)
	}
	if err := l.RecordAll([]queue.Event{testEvent(4), {}}); err == nil {
		t.Error("an event without a name was accepted")
	}
}
