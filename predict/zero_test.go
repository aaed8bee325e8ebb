package predict_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
)

// zeroCall is one method called on a nil or zero module: the error it
// returned (nil for a method without one) and whether it has one.
type zeroCall func() (err error, returnsErr bool)

// methodsOf lists the exported methods of T's method set.
func methodsOf[T any]() []string {
	t := reflect.TypeFor[T]()
	names := make([]string, t.NumMethod())
	for i := range names {
		names[i] = t.Method(i).Name
	}
	slices.Sort(names)
	return names
}

// TestZeroModules: every method of every module type, called on a nil
// pointer or a zero value, returns an error that says so (ErrZeroModule),
// or nothing for the accessors, and never panics nor sends a request. The
// table covers each type's whole method set: a method added later fails
// this test until it is listed here.
func TestZeroModules(t *testing.T) {
	srv := lmtest.NewServer(lmtest.Text("[[ ## answer ## ]]\nx\n\n[[ ## completed ## ]]"))
	defer srv.Close()
	lm := srv.Client()
	ctx := context.Background()
	prog, err := predict.ReadProgram("testdata/program.json")
	require.NoError(t, err)
	in := adapter.Values{"question": "q"}
	q := Question{"q"}

	modules := map[string]*predict.Module{"nil *Module": nil, "zero Module": {}}
	predicts := map[string]*predict.Predict[Question, Answer]{"nil *Predict": nil, "zero Predict": {}}
	cots := map[string]*predict.ChainOfThought[Question, Answer]{"nil *ChainOfThought": nil, "zero ChainOfThought": {}}

	check := func(t *testing.T, recv string, want []string, table map[string]zeroCall) {
		got := make([]string, 0, len(table))
		for name := range table {
			got = append(got, name)
		}
		slices.Sort(got)
		require.Equal(t, want, got, "%s: every method is in the table", recv)
		for name, call := range table {
			var err error
			var returnsErr bool
			require.NotPanics(t, func() { err, returnsErr = call() }, "%s.%s", recv, name)
			if returnsErr {
				assert.ErrorIs(t, err, predict.ErrZeroModule, "%s.%s", recv, name)
			}
		}
	}
	noErr := func(f func()) zeroCall { return func() (error, bool) { f(); return nil, false } }
	withErr := func(f func() error) zeroCall { return func() (error, bool) { return f(), true } }

	for recv, m := range modules {
		check(t, recv, methodsOf[*predict.Module](), map[string]zeroCall{
			"Signature": noErr(func() { assert.Nil(t, m.Signature()) }),
			"Demos":     noErr(func() { assert.Nil(t, m.Demos()) }),
			"Ignored":   noErr(func() { assert.Nil(t, m.Ignored()) }),
			"Call":      withErr(func() error { _, err := m.Call(ctx, lm, in); return err }),
			"Prepare":   withErr(func() error { _, err := m.Prepare(ctx, lm, in); return err }),
			"Stream":    withErr(func() error { return lastErr(m.Stream(ctx, lm, in)) }),
			"Load": withErr(func() error {
				l, err := m.Load(prog, "generate_answer.predict")
				assert.Nil(t, l)
				return err
			}),
		})
	}
	for recv, p := range predicts {
		check(t, recv, methodsOf[*predict.Predict[Question, Answer]](), map[string]zeroCall{
			"Module":    noErr(func() { assert.Nil(t, p.Module()) }),
			"Signature": noErr(func() { assert.Nil(t, p.Signature()) }),
			"WithDemos": withErr(func() error { _, err := p.WithDemos(predict.Demo[Question, Answer]{}); return err }),
			"Call":      withErr(func() error { _, _, err := p.Call(ctx, lm, q); return err }),
			"CallAll":   withErr(func() error { _, _, err := p.CallAll(ctx, lm, q); return err }),
			"Prepare":   withErr(func() error { _, err := p.Prepare(ctx, lm, q); return err }),
			"Stream":    withErr(func() error { return lastErr(p.Stream(ctx, lm, q)) }),
			"Load":      withErr(func() error { _, err := p.Load(prog, "generate_answer.predict"); return err }),
		})
	}
	for recv, c := range cots {
		check(t, recv, methodsOf[*predict.ChainOfThought[Question, Answer]](), map[string]zeroCall{
			"Module":    noErr(func() { assert.Nil(t, c.Module()) }),
			"Signature": noErr(func() { assert.Nil(t, c.Signature()) }),
			"Call":      withErr(func() error { _, _, _, err := c.Call(ctx, lm, q); return err }),
			"Prepare":   withErr(func() error { _, err := c.Prepare(ctx, lm, q); return err }),
			"Stream":    withErr(func() error { return lastErr(c.Stream(ctx, lm, q)) }),
			"Load":      withErr(func() error { _, err := c.Load(prog, "generate_answer.predict"); return err }),
			"Reasoned": withErr(func() error {
				_, err := predict.NewBestOfN(c.Reasoned(), 1, func(context.Context, Question, predict.Reasoned[Answer]) (float64, error) { return 1, nil }, 1)
				return err
			}),
		})
	}
	bests := map[string]*predict.BestOfN[Question, Answer]{"nil *BestOfN": nil, "zero BestOfN": {}}
	for recv, b := range bests {
		check(t, recv, methodsOf[*predict.BestOfN[Question, Answer]](), map[string]zeroCall{
			"Call":    withErr(func() error { _, _, err := b.Call(ctx, lm, q); return err }),
			"Prepare": withErr(func() error { _, err := b.Prepare(ctx, lm, q); return err }),
			"Stream":  withErr(func() error { return lastErr(b.Stream(ctx, lm, q)) }),
		})
	}
	refines := map[string]*predict.Refine[Question, Answer]{"nil *Refine": nil, "zero Refine": {}}
	for recv, r := range refines {
		check(t, recv, methodsOf[*predict.Refine[Question, Answer]](), map[string]zeroCall{
			"Call":    withErr(func() error { _, _, err := r.Call(ctx, lm, q); return err }),
			"Prepare": withErr(func() error { _, err := r.Prepare(ctx, lm, q); return err }),
			"Stream":  withErr(func() error { return lastErr(r.Stream(ctx, lm, q)) }),
		})
	}
	v2s := map[string]*predict.ReActV2{"nil *ReActV2": nil, "zero ReActV2": {}}
	for recv, a := range v2s {
		check(t, recv, methodsOf[*predict.ReActV2](), map[string]zeroCall{
			"Signature": noErr(func() { assert.Nil(t, a.Signature()) }),
			"React":     noErr(func() { assert.Nil(t, a.React()) }),
			"Tools":     noErr(func() { assert.Nil(t, a.Tools()) }),
			"Ignored":   noErr(func() { assert.Nil(t, a.Ignored()) }),
			"Call":      withErr(func() error { _, err := a.Call(ctx, lm, in); return err }),
			"Stream":    withErr(func() error { return lastErr(a.Stream(ctx, lm, in)) }),
			"Load":      withErr(func() error { _, err := a.Load(prog); return err }),
			"Prepare":   withErr(func() error { _, err := a.Prepare(ctx, lm, in); return err }),
		})
	}
	agents := map[string]*predict.Agent[Question, Answer]{"nil *Agent": nil, "zero Agent": {}}
	for recv, g := range agents {
		check(t, recv, methodsOf[*predict.Agent[Question, Answer]](), map[string]zeroCall{
			"ReActV2":   noErr(func() { assert.Nil(t, g.ReActV2()) }),
			"Signature": noErr(func() { assert.Nil(t, g.Signature()) }),
			"Tools":     noErr(func() { assert.Nil(t, g.Tools()) }),
			"Call":      withErr(func() error { _, _, err := g.Call(ctx, lm, q); return err }),
			"Stream":    withErr(func() error { return lastErr(g.Stream(ctx, lm, q)) }),
			"Load":      withErr(func() error { _, err := g.Load(prog); return err }),
			"Prepare":   withErr(func() error { _, err := g.Prepare(ctx, lm, q); return err }),
		})
	}
	assert.Empty(t, srv.Requests(), "no request from a zero module")
}

