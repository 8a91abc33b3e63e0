package waitfor

import (
	"errors"
	"testing"
)

func TestUntilReturnsOnceTrue(t *testing.T) {
	n := 0
	if err := Until(10*Poll*100, func() error {
		if n++; n < 3 {
			return errors.New("not yet")
		}
		return nil
	}); err != nil || n != 3 {
		t.Fatalf("Until = %v after %d asks, want nil after 3", err, n)
	}
}

func TestUntilGivesUpWithTheLastError(t *testing.T) {
	want := errors.New("never")
	if err := Until(0, func() error { return want }); !errors.Is(err, want) {
		t.Fatalf("Until = %v, want %v", err, want)
	}
}
