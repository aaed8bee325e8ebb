package adapter

import (
	"reflect"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter/signature"
)

// NativeHook is implemented by output field types that a capable LM can
// produce natively rather than in the text, such as reasoning models'
// reasoning_content. It is detected on the field's type (its zero value).
//
// PlanNative runs once per LM call, before formatting, with the LM's
// declared capabilities and the call's request. Its Plan may drop the field
// from the prompt and set request options on the call's own request copy;
// it never changes shared state. After the call, NativeValue reads the
// field's value from each choice; a dropped field without a native value
// takes its type's zero value.
type NativeHook interface {
	PlanNative(field string, caps Capabilities, req openai.ChatCompletionRequest) Plan
	NativeValue(choice openai.ChatCompletionChoice) (any, bool)
}

// Plan is what a NativeHook decides for one call.
type Plan struct {
	// Drop leaves the field out of the prompt and the parse.
	Drop bool
	// Request, when set, adjusts the call's request (never shared).
	Request func(*openai.ChatCompletionRequest)
}

var nativeHookType = reflect.TypeFor[NativeHook]()

// nativeField is an output handled natively in this call.
type nativeField struct {
	name string
	typ  reflect.Type
	hook NativeHook
}

// planNative applies the outputs' native hooks to req and returns the
// signature the adapter formats and parses (without the dropped fields)
// and the dropped fields.
func planNative(sig *signature.Signature, caps Capabilities, req *openai.ChatCompletionRequest) (*signature.Signature, []nativeField) {
	var dropped []nativeField
	fsig := sig
	for i := range sig.NumOutputs() {
		f := sig.Output(i)
		if f.Type == nil || !f.Type.Implements(nativeHookType) {
			continue
		}
		hook := reflect.Zero(f.Type).Interface().(NativeHook)
		plan := hook.PlanNative(f.Name, caps, *req)
		if plan.Request != nil {
			plan.Request(req)
		}
		if plan.Drop {
			fsig = fsig.Delete(f.Name)
			dropped = append(dropped, nativeField{f.Name, f.Type, hook})
		}
	}
	return fsig, dropped
}

// fillNative sets the dropped fields' values from a choice.
func fillNative(vals Values, dropped []nativeField, choice openai.ChatCompletionChoice) {
	for _, d := range dropped {
		if v, ok := d.hook.NativeValue(choice); ok {
			vals[d.name] = v
		} else {
			vals[d.name] = reflect.Zero(d.typ).Interface()
		}
	}
}