// TestZeroModuleError: the error names the type and how to build one.
func TestZeroModuleError(t *testing.T) {
	var p *predict.Predict[Question, Answer]
	_, _, err := p.Call(context.Background(), nil, Question{})
	require.Error(t, err)
	assert.True(t, errors.Is(err, predict.ErrZeroModule))
	assert.Equal(t, "predict: a nil or zero Predict: build it with predict.New", err.Error())
	var m predict.Module
	_, err = m.Call(context.Background(), nil, nil)
	assert.Equal(t, "predict: a nil or zero Module: build it with predict.NewModule or predict.NewChainOfThoughtModule", fmt.Sprint(err))
}

// TestNilSignatureModule: a module built over a nil signature is not a
// zero module, but none of its methods panics either: each that returns
// an error says the signature is nil.
func TestNilSignatureModule(t *testing.T) {
	srv := lmtest.NewServer()
	defer srv.Close()
	prog, err := predict.ReadProgram("testdata/program.json")
	require.NoError(t, err)
	m := predict.NewModule(nil)
	require.NotPanics(t, func() {
		assert.Nil(t, m.Signature())
		_, err := m.Call(context.Background(), srv.Client(), adapter.Values{"question": "q"})
		assert.ErrorContains(t, err, "nil")
		assert.ErrorContains(t, lastErr(m.Stream(context.Background(), srv.Client(), adapter.Values{"question": "q"})), "nil")
		_, err = m.Prepare(context.Background(), srv.Client(), adapter.Values{"question": "q"})
		assert.ErrorContains(t, err, "nil")
		_, err = m.Load(prog, "generate_answer.predict")
		assert.ErrorContains(t, err, "nil signature")
	})
	assert.Empty(t, srv.Requests())
}
