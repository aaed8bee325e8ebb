package jsonx

import "fmt"

// Budget is the JSON repair one reply may pay for, shared by everything
// that reads the reply: the reply's own JSON and each field's value. The
// repairer's worst case is quadratic in the span (see MaxRepair), so a
// repair of n bytes costs n² units, and a budget holds MaxRepair² units:
// all the repairs of one reply together cost at most one repair of a span
// at the cap, however many fields or spans need one. A reply that needs
// more is refused with ErrBudget rather than read slowly; real replies
// repair a few hundred bytes.
//
// The zero value is a full budget. A Budget is not safe for concurrent
// use: each reply read gets its own.
type Budget struct {
	spent int64
}

// budgetUnits is a Budget's size: one repair at the cap.
const budgetUnits = int64(MaxRepair) * MaxRepair

// ErrBudget: the reply's repair budget is spent.
var ErrBudget = fmt.Errorf("jsonx: the reply's JSON repair budget is spent (the repairs of one reply together may cost what one %d-byte span costs)", MaxRepair)

// spend takes the cost of repairing n bytes from b, reporting false (and
// taking nothing) when b cannot pay it. A nil b pays anything.
func (b *Budget) spend(n int) bool {
	if b == nil {
		return true
	}
	cost := int64(n) * int64(n)
	if b.spent+cost > budgetUnits {
		return false
	}
	b.spent += cost
	return true
}
