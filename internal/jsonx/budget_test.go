package jsonx

import (
	"errors"
	"strings"
	"testing"
)

// TestBudget: a budget pays repairs until their squared sizes add up to
// one repair at the cap; the zero value is full, nil pays anything, and a
// refused repair takes nothing from the budget.
func TestBudget(t *testing.T) {
	half := `{"a": [` + strings.Repeat("1 ", MaxRepair/4-8) + `1]}` // just under half the cap
	var b Budget
	for i := range 4 {
		if _, _, err := b.Repair(half); err != nil {
			t.Fatalf("repair %d of four half-size spans: %v", i+1, err)
		}
	}
	if _, _, err := b.Repair(half); !errors.Is(err, ErrBudget) {
		t.Fatalf("fifth half-size repair: %v, want ErrBudget", err)
	}
	if _, _, err := b.Repair(`{"a": 1,}`); err != nil {
		t.Fatalf("a tiny repair still fits: %v", err)
	}
	if _, _, err := (*Budget)(nil).Repair(half); err != nil {
		t.Fatalf("nil budget: %v", err)
	}
	if _, _, err := new(Budget).Repair(`{"a": 1`); err != nil {
		t.Fatalf("a span that needs no repairer: %v", err)
	}
}
