package workbudget

import (
	"errors"
	"testing"
)

func TestChargeFailsOnceEitherPartRunsOut(t *testing.T) {
	stepsErr, bytesErr := errors.New("steps"), errors.New("bytes")
	l := &Limits{Steps: 2, Bytes: 10, StepsErr: stepsErr, BytesErr: bytesErr}
	var b Budget
	b.Reset(l)
	if err := b.Charge(2, 10); err != nil {
		t.Fatalf("charging the whole budget: %v", err)
	}
	if err := b.Charge(1, 0); !errors.Is(err, stepsErr) {
		t.Fatalf("one step too many: %v, want the steps error", err)
	}
	b.Reset(l)
	if err := b.Charge(0, 11); !errors.Is(err, bytesErr) {
		t.Fatalf("one byte too many: %v, want the bytes error", err)
	}
	b.Reset(l)
	if err := b.Charge(1, 1); err != nil {
		t.Fatalf("after Reset: %v", err)
	}
	if steps, bytes := b.Left(); steps != 1 || bytes != 9 {
		t.Fatalf("Left() = %d, %d, want 1, 9", steps, bytes)
	}
}
